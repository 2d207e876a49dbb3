"""The grader's entry point: ``main(config, how)``, for one candidate or a pack.

Order matters, and is the same for one candidate and for a pack:

1. the hello frame (no hello: the grader never ran, an infrastructure
   failure);
2. every candidate and every spec's sealed data is read, checked and
   unlinked before any candidate runs (none can read another's, or the
   tests, from disk);
3. the clean spawner starts (a fresh interpreter, :mod:`.spawner`), with
   the candidates' code only;
4. each candidate in turn: its process is forked from the spawner, its
   kind's grader runs (:mod:`.kinds`), its verdict is framed with its own
   nonce. In a pack, the guest is swept between two candidates
   (:mod:`.sweep`). Each candidate's process is confined
   (:mod:`..separation`): it cannot kill or stop the spawner or the grader.
   Should the spawner die all the same, that candidate scores 0.0 and a
   new spawner takes the rest, once what it left is killed and removed.

Once a candidate's process has started, whatever the grader reads from it
and whatever state the guest is in are the candidate's doing: a failure
from then on is the candidate's (0.0), never an infrastructure error,
unless the grader can show otherwise (``_after_the_candidate``,
``code_tests._test_code_failed``).
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031
from __future__ import annotations

import os
import time

from .budget import _MSG, _Abort, _Budget
from .kinds import _property_cases, _read_candidate, _read_sealed
from .remote import _Spawner, _SpawnerGone, _worker_source, twin_pid
from .sweep import _Files, _kill_strays, _not_dedicated
from .wire import _Frame, _mute, _verdict_json

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any, NoReturn


_PRECOMPILE_MAX = 1 << 16  # a bigger candidate compiles in its own process, under its budget

# Verdicts of a pack are written in batches, at most this far apart: each
# write wakes the backend reading the exec's output. Held verdicts die with
# a grader a candidate kills: the SDK grades those candidates again.
_FLUSH_S = 0.25

_RESPAWNS = 4  # new spawners for one pack whose candidates kill theirs


def main(cfg: dict[str, Any], how: str = "source") -> NoReturn:
    """Grade the delivered candidate(s) as ``cfg`` says, write the verdict
    frames, and leave without running any shutdown code. ``how`` says how
    this runtime was loaded (``preloaded`` / ``bytecode`` / ``source``); the
    verdict reports it so the SDK can send less next time."""
    import random

    packed = cfg.get("pack") is not None
    frame = _Frame(cfg["marker"] + cfg["nonce"])
    frame.line("hello")
    state = random.getstate()  # the exec's seeded state, before anything draws
    if packed:
        items, specs = cfg["pack"], cfg["specs"]
    else:
        items = [
            {
                "nonce": cfg["nonce"],
                "path": cfg["path"],
                "size": cfg["size"],
                "crc": cfg["crc"],
                "seed": None,
                "spec": 0,
            }
        ]
        specs = [cfg]
    sealed = [_read_sealed(spec) for spec in specs]
    codes = [_precompiled(_read_candidate(item), item["path"]) for item in items]
    _mute()
    _stay_on_turn_cpu()  # (the spawner and every candidate inherit it)
    files = None
    if packed:
        twin = twin_pid()
        why = _not_dedicated(() if twin is None else (twin,))
        if why is not None:
            frame.line("unpacked cannot pack: " + why)
            frame._exit(0)
        files = _Files()
    spawner = _start_spawner(codes, packed, state)
    if spawner.broken is not None:
        if packed:
            frame.line("unpacked " + spawner.broken)
            frame._exit(0)
        frame.finish({"reward": 0.0, "environment_error": spawner.broken})
    drawn: dict[Any, Any] = {}
    flushed = time.monotonic()
    respawns = 0
    for index, item in enumerate(items):
        spec = specs[item["spec"]]
        start = time.monotonic()
        budget = _Budget(spec, start)
        verdict, spawner_gone = _grade_item(
            spec, sealed[item["spec"]], codes[index], item, index, spawner, budget, drawn, state
        )
        left_behind = None
        if spawner_gone:
            spawner.close()
            respawns += 1
            if respawns > _RESPAWNS or index == len(items) - 1:
                left_behind = "candidates keep killing or stopping the spawner"
            else:
                spawner, left_behind = _respawn(spawner, codes, state, files)
        elif packed:
            left_behind = spawner.left_behind or files.sweep()  # type: ignore[union-attr]
            if left_behind is None and budget.left() <= 0:
                # behind a looper, each of the rest would wait up to one budget
                left_behind = "a candidate ran out of its time budget"
        verdict["runtime"] = how
        if not packed:
            spawner.close()
            frame.finish(verdict)
        verdict["seed"] = item["seed"]
        verdict["ms"] = (time.monotonic() - start) * 1000.0
        marker = cfg["marker"] + item["nonce"]
        frame.hold("hello\n" + marker + " " + _verdict_json(verdict), marker)
        if left_behind is not None and index < len(items) - 1:
            frame.line("unpacked " + left_behind)
            break
        if time.monotonic() - flushed >= _FLUSH_S:
            frame.flush()
            flushed = time.monotonic()
    spawner.close()
    frame.flush()
    frame._exit(0)


def _start_spawner(codes: list[Any], packed: bool, state: Any) -> _Spawner:
    return _Spawner([c if not isinstance(c, str) else b"" for c in codes], packed, state)


def _respawn(
    gone: _Spawner, codes: list[Any], state: Any, files: Any
) -> tuple[_Spawner, str | None]:
    """A new spawner for the rest of a pack whose spawner is gone, and why
    the pack must stop there instead (None: it goes on).

    The processes the last candidate left were below the old spawner, in
    its Landlock domain, out of the new one's reach: they are killed here,
    and its files removed, before the new spawner starts (else they would
    run, and fill the guest, through the rest of the pack). A spawner that
    will not start again stops this pack only: the guest could pack when
    the pack began, so this is never a ``cannot pack`` (which would turn
    packing off for the whole target because of one candidate)."""
    why = _kill_strays() or (files.sweep() if files is not None else None)
    if why is not None:
        return gone, why
    spawner = _start_spawner(codes, True, state)
    if spawner.broken is None:
        return spawner, None
    spawner.close()
    return spawner, "no new spawner: " + spawner.broken.replace("cannot pack: ", "", 1)


def _grade_item(
    spec: dict[str, Any],
    sealed: Any,
    code: Any,
    item: dict[str, Any],
    index: int,
    spawner: _Spawner,
    budget: _Budget,
    drawn: dict[Any, Any],
    state: Any,
) -> tuple[dict[str, Any], bool]:
    """One candidate's verdict, and whether it killed or stopped the spawner."""
    if isinstance(code, str):
        return {"reward": 0.0, "delivery_error": code}, False
    if isinstance(sealed, str):
        return {"reward": 0.0, "delivery_error": sealed}, False
    cfg = dict(spec, path=item["path"])
    seed = item["seed"]
    rng = None
    cases = None
    if cfg["kind"] == "property":
        key = (item["spec"], seed)
        if key not in drawn:
            try:
                drawn[key] = _property_cases(cfg, sealed, _seeded_rng(seed, state))
            except BaseException as exc:  # a broken reference/generator: the grader's fault
                drawn[key] = exc
        cases = drawn[key]
        if isinstance(cases, BaseException):
            return {"reward": 0.0, "grader_error": _describe(cases)}, False

    forked: list[Any] = []

    def fork() -> Any:
        forked.append(True)
        return spawner.fork(index, seed)

    grader = globals().get("_grade_" + cfg["kind"])  # looked up by name: see program.py
    if grader is None:
        return {"reward": 0.0, "grader_error": "unknown kind %r" % cfg["kind"]}, False
    try:
        return grader(cfg, sealed, fork, budget, rng, cases), False
    except _SpawnerGone:
        return {
            "reward": 0.0,
            "passed": 0,
            "total": 0,
            "load_error": "the candidate killed or stopped the process that started it",
        }, True
    except _Abort:
        return {"reward": 0.0, "timeout": True, "load_error": "the exec budget ran out"}, False
    except BaseException as exc:
        if forked:  # (see _after_the_candidate)
            return _after_the_candidate(exc), False
        return {"reward": 0.0, "grader_error": _describe(exc)}, False


