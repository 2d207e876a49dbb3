"""TRL's Python tools against hostile cells, on a real local backend (TCP
and unix socket): a call whose code kills every process it can see, removes
the kernel's directory, fork-bombs or stops everything is the model's doing,
returned to it as the call's text, never raised (TRL would count a tool
failure, and ``PythonEnvironment`` would leave the rollout out as an
infrastructure failure), and the next call works."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.trl import PythonEnvironment, python_tool

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


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_call_in_a_rollouts_interpreter(name: str, target: dict[str, str]) -> None:
    env = PythonEnvironment(template=CAPPED["id"], timeout=1, idle_timeout=None, **target)
    env.reset(prompt="use python")
    try:
        env.python("kept = 41")
        hostile = env.python(HOSTILE[name])  # a CollimateError would raise here
        after = env.python("print(1 + 1)\n'kept' in globals()")
        assert after.startswith("2\n"), after
        if after.startswith("2\nFalse"):  # the names went: the model was told why
            assert "[the interpreter was restarted" in hostile + after, (hostile, after)
        assert env.infra_error is None and env.calls == 3
    finally:
        env.reset()


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_call_of_the_plain_tool(name: str, target: dict[str, str]) -> None:
    """The plain tool runs each call in a fresh sandbox: a hostile one
    returns its text like any other, and so does the call after it."""
    tool = python_tool(template=CAPPED["id"], timeout=1, **target)
    assert isinstance(tool(HOSTILE[name]), str)
    assert tool("print(1 + 1)") == "2"
