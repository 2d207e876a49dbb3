"""How the spawner forks a candidate's process, and what that process
starts from.

A pack's candidates are forked one after another from the spawner, and
every page a forked process writes, or the spawner writes after a fork, is
copied. So the spawner forks the cheapest way that is still a whole Python
process (``_w_raw_fork``), and sets each seed's environment and ``random``
state once, for its candidates to inherit (``_WSeeds``). Shipped with the
worker (``WORKER_PARTS``).
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any


class _WSeeds:
    """What a candidate's process starts from, by the seed of its item
    (hex, or ``-``: the exec's own): ``COLLIMATE_SEED`` in its environment
    and the state of ``random``, as the backend seeds a lone exec.

    The spawner sets the environment itself, once per seed (the candidates
    of a GRPO group share theirs), and each candidate inherits it: set in
    every candidate's process instead, it cost each one about 60 pages
    copied on write (``os.environ`` and the C environment it mirrors).
    After ``os.fork`` ``random`` is re-seeded (its own at-fork hook), so each
    candidate's process sets the state made here (a state made once costs
    it fewer pages than seeding). After a raw fork (``_w_raw_fork``) no hook
    runs: the spawner's own ``random`` holds the state, and each candidate's
    process inherits it as it is."""

    def __init__(self, random: Any, own_state: Any, inherit: bool) -> None:
        self.random = random
        self.own_env = os.environ.get("COLLIMATE_SEED")
        self.own_state = own_state
        self.inherit = inherit
        self.unseeded = False  # (the last seed gave no state: a fresh one each)

    def take(self, seed: bytes) -> Any:
        """Make the spawner's environment and ``random`` what the candidate
        of ``seed`` must find; the ``random`` state its process must set
        (None: nothing to set)."""
        if seed == b"-":
            text, state = self.own_env, self.own_state
        else:
            text = seed.decode("ascii")
            state = self.random.Random(int(text, 16)).getstate()
        if text is None:
            os.environ.pop("COLLIMATE_SEED", None)
        else:
            os.environ["COLLIMATE_SEED"] = text
        self.unseeded = state is None
        if self.inherit and state is not None:
            self.random.setstate(state)
            return None
        return state


#: Modules that register at-fork hooks (``os.register_at_fork``) in the
#: standard library of Python 3.8 to 3.13 (``random``'s is handled by _WSeeds).
_W_HOOKED = ("threading", "logging", "concurrent", "asyncio")


def _w_raw_fork() -> Any:
    """libc's ``fork``, called with the interpreter's lock held, for a
    spawner where it does what ``os.fork`` does (else None).

    ``os.fork`` runs the interpreter's fork handlers in the child: it
    re-initialises the runtime's locks and thread states and runs the
    at-fork hooks; in a candidate's process that cost about 60 pages
    copied on write, a quarter of all it copies. For a process with one
    thread and no hook but ``random``'s, none of it has anything to do: no
    other thread held a lock or has a state to drop. So where the spawner
    is such a process (one task, a GIL, only standard modules and these
    ones, none of ``_W_HOOKED``), its candidates are forked by libc, and
    ``random`` is seeded as ``_WSeeds`` says; anywhere else, by ``os.fork``."""
    if not sys.platform.startswith("linux"):
        return None
    gil = getattr(sys, "_is_gil_enabled", None)
    standard = getattr(sys, "stdlib_module_names", None)
    if (gil is not None and not gil()) or not standard:
        return None
    try:
        if len(os.listdir("/proc/self/task")) != 1:
            return None
    except OSError:
        return None
    ours = ("__main__", "collimate_rl")  # (the twin's preloaded runtime and engine)
    for name in list(sys.modules):
        top = name.partition(".")[0]
        if top in _W_HOOKED or (top not in standard and top not in ours):
            return None
    try:
        import ctypes

        fork = ctypes.PyDLL(None).fork
    except Exception:
        return None
    fork.restype = ctypes.c_int
    fork.argtypes = ()
    return fork
