"""``CollimatePythonTool`` (over verl's own ``BaseTool``, from its wheel:
see ``conftest.py``) against hostile cells, on a real local backend (TCP and
unix socket): a call whose code kills every process it can see, removes the
kernel's directory, fork-bombs or stops everything is the model's doing,
shown to it as the call's text, never flagged as an infrastructure failure
(``INFRA_ERROR_KEY``: the sample would be left out of training), and the
next call of the trajectory works."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from collimate_rl.testing import tool_sabotage as sab
from collimate_rl.verl import INFRA_ERROR_KEY, TOOL_CONFIG

#: this module's backend, with the capped template (``target`` names it)
backend = sab.backend


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


@pytest.mark.parametrize("name", list(sab.HOSTILE))
def test_a_hostile_call_is_the_models_and_the_next_call_works(
    name: str,
    verl_tools: dict[str, Any],
    tools_module: ModuleType,
    target: dict[str, str],
    tmp_path: Path,
) -> None:
    tool = load_tool(verl_tools, tmp_path, template=sab.CAPPED["id"], timeout_seconds=1, **target)
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
            await call(sab.FIRST)
            hostile = await call(sab.HOSTILE[name])
            return hostile, await call(sab.AFTER)
        finally:
            await tool.aclose()

    hostile, after = asyncio.run(main())
    assert INFRA_ERROR_KEY not in agent_data.extra_fields, agent_data.extra_fields
    sab.check_after(hostile, after)