def _after_the_candidate(exc: BaseException) -> dict[str, Any]:
    """The verdict of a grade the grader could not finish once the
    candidate's process had started: the candidate's failure (0.0), not an
    infrastructure one. From then on, what the grader reads was sent by a
    process running the candidate's code, and the guest is as that code
    left it: the grader cannot show the failure was not the candidate's
    doing, and an infrastructure failure would drop the sample from
    training (a candidate able to cause one turns its 0.0 into no signal)."""
    return {
        "reward": 0.0,
        "passed": 0,
        "total": 0,
        "load_error": "the grader could not go on with what the candidate's process did: "
        + _describe(exc),
    }


def _describe(exc: BaseException) -> str:
    return (type(exc).__name__ + ": " + str(exc))[:_MSG]


def _seeded_rng(seed: str | None, state: Any) -> Any:
    """A private Random with the state the exec's ``random`` has for
    ``seed`` (a pack item's), or the exec's own seeded state: the
    candidate cannot shift the inputs it is tested on."""
    import random

    rng = random.Random(0)  # (a seed of its own would cost an OS entropy read)
    if seed is not None:
        rng.seed(int(seed, 16))
    else:
        rng.setstate(state)
    return rng


def _precompiled(data: bytes | str, path: str) -> Any:
    """A delivered candidate's code object, compiled once by the grader so
    that no candidate's process pays for the compiler: only a small source
    that compiles (the others are compiled, and fail, in the candidate's
    process under its budget)."""
    if isinstance(data, str) or len(data) > _PRECOMPILE_MAX:
        return data
    try:
        return compile(data, path, "exec", dont_inherit=True)
    except Exception:
        return data


