"""Start the local backend's execution engine for a test, and always stop it.

Shared by the engine's tests so that each one starts, skips (only where the
host truly lacks namespaces, see :mod:`.host`) and tears down the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from ..local_backend.engine import ForkEngine, TemplateSpec, make_engine
from .host import skip_unless_host_lacks_namespaces

__all__ = ["run_with_engine", "started_engine"]


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
