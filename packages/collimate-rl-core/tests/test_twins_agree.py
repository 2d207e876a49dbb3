"""The blocking and coroutine twins of the public API stay alike.

They are written as pairs (each flavour keeps its own send loop), so
nothing but this test notices when one grows a method, a parameter or a
default the other lacks. For each pair: the same public methods, each with
the same parameters (names, kinds, defaults, annotations), and every public
method of the async twin a coroutine function (but the few that are plain
on purpose: properties, ``__repr__``, context-manager plumbing).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest

import collimate_rl as c

#: blocking name -> its async twin's name, where they differ on purpose
CONTEXT = {"__enter__": "__aenter__", "__exit__": "__aexit__"}
CLIENT = {**CONTEXT, "close": "aclose"}  # (a client's close is ``aclose``, as httpx's)

#: (blocking, async, renames): classes whose public surface must agree
CLASS_PAIRS = [
    (c.CollimateClient, c.AsyncCollimateClient, CLIENT),
    (c.GatewayClient, c.AsyncGatewayClient, CLIENT),
    (c.MultiNodeClient, c.AsyncMultiNodeClient, CLIENT),
    (c.Sandbox, c.AsyncSandbox, CONTEXT),
    (c.Session, c.AsyncSession, CONTEXT),
    (c.ForkGroup, c.AsyncForkGroup, CONTEXT),
    (c.Env, c.AsyncEnv, CONTEXT),
    (c.Template, c.AsyncTemplate, CLIENT),
    (c.TemplateHandle, c.AsyncTemplateHandle, CLIENT),
    (c.PythonTool, c.AsyncPythonTool, CONTEXT),
]

#: (blocking, async): functions that must take the same arguments
FUNCTION_PAIRS = [
    (c.grade, c.grade_async),
    (c.grade_batch, c.grade_batch_async),
    (c.rollout_once, c.rollout_once_async),
    (c.connect, c.connect_async),
]

#: methods of an async class that are plain (not coroutines) on purpose:
#: construction, pickling, what only reads or changes local state (a pool's
#: ``nodes`` and ``add_nodes``: no I/O), and what returns an
#: object to use with ``async with`` (a gateway's ``env`` and ``session``,
#: a sandbox's ``kernel``, which starts on first use)
PLAIN = {
    "__init__",
    "__getstate__",
    "__setstate__",
    "nodes",
    "add_nodes",
    "env",
    "session",
    "sandbox",
    "fork_group",
    "kernel",
}
#: what only the async flavour has: ``open`` (the blocking one opens in
#: ``__init__``, which cannot await)
ASYNC_ONLY = {"open"}
DUNDERS = {"__init__", *CONTEXT, *CONTEXT.values()}


def public(cls: type) -> dict[str, Any]:
    out = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") and name not in DUNDERS:
            continue
        if isinstance(inspect.getattr_static(cls, name), property):
            continue
        if callable(member):
            out[name] = member
    return out


def constructor(cls: type, name: str) -> bool:
    """A classmethod or staticmethod (an alternative constructor): plain."""
    return isinstance(inspect.getattr_static(cls, name), (classmethod, staticmethod))


def flavourless(annotation: object) -> str:
    """An annotation with what legitimately differs between the flavours
    taken out: ``AsyncX`` is ``X``, ``Awaitable[T]`` is ``T``."""
    text = str(annotation).replace("Async", "")
    return re.sub(r"Awaitable\[([^\[\]]*)\]", r"\1", text)


def default_of(param: inspect.Parameter) -> object:
    """A default, but a function default (``time.sleep`` against
    ``asyncio.sleep``) only as "some function"."""
    empty = param.default is inspect.Parameter.empty
    return "<a function>" if not empty and callable(param.default) else param.default


def shape(fn: Any) -> list[tuple[str, Any, Any, str]]:
    sig = inspect.signature(fn)
    return [
        (p.name, p.kind, default_of(p), flavourless(p.annotation)) for p in sig.parameters.values()
    ]


def ids(x: Any) -> str:
    return x.__name__ if hasattr(x, "__name__") else "renames"


@pytest.mark.parametrize("sync_cls, async_cls, renamed", CLASS_PAIRS, ids=ids)
def test_the_two_flavours_have_the_same_methods(
    sync_cls: type, async_cls: type, renamed: dict[str, str]
) -> None:
    sync_names = {renamed.get(n, n) for n in public(sync_cls)}
    async_names = set(public(async_cls)) - (ASYNC_ONLY - sync_names)
    assert sync_names == async_names, (
        f"only {sync_cls.__name__}: {sorted(sync_names - async_names)}; "
        f"only {async_cls.__name__}: {sorted(async_names - sync_names)}"
    )


@pytest.mark.parametrize("sync_cls, async_cls, renamed", CLASS_PAIRS, ids=ids)
def test_each_method_takes_the_same_parameters(
    sync_cls: type, async_cls: type, renamed: dict[str, str]
) -> None:
    async_methods = public(async_cls)
    for name, method in public(sync_cls).items():
        twin = async_methods[renamed.get(name, name)]
        assert shape(method) == shape(twin), f"{sync_cls.__name__}.{name} differs from its twin"


@pytest.mark.parametrize("sync_cls, async_cls, renamed", CLASS_PAIRS, ids=ids)
def test_the_async_flavour_awaits(sync_cls: type, async_cls: type, renamed: object) -> None:
    for name, method in public(async_cls).items():
        if name in PLAIN or constructor(async_cls, name):
            continue
        assert inspect.iscoroutinefunction(method), f"{async_cls.__name__}.{name} is not async"


@pytest.mark.parametrize("sync_fn, async_fn", FUNCTION_PAIRS, ids=lambda f: f.__name__)
def test_the_function_twins_take_the_same_arguments(sync_fn: Any, async_fn: Any) -> None:
    assert shape(sync_fn) == shape(async_fn)
    if async_fn is not c.connect_async:  # (connect_async only builds a client)
        assert inspect.iscoroutinefunction(async_fn)


def test_a_drifted_twin_is_caught() -> None:
    """The check itself: a parameter the async flavour lacks is seen."""

    class Blocking:
        def exec(self, code: str, timeout_seconds: int = 30) -> None: ...

    class Coroutine:
        async def exec(self, code: str) -> None: ...

    assert shape(Blocking.exec) != shape(Coroutine.exec)
