"""The ``python`` tool of ``collimate_code`` against hostile cells, driven
by skyrl-gym's own ``step`` / ``execute_tool``, on a real local backend (TCP
and unix socket): a call whose code kills every process it can see, removes
the kernel's directory, fork-bombs or stops everything is the model's doing,
shown to it as the call's output, never an infrastructure failure (which
would end the episode and leave the sample out), and the next call works."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collimate_rl.local_backend import LocalCollimateBackend

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
def backend() -> Iterator[LocalCollimateBackend]:
    """This module's backend (``target`` names it), with the capped template."""
    with (
        tempfile.TemporaryDirectory(prefix="crl-sab-") as tmp,
        LocalCollimateBackend([CAPPED], socket_path=Path(tmp) / "b.sock") as served,
    ):
        yield served


def call(code: str) -> str:
    """A completion that calls the tool, as skyrl-gym's envs read one."""
    return f"Let me check.\n<tool><python>{code}</python></tool>"


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_call_is_the_models_and_the_next_call_works(
    name: str, rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    config = {"tools": ["python"], "template_id": CAPPED["id"], "timeout_seconds": 1, **target}
    env = skyrl_gym_module.make(
        "collimate_code", env_config=config, extras=rows.extras(rows.mbpp(1), max_turns=8)
    )
    try:
        env.step(call("kept = 41"))
        hostile = env.step(call(HOSTILE[name]))  # a CollimateError would raise here
        assert (hostile["done"], hostile["metadata"]["infra_error"]) == (False, False), hostile
        after = env.step(call("print(1 + 1)\n'kept' in globals()"))
        text = after["observations"][0]["content"]
        assert text.startswith("2\n"), text
        assert after["metadata"]["infra_error"] is False
        if text.startswith("2\nFalse"):  # the names went: the model was told why
            seen = hostile["observations"][0]["content"] + text
            assert "[the interpreter was restarted" in seen, seen
        assert env.get_metrics()["infra_error"] == 0.0
    finally:
        env.close()
