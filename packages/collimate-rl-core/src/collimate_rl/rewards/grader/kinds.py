"""The reward kinds: unit tests, properties against a reference, and
programs on stdin/stdout (``_grade_<kind>`` and ``_<kind>_work``, both
looked up by name)."""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105, SIM102
from __future__ import annotations

import os
import sys

from .budget import _MSG, _Budget, _Tally
from .compare import _judge, same_tokens
from .process import _in_own_process
from .wire import checksum

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from collections.abc import Callable
    from typing import Any


def _read_candidate(cfg: dict[str, Any]) -> bytes | str:
    """The delivered candidate bytes, or a message saying why delivery failed."""
    path = cfg["path"]
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return "the candidate file was not delivered: %s" % exc
    try:
        os.unlink(path)  # a warm session may grade thousands: leave nothing behind
    except OSError:
        pass
    if cfg.get("size") is not None:
        if len(data) != cfg["size"] or checksum(data) != cfg["crc"]:
            return "the candidate file arrived altered (%d bytes, expected %d)" % (
                len(data),
                cfg["size"],
            )
    return data


def _compiled(data: Any, path: str) -> Any:
    """The candidate's code object: compiled as ``python <path>`` would
    (no future statement of this runtime's leaks into it), unless a pack
    compiled it already (``_precompiled``)."""
    if isinstance(data, (bytes, str)):
        return compile(data, path, "exec", dont_inherit=True)
    return data


def _load_module(cfg: dict[str, Any], data: Any, budget: _Budget) -> tuple[Any, str | None]:
    module = type(sys)(cfg["module"])
    module.__file__ = cfg["path"]
    sys.modules[cfg["module"]] = module

    def load() -> None:
        exec(_compiled(data, cfg["path"]), module.__dict__)

    reason, message = budget.run(load)
    if reason != "ok":
        return None, "%s while loading the candidate: %s" % (reason, message)
    fn = getattr(module, cfg["entry"], None)
    if not callable(fn):
        return None, "the candidate defines no function %r" % cfg["entry"]
    return fn, None


def _load_error(tally: _Tally, message: str) -> dict[str, Any]:
    if message.startswith("environment"):
        return {"reward": 0.0, "environment_error": message}
    verdict = tally.verdict()
    verdict["load_error"] = message[: _MSG * 2]
    verdict["timeout"] = message.startswith("timeout")
    verdict["memory_error"] = message.startswith("memory_error")
    return verdict


def _grade_unit(
    cfg: dict[str, Any], data: bytes, budget: _Budget, run: Any = None
) -> dict[str, Any]:
    tests = cfg["tests"]
    tally = _Tally(len(tests))
    results = (run or _in_own_process)(_unit_work(cfg, data, budget, None), budget)
    if results.load is not None:
        return _load_error(tally, results.load)
    for i, (_args, _kwargs, want) in enumerate(tests):
        reason, got = results.get(i)
        _judge(tally, i, reason, got, want, cfg["tol"])
    return tally.verdict()


def _unit_work(
    cfg: dict[str, Any], data: bytes, budget: _Budget, cases: Any
) -> Callable[[Callable[[Any], None]], None]:
    """What the candidate's process does for unit tests (``_<kind>_work``
    builders are looked up by name by a pack's spawner)."""

    def work(emit: Callable[[Any], None]) -> None:  # in the candidate's process
        fn, error = _load_module(cfg, data, budget)
        if error is not None:
            emit(("load", error))
            return
        for i, (args, kwargs, _want) in enumerate(cfg["tests"]):
            reason, got = budget.run(fn, *args, **kwargs)
            emit((i, reason, got))

    return work


class _RandomView:
    """``random`` as the generator sees it: a private Random, then the module."""

    def __init__(self, rng: Any, module: Any) -> None:
        self._rng = rng
        self._module = module

    def __getattr__(self, name: str) -> Any:
        try:
            return getattr(self._rng, name)
        except AttributeError:
            return getattr(self._module, name)


def _callable_from(
    source: str, name: str, params: str, base: dict[str, Any], prefer: tuple[str, ...]
) -> Any:
    """A full ``def`` is taken as written; a bare body (the seed's indented
    ``reference``) is wrapped as ``def name(params):``; for the generator, a
    bare expression is wrapped as ``return <expr>``."""
    namespace = dict(base)
    text = source.strip("\n")
    if text.lstrip().startswith("def "):
        before = set(namespace)
        exec(compile(text, "<" + name + ">", "exec"), namespace)
        new = [namespace[k] for k in namespace if k not in before and callable(namespace[k])]
        for wanted in prefer:
            if callable(namespace.get(wanted)):
                return namespace[wanted]
        if not new:
            raise ValueError("%s defines no function" % name)
        return new[0]
    if params == "" and "\n" not in text and not text.lstrip().startswith("return"):
        text = "    return " + text.strip()
    body = text if text[:1] in (" ", "\t") else "    " + text.replace("\n", "\n    ")
    exec(compile("def %s(%s):\n%s\n" % (name, params, body), "<" + name + ">", "exec"), namespace)
    return namespace[name]


