"""The spawner's fork (``guest/grader/spawning.py``: ``_w_raw_fork``) on its
own, in fresh interpreters of this machine: where libc's ``fork`` stands in
for ``os.fork``, and that a process it forked is a whole Python process;
and the seeds each candidate's process starts from (``_WSeeds``) with
either fork. (End to end, through packs of a real backend:
``test_grading_pack.py``.)

A candidate's process forked by libc skips the interpreter's fork
handlers, so the spawner only does it where they have nothing to do: one
thread, a GIL, standard modules only, none that registers an at-fork hook
but ``random`` (whose state the spawner sets itself).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from collimate_rl.rewards.program import worker_source

# Runs the worker's source (as the twin preloads it: nothing started), then
# ``sys.argv[1]``'s setup, and prints what ``_w_raw_fork`` gave.
PROBE = """
import json, sys
namespace = {"__name__": "__collimate_preload__"}
exec(compile(sys.stdin.read(), "<worker>", "exec"), namespace)
exec(sys.argv[1], namespace)
print(json.dumps(namespace["_w_raw_fork"]() is not None))
"""

# Forks with ``_w_raw_fork``; the child does what a candidate may, and says how it went.
CHILD = """
import json, os, random, sys
namespace = {"__name__": "__collimate_preload__"}
exec(compile(sys.stdin.read(), "<worker>", "exec"), namespace)
fork = namespace["_w_raw_fork"]()
random.seed(1234)
expected = random.Random(1234).random()
parent = os.getpid()
r, w = os.pipe()
pid = fork()
if pid == 0:
    out = {"own pid": os.getpid() != parent, "parent": os.getppid() == parent}
    out["random"] = random.random() == expected  # inherited, not re-seeded
    import threading
    seen = []
    t = threading.Thread(target=lambda: seen.append(threading.get_native_id()))
    t.start(); t.join()
    out["thread"] = len(seen) == 1 and seen[0] != os.getpid()
    out["native_id"] = threading.get_native_id() == os.getpid()
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as ex:
        out["pool"] = sorted(ex.map(lambda x: x * x, range(4))) == [0, 1, 4, 9]
    grand_r, grand_w = os.pipe()
    grand = os.fork()  # (os.fork in the candidate: its hooks run as usual)
    if grand == 0:
        os.write(grand_w, repr(random.random()).encode())
        os._exit(0)
    os.waitpid(grand, 0)
    out["os.fork"] = float(os.read(grand_r, 64)) != random.random()
    os.write(w, json.dumps(out).encode())
    os._exit(0)
os.close(w)
_, status = os.waitpid(pid, 0)
print(json.dumps({"status": status, "child": json.loads(os.read(r, 1 << 16) or b"null")}))
"""


def python(script: str, *args: str) -> object:
    done = subprocess.run(
        [sys.executable, "-S", "-I", "-c", script, *args],
        input=worker_source(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


linux_3_10 = pytest.mark.skipif(
    not sys.platform.startswith("linux") or sys.version_info < (3, 10),
    reason="libc's fork is used on Linux where sys.stdlib_module_names exists (3.10+)",
)


@linux_3_10
def test_a_plain_spawner_forks_with_libc() -> None:
    assert python(PROBE, "pass") is True


@linux_3_10
@pytest.mark.parametrize(
    "setup",
    [
        "import threading",  # (at-fork hooks of its own)
        "import logging",
        "import concurrent.futures.thread",
        "import asyncio",
        "import types; sys.modules['numpy'] = types.ModuleType('numpy')",  # not standard
        "import _thread, time; _thread.start_new_thread(time.sleep, (5,)); time.sleep(0.1)",
    ],
    ids=["threading", "logging", "futures", "asyncio", "not-standard", "two-threads"],
)
def test_a_spawner_with_hooks_modules_or_threads_keeps_os_fork(setup: str) -> None:
    assert python(PROBE, setup) is False


@linux_3_10
def test_a_process_forked_by_libc_is_a_whole_python_process() -> None:
    seen = python(CHILD)
    assert isinstance(seen, dict) and seen["status"] == 0
    assert seen["child"] == {
        "own pid": True,
        "parent": True,
        "random": True,  # the spawner's random state, as it was
        "thread": True,
        "native_id": True,
        "pool": True,
        "os.fork": True,  # a fork of its own is re-seeded by random's hook
    }


@pytest.mark.parametrize("inherit", [False, True], ids=["os.fork", "libc-fork"])
def test_each_seed_sets_the_environment_and_random_state_a_lone_exec_has(
    inherit: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_WSeeds``: after ``os.fork`` the child is handed the state to set
    (``random``'s hook re-seeds it first); after libc's fork the spawner's
    own ``random`` holds it. Either way the state is ``Random(seed)``'s and
    ``COLLIMATE_SEED`` is the seed, or the exec's own for ``-``."""
    import os
    import random
    import types

    from collimate_rl.guest.grader.spawning import _WSeeds

    monkeypatch.setenv("COLLIMATE_SEED", "own")
    set_in_spawner: list[object] = []
    fake = types.SimpleNamespace(Random=random.Random, setstate=set_in_spawner.append)
    own_state = random.Random(7).getstate()
    seeds = _WSeeds(fake, own_state, inherit)
    a, b = "ab" * 32, "cd" * 32
    for seed, env, state in (
        (a, a, random.Random(int(a, 16)).getstate()),
        (b, b, random.Random(int(b, 16)).getstate()),
        ("-", "own", own_state),
        (a, a, random.Random(int(a, 16)).getstate()),
    ):
        given = seeds.take(seed.encode())
        assert os.environ["COLLIMATE_SEED"] == env
        if inherit:
            assert given is None and set_in_spawner.pop() == state
        else:
            assert given == state and not set_in_spawner
    monkeypatch.delenv("COLLIMATE_SEED")
    none = _WSeeds(fake, None, inherit)
    assert none.take(b"-") is None and none.unseeded  # (the child seeds afresh)
    assert "COLLIMATE_SEED" not in os.environ


def test_a_seed_the_spawner_cannot_read_ends_only_its_candidates_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A malformed seed (the SDK sends none: it checks them) fails in
    ``_WSeeds.take``; the spawner turns that into a candidate's process
    that ends at once, as when the child parsed its own seed, and serves
    the next candidate as usual."""
    import time

    from collimate_rl.guest.grader import budget, kinds, remote

    # (the runtime the SDK ships sets this; imported as a package, it is unset)
    monkeypatch.setattr(remote, "_WORKER_SOURCE", worker_source(), raising=False)
    code = compile("def solve(x):\n    return x + 1\n", "c.py", "exec")
    spawner = remote._Spawner([code, code], False, None)
    cfg = {"budget": 20.0, "test_timeout": 5.0, "entry": "solve", "module": "c", "path": "c.py"}
    calls: list[object] = [([1], {}), ([2], {})]
    try:
        assert spawner.broken is None
        bad = kinds._value_results(
            cfg, lambda: spawner.fork(0, "not-hex"), budget._Budget(cfg, time.monotonic()), calls
        )
        assert bad.missing is not None and not bad.checks
        good = kinds._value_results(
            cfg, lambda: spawner.fork(1, "ab" * 32), budget._Budget(cfg, time.monotonic()), calls
        )
        assert good.load is None and good.get(0) == ("ok", 2) and good.get(1) == ("ok", 3)
    finally:
        spawner.close()
