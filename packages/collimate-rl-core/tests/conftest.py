"""Fixtures core's tests share (pytest runs in importlib mode: a test module
cannot import another, so what several of them need lives here).

A fixture that talks to a server uses the requesting module's own
``backend`` fixture: each module starts the real local backend it needs.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from collimate_rl import CollimateClient, GradeResult, RewardSpec, grade
from collimate_rl.local_backend import LocalCollimateBackend


@pytest.fixture
def cancel_mid_exec(
    backend: LocalCollimateBackend,
) -> Callable[[Coroutine[Any, Any, None], asyncio.Event], Awaitable[None]]:
    """``await cancel_mid_exec(work, ready)`` runs ``work`` as a task, waits
    until it set ``ready`` and the backend runs an exec (its health's
    ``running``), then cancels the task, so mid-exec rather than before its
    request left, and checks that it ended cancelled. It fails the test when
    no exec starts within 30 s."""

    async def run(work: Coroutine[Any, Any, None], ready: asyncio.Event) -> None:
        task = asyncio.ensure_future(work)
        await ready.wait()
        deadline = time.monotonic() + 30.0
        while (await asyncio.to_thread(backend.health))["running"] < 1:
            assert time.monotonic() < deadline, "no exec started"
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    return run


@pytest.fixture
def same_as_alone(
    backend: LocalCollimateBackend,
) -> Callable[[GradeResult, str, RewardSpec, str | None], None]:
    """``same_as_alone(result, candidate, spec, seed)`` asserts that
    ``result`` is the grade ``candidate`` gets alone with ``seed`` (its own
    exec on the ``py`` template: no pack, no coalescing): the same reward,
    verdict and seed, pass counts, failed indices, timeout and load error.
    What a packed or coalesced grade must be."""

    def check(result: GradeResult, candidate: str, spec: RewardSpec, seed: str | None) -> None:
        with CollimateClient(backend.base_url, retries=0) as c:
            lone = grade(c, "py", candidate, spec, seed=seed, coalesce=False)
        for attr in ("reward", "verdict", "seed"):
            assert getattr(result, attr) == getattr(lone, attr), attr
        for key in ("passed", "total", "failed_indices", "timeout"):
            assert result.detail.get(key) == lone.detail.get(key), key
        # (a load error names the file, whose name carries the grade's own nonce)
        assert (
            str(result.detail.get("load_error")).split("(")[0]
            == str(lone.detail.get("load_error")).split("(")[0]
        )

    return check


#: The monorepo's docs check (a package of ``tools/``, not part of core).
DOCS_CHECK = Path(__file__).resolve().parents[3] / "tools" / "docs_check"


@pytest.fixture(scope="session")
def docs_check() -> ModuleType:
    """``tools/docs_check/``, loaded by path (test_docs_names.py,
    test_docs_wire.py); skipped where there is no monorepo around core (an
    sdist of core)."""
    if not DOCS_CHECK.exists():
        pytest.skip("the monorepo's tools/ (not in an sdist of core)")
    if "docs_check" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "docs_check", DOCS_CHECK / "__init__.py", submodule_search_locations=[str(DOCS_CHECK)]
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["docs_check"] = module  # its modules import each other through it
        spec.loader.exec_module(module)
    return sys.modules["docs_check"]