def _grade_property(
    cfg: dict[str, Any],
    data: bytes,
    budget: _Budget,
    rng: Any,
    cases: Any = None,
    run: Any = None,
) -> dict[str, Any]:
    """``cases`` (inputs with their expected outputs) are drawn from ``rng``
    unless given: a pack draws them once per seed (``_pack``)."""
    tol = cfg["tol"]
    if cases is None:
        cases = _property_cases(cfg, rng)
    tally = _Tally(len(cases))
    results = (run or _in_own_process)(_property_work(cfg, data, budget, cases), budget)
    if results.load is not None:
        return _load_error(tally, results.load)
    for i, (x, want) in enumerate(cases):
        reason, got = results.get(i)
        _judge(tally, i, reason, got, want, tol, shown=(x,))
    return tally.verdict()


def _property_work(
    cfg: dict[str, Any], data: bytes, budget: _Budget, cases: Any
) -> Callable[[Callable[[Any], None]], None]:
    def work(emit: Callable[[Any], None]) -> None:  # in the candidate's process
        fn, error = _load_module(cfg, data, budget)
        if error is not None:
            emit(("load", error))
            return
        for i, (x, _want) in enumerate(cases):
            reason, got = budget.run(fn, x)
            emit((i, reason, got))

    return work


def _property_cases(cfg: dict[str, Any], rng: Any) -> list[tuple[Any, Any]]:
    """``k`` inputs from the generator and the reference's output for each."""
    import math
    import random

    k = int(cfg["k"])
    namespace: dict[str, Any] = {"random": _RandomView(rng, random), "math": math}
    if "string" in cfg["reference"] + cfg["generator"]:  # a failed import costs ~0.3 ms
        try:
            import string

            namespace["string"] = string
        except ImportError:  # a guest that cannot import beyond its preload
            pass
    ref = _callable_from(
        cfg["reference"], "_reference", "x", namespace, (cfg["entry"], "reference", "ref")
    )
    gen = _callable_from(cfg["generator"], "_generate", "", namespace, ("generate", "generator"))
    cases = []
    for _ in range(k):  # (drawn as a plain seeded grader would: CRN hold)
        x = gen()
        cases.append((x, ref(x)))
    return cases


def _scratch(path: str, content: bytes) -> int:
    """An unlinked read/write file holding ``content``, positioned at 0."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.unlink(path)
    view = memoryview(content)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, 0)
    return fd


def _grade_stdio(
    cfg: dict[str, Any], data: bytes, budget: _Budget, run: Any = None
) -> dict[str, Any]:
    """Run the candidate as a program once per test (in its own process, see
    ``_in_own_process``), with fds 0 and 1 on real files (so ``input()``,
    ``sys.stdin.buffer``, ``open(0)`` and ``os.write(1, ...)`` all behave as
    under a judge)."""
    tests = cfg["tests"]
    tally = _Tally(len(tests))
    results = (run or _in_own_process)(_stdio_work(cfg, data, budget, None), budget)
    if results.load is not None:
        return _load_error(tally, results.load)
    for i, (_given, want) in enumerate(tests):
        reason, got = results.get(i)
        if reason != "ok":
            tally.add(i, reason, str(got))
        elif same_tokens(str(got), want, cfg["tol"]):
            tally.add(i, None)
        else:
            tally.add(i, "wrong_answer", "got %.150r" % (str(got)[:150],))
    return tally.verdict()


def _stdio_work(
    cfg: dict[str, Any], data: bytes, budget: _Budget, cases: Any
) -> Callable[[Callable[[Any], None]], None]:
    def work(emit: Callable[[Any], None]) -> None:  # in the candidate's process
        reason, code = budget.run(lambda: _compiled(data, cfg["path"]))
        if reason != "ok":
            emit(("load", "%s while compiling the candidate: %s" % (reason, code)))
            return
        for i, (given, _want) in enumerate(cfg["tests"]):
            emit((i, *_run_program(cfg, code, given, budget)))

    return work


def _run_program(cfg: dict[str, Any], code: Any, given: str, budget: _Budget) -> tuple[str, str]:
    """One run of the compiled program on ``given``: (reason, its output or
    why it failed)."""
    real_in, real_out = sys.stdin, sys.stdout
    null = os.open(os.devnull, os.O_RDWR)
    fd_in = _scratch(cfg["path"] + ".stdin", given.encode("utf-8"))
    fd_out = _scratch(cfg["path"] + ".stdout", b"")
    os.dup2(fd_in, 0)
    os.dup2(fd_out, 1)
    os.close(fd_in)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    opened = sys.stdout
    namespace = {"__name__": "__main__", "__file__": cfg["path"], "__builtins__": __builtins__}
    try:
        reason, message = budget.run(exec, code, namespace)
        for stream in (sys.stdout, opened):
            try:
                stream.flush()
            except Exception:
                pass
    finally:
        sys.stdin, sys.stdout = real_in, real_out
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
    os.lseek(fd_out, 0, 0)
    chunks = []
    while True:
        chunk = os.read(fd_out, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd_out)
    if reason != "ok":
        return reason, str(message)
    return "ok", b"".join(chunks).decode("utf-8", "replace")
