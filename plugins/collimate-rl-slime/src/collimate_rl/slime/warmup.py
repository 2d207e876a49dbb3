"""Building a reward kind's grader program once, off the event loop.

The first grade of each reward kind in a process builds that kind's grader
program (parsing, trimming and compiling core's grader runtime, cached
afterwards): 0.2 to 0.5 s of CPU on a 2-core machine. Done inside
``grade_async`` it would stall slime's rollout loop, and with it every
generation request in flight, once per kind. So the first call that meets
a kind builds its programs (alone and packed, in every form) in one
worker thread while the loop keeps running; concurrent calls wait for that
same build, and later calls find it done (the program of packs that mix
kinds is built with the first). A spec that is not one of core's
built-in graders builds its own program per grade and is left alone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Iterable
from typing import Final

from collimate_rl import RewardSpec, reward_spec_from_ground_truth
from collimate_rl.grading import prepare_grade
from collimate_rl.pipeline.execs import prepare_pack
from collimate_rl.pipeline.plan import Job
from collimate_rl.rewards import GuestReward
from collimate_rl.rewards.program import RUNTIME_FORMS, RuntimeForm, preload_source

__all__ = ["warm"]

_lock = threading.Lock()
_builds: dict[str, concurrent.futures.Future[None]] = {}
_executor: concurrent.futures.ThreadPoolExecutor | None = None
_pid = os.getpid()


#: Two specs of different kinds: a pack that mixes kinds ships the whole
#: runtime (one program for every mix), built once per process.
_MIXED: Final = "<packs of several kinds>"
_MIXED_TRUTHS: Final = ([{"input": [1], "output": 1}], ["assert True"])


def _build(spec: GuestReward | None) -> None:
    """Every program this kind's grades may ship, alone or packed, in each
    form (core caches them); ``None``: the program of mixed packs."""
    if spec is None:
        preload_source()
        mixed = [reward_spec_from_ground_truth(truth) for truth in _MIXED_TRUTHS]
    forms: tuple[RuntimeForm, ...] = RUNTIME_FORMS  # type: ignore[assignment]
    for form in forms:
        if spec is None:
            jobs = [Job(i, "", s, None) for i, s in enumerate(mixed)]
        else:
            prepare_grade(spec, "", seed=None, timeout_seconds=1, form=form)
            jobs = [Job(0, "", spec, None), Job(1, "", spec, None)]
        prepare_pack(jobs, timeout_seconds=1, form=form)


def _start(key: str, spec: GuestReward | None) -> concurrent.futures.Future[None]:
    global _executor, _pid
    with _lock:
        if _pid != os.getpid():  # forked: the parent's worker thread is not here
            _pid, _executor = os.getpid(), None
            _builds.clear()
        build = _builds.get(key)
        if build is None:
            if _executor is None:
                _executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="collimate-slime-build"
                )
            build = _builds[key] = _executor.submit(_build, spec)
        return build


async def warm(specs: Iterable[RewardSpec]) -> None:
    """Return once every kind among ``specs`` has its programs built."""
    wanted: list[tuple[str, GuestReward | None]] = [(_MIXED, None)]
    for spec in specs:
        if isinstance(spec, GuestReward):
            wanted.append((f"{type(spec).__module__}.{type(spec).__qualname__}:{spec.kind}", spec))
    for key, one in wanted:
        build = _builds.get(key)
        if build is None or not build.done() or _pid != os.getpid():
            _start(key, one)
    # Wait until no build is under way, not only this call's: core holds one
    # lock while it compiles a program, and a grade of a kind already built
    # would wait for that lock on the loop.
    while True:
        with _lock:
            pending = [(key, build) for key, build in _builds.items() if not build.done()]
        if not pending:
            return
        for key, build in pending:
            try:
                await asyncio.wrap_future(build)
            except Exception:
                # Not ours to report: the grade builds inline and raises what is wrong.
                with _lock:
                    if _builds.get(key) is build:
                        del _builds[key]
