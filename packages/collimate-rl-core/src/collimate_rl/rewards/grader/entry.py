"""The grader's entry point: ``main(config, how)``."""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031
from __future__ import annotations

import time

from .budget import _MSG, _Abort, _Budget
from .kinds import _property_cases, _read_candidate
from .process import _SpawnerGone, _stay_on_turn_cpu
from .wire import _Frame, _mute

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any, NoReturn


def main(cfg: dict[str, Any], how: str = "source") -> NoReturn:
    """Grade the delivered candidate as ``cfg`` says, write the verdict frame,
    and leave without running any shutdown code. ``how`` says how this
    runtime was loaded (``preloaded`` / ``bytecode`` / ``source``); the
    verdict reports it so the SDK can send less next time. A ``pack`` in
    ``cfg`` grades several candidates, one after another (``_pack``)."""
    if cfg.get("pack") is not None:
        # looked up by name: only a pack's program ships it (see program.py)
        globals()["_pack"](cfg, how)
    start = time.monotonic()
    frame = _Frame(cfg["marker"] + cfg["nonce"])
    frame.line("hello")
    rng = _private_rng(cfg)
    _mute()
    _stay_on_turn_cpu()  # (the candidate's process inherits it)
    budget = _Budget(cfg, start)
    budget.private_fds.append(frame.fd)  # the verdict's way out: never the candidate's
    data = _read_candidate(cfg)
    if isinstance(data, str):
        frame.finish({"reward": 0.0, "delivery_error": data})
    verdict = _verdict(cfg, data, budget, rng)
    verdict["runtime"] = how
    frame.finish(verdict)


def _private_rng(cfg: dict[str, Any]) -> Any:
    """For a property: a private copy of the seeded global ``random`` state
    (the backend, or ``_pack``, seeded it), so the candidate cannot shift
    its inputs."""
    if cfg["kind"] != "property":
        return None
    import random

    rng = random.Random(0)  # (a seed of its own would cost an OS entropy read)
    rng.setstate(random.getstate())
    return rng


def _verdict(
    cfg: dict[str, Any],
    data: bytes,
    budget: _Budget,
    rng: Any,
    drawn: Any = None,
    run: Any = None,
) -> dict[str, Any]:
    """One candidate's verdict, by the grader of its kind (``drawn``: a
    property's cases, already drawn for this seed by ``_pack``; ``run``:
    how the candidate's process runs, ``_in_own_process`` unless given)."""
    grader = globals().get("_grade_" + cfg["kind"])  # looked up by name: see program.py
    try:
        if grader is None:
            return {"reward": 0.0, "grader_error": "unknown kind %r" % cfg["kind"]}
        if cfg["kind"] == "property":
            if isinstance(drawn, BaseException):
                raise drawn
            return grader(cfg, data, budget, rng, drawn, run)  # type: ignore[no-any-return]
        return grader(cfg, data, budget, run)  # type: ignore[no-any-return]
    except _SpawnerGone:
        raise
    except _Abort:
        return {"reward": 0.0, "timeout": True, "load_error": "the exec budget ran out"}
    except BaseException as exc:  # a broken reference/generator: the grader's fault
        return {"reward": 0.0, "grader_error": (type(exc).__name__ + ": " + str(exc))[:_MSG]}


def _drawn_once(memo: dict[str, Any], cfg: dict[str, Any], seed: str, rng: Any) -> Any:
    """A property's cases for ``seed``, drawn once per pack (or the error
    drawing them raised): the same seed draws the same cases, so common
    random numbers cost one draw per group."""
    if cfg["kind"] != "property":
        return None
    if seed not in memo:
        try:
            memo[seed] = _property_cases(cfg, rng)
        except BaseException as exc:  # reported by _verdict, as a lone grade would
            memo[seed] = exc
    return memo[seed]


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
    would load OpenSSL into the template (about 0.6 MB and 16 mappings more
    for every process forked from it to copy and tear down)."""
    for name in ("_sha2", "_sha256"):  # 3.12+, before
        try:
            module = __import__(name)
        except ImportError:
            continue
        return module.sha256(data).hexdigest()  # type: ignore[no-any-return]
    import hashlib

    return hashlib.sha256(data).hexdigest()


RUNTIME_ID = _own_id()
