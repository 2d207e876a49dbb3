"""Hostile cells for a framework's Python tool: what the plugins'
tool-sabotage tests (``test_*_tool_sabotage.py`` of the SkyRL, TRL and verl
plugins) share.

Each test drives its framework's own tool calls on a real local backend:
:data:`FIRST` keeps a name, one cell of :data:`HOSTILE` does its damage, then
:data:`AFTER` must work (:func:`check_after`). A hostile cell is the model's
doing, shown to it as the call's output, never an infrastructure failure
(which would leave the sample out of training). The backend is
:func:`backend`, a fixture: the template :data:`CAPPED`, whose process cap
bounds the fork bomb, on loopback TCP and a unix socket (a plugin's
``target`` fixture, :mod:`~.fixtures`, names it either way). A test module
takes it as its own::

    from collimate_rl.testing import tool_sabotage as sab

    backend = sab.backend

Only tests import this module: it needs pytest, which core does not depend on.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from ..local_backend import LocalCollimateBackend

__all__ = ["AFTER", "CAPPED", "FIRST", "HOSTILE", "backend", "check_after"]

#: What a policy under RL pressure might try, to turn its own failure into
#: an infrastructure error (a sample dropped from the loss), by name.
HOSTILE: Final[dict[str, str]] = {
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

#: A template whose process cap bounds the fork bomb.
CAPPED: Final[dict[str, Any]] = {"id": "py-capped", "kind": "python", "limits": {"processes": 64}}

#: The call before the hostile one: a name :data:`AFTER` looks for.
FIRST: Final = "kept = 41"

#: The call after the hostile one: it must print ``2``, then whether the
#: name of :data:`FIRST` is still there.
AFTER: Final = "print(1 + 1)\n'kept' in globals()"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    """A test module's own real local backend, with :data:`CAPPED`, on
    loopback TCP and a unix socket (in a short temporary directory: socket
    paths are limited to about 100 bytes)."""
    with (
        tempfile.TemporaryDirectory(prefix="crl-sab-") as tmp,
        LocalCollimateBackend([CAPPED], socket_path=Path(tmp) / "b.sock") as served,
    ):
        yield served


def check_after(hostile: str, after: str) -> None:
    """The call after a hostile one worked (``after``, its output, starts
    with ``2``); if the interpreter lost :data:`FIRST`'s name, the model was
    told why, in the hostile call's output or this one's."""
    assert after.startswith("2\n"), after
    if after.startswith("2\nFalse"):  # the names went: the model was told why
        assert "[the interpreter was restarted" in hostile + after, (hostile, after)