def _stay_on_turn_cpu() -> None:
    """Keep the grade's processes on the CPU the backend's turn owns, where
    it says which (``COLLIMATE_CPU``, see the local backend's run queue): a
    handover between processes on one CPU is a context switch, across two a
    wake-up of the other."""
    cpu = os.environ.get("COLLIMATE_CPU", "")
    if not cpu.isdigit():
        return
    try:
        if int(cpu) in os.sched_getaffinity(0):
            os.sched_setaffinity(0, {int(cpu)})
    except (AttributeError, OSError):  # no affinity calls on this platform
        pass


def _own_id() -> str | None:
    """sha256 of this file (16 hex) when imported from a file: a template
    that preloads this module is used only by an SDK shipping the same one."""
    path = globals().get("__file__")
    if not path:
        return None
    with open(path, "rb") as fh:
        return _sha256_hex(fh.read())[:16]


def _sha256_hex(data: bytes) -> str:
    """sha256 by the interpreter's own module where it has one: ``hashlib``
    would load OpenSSL into the template."""
    for name in ("_sha2", "_sha256"):  # 3.12+, before
        try:
            module = __import__(name)
        except ImportError:
            continue
        return module.sha256(data).hexdigest()  # type: ignore[no-any-return]
    import hashlib

    return hashlib.sha256(data).hexdigest()


RUNTIME_ID = _own_id()

#: The worker, loaded and warmed in a template's zygote (``__collimate_warm__``).
_WORKER_READY = None


def __collimate_warm__() -> None:
    """Called once by a local backend's zygote after it preloaded this
    runtime: load the worker's program (``WORKER_PARTS``) here and run its
    code path a few dozen times, so that every exec forked from the zygote,
    and its clean twin, has it loaded and specialised already (a pack's
    spawner then starts without sending, loading or warming it: about 3 ms
    of every pack's start)."""
    global _WORKER_READY
    namespace: dict[str, Any] = {"__name__": "__collimate_preload__"}
    try:
        exec(_worker_code(), namespace)
        namespace["_w_warm_up"]()
    except Exception:
        return
    _WORKER_READY = namespace


def _worker_code() -> Any:
    """The worker's code object: its shipped bytecode when this interpreter
    reads that format, else compiled from its source."""
    import marshal
    import sys

    code = globals().get("_WORKER_BYTECODE")
    ext = sys.modules.get("_frozen_importlib_external")
    if code and getattr(ext, "MAGIC_NUMBER", None) == globals().get("_WORKER_MAGIC"):
        return marshal.loads(code)
    return compile(_worker_source(), "<collimate-worker>", "exec")
