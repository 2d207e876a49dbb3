"""A batch's units in flight: at most ``concurrency`` execs at once, each
unit's follow-up units (re-packs, lone grades) sent as soon as its report
comes back, every result handed to the :class:`~.collect.Collector` on the
caller's thread (blocking) or loop (async).

With ``on_infra_error="raise"``, no new unit starts after the first error;
the blocking path lets the execs in flight finish, the async path cancels
them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Sequence

from .client import GradingClient
from .collect import Collector
from .plan import Unit
from .run import Report, Route, run_unit, run_unit_async

__all__ = ["run_batch", "run_batch_async"]


def _take(report: Report, collector: Collector) -> list[Unit]:
    for job, outcome in report.finished:
        collector.done(job, outcome)
    return [] if collector.stopped else report.follow


def run_batch(
    client: GradingClient,
    route: Route,
    units: Sequence[Unit],
    concurrency: int,
    collector: Collector,
) -> None:
    """Grade ``units`` on a pool of ``concurrency`` threads."""

    def work(unit: Unit) -> Report:
        if collector.stopped:
            return Report()
        return run_unit(client, route, unit)

    workers = min(concurrency, sum(len(u.jobs) for u in units))
    with concurrent.futures.ThreadPoolExecutor(
        workers, thread_name_prefix="collimate-grade"
    ) as pool:
        pending = {pool.submit(work, unit) for unit in units}
        while pending:
            done, pending = concurrent.futures.wait(
                pending, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for fut in done:
                pending |= {pool.submit(work, unit) for unit in _take(fut.result(), collector)}


async def run_batch_async(
    client: GradingClient,
    route: Route,
    units: Sequence[Unit],
    concurrency: int,
    collector: Collector,
) -> None:
    """Grade ``units`` on the running loop, ``concurrency`` execs at once."""
    gate = asyncio.Semaphore(concurrency)

    async def work(unit: Unit) -> Report:
        async with gate:
            if collector.stopped:
                return Report()
            return await run_unit_async(client, route, unit)

    tasks = {asyncio.ensure_future(work(unit)) for unit in units}
    try:
        while tasks and not collector.stopped:
            done, tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                tasks |= {asyncio.ensure_future(work(u)) for u in _take(task.result(), collector)}
    finally:
        pending = [t for t in tasks if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
