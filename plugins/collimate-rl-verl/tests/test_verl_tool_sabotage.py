"""``CollimatePythonTool`` (over verl's own ``BaseTool``, from its wheel:
see ``conftest.py``) against hostile cells, on a real local backend (TCP and
unix socket): a call whose code kills every process it can see, removes the
kernel's directory, fork-bombs or stops everything is the model's doing,
shown to it as the call's text, never flagged as an infrastructure failure
(``INFRA_ERROR_KEY``: the sample would be left out of training), and the
next call of the trajectory works."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.verl import INFRA_ERROR_KEY, TOOL_CONFIG

#: what a policy under RL pressure might try, to turn its own failure into
#: an infrastructure error (a sample dropped from the loss)
HOSTILE = {
    "kill_everything": (
        "import os, signal\nfor p in os.listdir('/proc'):\n"
        "    if p.isdigit() and int(p) != os.getpid():\n"
        "        try:\n            os.kill(int(p), signal.SIGKILL)\n"
        "        except OSError:\n            pass\n"
        "os.kill(-1, signal.SIGKILL)"
    ),
    "remove_the_kernels_directory": (
        "import glob, shutil\nfor d in glob.glob('/tmp/.collimate-kernel-*'):\n    shutil.rmtree(d)"
    ),
    "fork_bomb": (
        "import os, time\nwhile True:\n    try:\n        os.fork()\n"
        "    except OSError:\n        time.sleep(0.05)"
    ),
    "stop_everything": (
        "import os, signal\nfor p in os.listdir('/proc'):\n"
        "    if p.isdigit() and int(p) != os.getpid():\n"
        "        try:\n            os.kill(int(p), signal.SIGSTOP)\n"
        "        except OSError:\n            pass\n"
        "os.kill(os.getpid(), signal.SIGSTOP)"
    ),
}
#: a template whose process cap bounds the fork bomb
CAPPED = {"id": "py-capped", "kind": "python", "limits": {"processes": 64}}


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCollimateBackend]:
    """This module's backend (``target`` names it), with the capped template."""
    sock = tmp_path_factory.mktemp("sabotage") / "b.sock"
    with LocalCollimateBackend([CAPPED], socket_path=sock) as served:
        yield served


@pytest.fixture(scope="module")
def tools_module(verl_tools: dict[str, Any]) -> ModuleType:
    """``collimate_rl.verl.tools``, imported over verl's real tool classes."""
    import collimate_rl.verl.tools as module

    assert module.BaseTool is verl_tools["base_tool"].BaseTool
    return module


def load_tool(verl_tools: dict[str, Any], tmp_path: Path, **config: Any) -> Any:
    """The tool as verl's AgentLoopWorker builds it from the shipped YAML,
    with ``config`` keys changed."""
    loaded = yaml.safe_load(TOOL_CONFIG.read_text(encoding="utf-8"))
    loaded["tools"][0]["config"].update(config)
    path = tmp_path / "tools.yaml"
    path.write_text(yaml.safe_dump(loaded), encoding="utf-8")
    registry = verl_tools["tool_registry"]
    (tool,) = registry.load_all_tools(tool_config_path=str(path), function_tool_path=None)
    return tool


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_call_is_the_models_and_the_next_call_works(
    name: str,
    verl_tools: dict[str, Any],
    tools_module: ModuleType,
    target: dict[str, str],
    tmp_path: Path,
) -> None:
    tool = load_tool(verl_tools, tmp_path, template=CAPPED["id"], timeout_seconds=1, **target)
    agent_data = verl_tools["agent_loop"]["AgentData"]([], None, None, None, None, {}, name, {})

    async def call(code: str) -> str:
        """One call as verl's ``ToolAgentLoop._call_tool`` makes it."""
        instance_id, _ = await tool.create(create_kwargs={})
        try:
            response, reward, _ = await tool.execute(
                instance_id, {"code": code}, agent_data=agent_data
            )
            assert reward == 0.0, response  # None: the call was an infra failure
            assert await tool.calc_reward(instance_id, agent_data=agent_data) == 0.0
        finally:
            await tool.release(instance_id)
        return str(response.text)

    async def main() -> tuple[str, str]:
        try:
            await call("kept = 41")
            hostile = await call(HOSTILE[name])
            return hostile, await call("print(1 + 1)\n'kept' in globals()")
        finally:
            await tool.aclose()

    hostile, after = asyncio.run(main())
    assert INFRA_ERROR_KEY not in agent_data.extra_fields, agent_data.extra_fields
    assert after.startswith("2\n"), after
    if after.startswith("2\nFalse"):  # the names went: the model was told why
        assert "[the interpreter was restarted" in hostile + after, (hostile, after)
