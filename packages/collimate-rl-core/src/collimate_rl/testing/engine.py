"""Start the local backend's execution engine, or the whole namespaced
backend, for a test, and always stop it.

Shared by the engine's and the isolation tests so that each one starts,
skips (only where the host truly lacks namespaces, see :mod:`.host`) and
tears down the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from ..local_backend import LocalCollimateBackend
from ..local_backend.engine import ForkEngine, TemplateSpec, make_engine
from .host import skip_unless_host_lacks_namespaces

__all__ = ["namespaced_backend", "run_with_engine", "started_engine"]


@contextlib.asynccontextmanager
async def started_engine(
    mode: str, templates: list[TemplateSpec], pool_size: int = 0
) -> AsyncIterator[ForkEngine]:
    """An engine in ``mode`` serving ``templates``, closed on the way out."""
    engine = make_engine(mode, pool_size=pool_size)  # type: ignore[arg-type]
    try:
        await engine.start(templates)
    except RuntimeError as exc:
        await engine.close()
        skip_unless_host_lacks_namespaces(exc, mode)
    try:
        yield engine
    finally:
        await engine.close()


def run_with_engine(
    mode: str,
    templates: list[TemplateSpec],
    body: Callable[[ForkEngine], Awaitable[None]],
    pool_size: int = 0,
) -> None:
    """Run ``body(engine)`` on a fresh event loop with a started engine."""

    async def main() -> None:
        async with started_engine(mode, templates, pool_size) as engine:
            await body(engine)

    asyncio.run(main())


@contextlib.contextmanager
def namespaced_backend(templates: Any = None, **options: Any) -> Iterator[LocalCollimateBackend]:
    """A started :class:`~collimate_rl.local_backend.LocalCollimateBackend`
    with ``isolation="namespaces"`` (``templates`` and ``options`` as its
    constructor takes them), stopped on the way out. A start that fails
    skips the calling test only where the host truly lacks namespaces;
    anywhere else the failure is raised."""
    server = LocalCollimateBackend(templates, isolation="namespaces", **options)
    try:
        server.__enter__()
    except Exception as exc:  # the only reason to skip: no namespaces on this host
        skip_unless_host_lacks_namespaces(exc)
    try:
        yield server
    finally:
        server.__exit__(None, None, None)
