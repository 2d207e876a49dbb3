"""Grading a group: ``grade_batch`` (threads) and ``grade_batch_async`` (one
event loop), with positional results, a concurrency bound, progress and the
failure semantics of :mod:`collimate_rl.grading` per candidate.

With ``pack=N`` a group goes in execs of up to ``N`` candidates
(:mod:`collimate_rl.packing` builds and reads them); a candidate a pack did
not grade is graded alone, in an exec of its own beside the rest.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .errors import CollimateError
from .grading import (
    INFRA_ERROR_MODES,
    GradeResult,
    OnInfraError,
    _after_grade,
    _check_seed,
    _check_timeout,
    _float_or_none,
    _grade_one,
    _grade_one_async,
    infra_result,
    runtime_forms,
)
from .packing import PackedGrade, PreparedPack, check_pack, pack_units, prepare_pack, read_pack
from .rewards.program import NEED_FULL
from .rewards.spec import GuestReward, RewardSpec
from .rewards.verdict import asked_for_full

if TYPE_CHECKING:
    from .transport import AsyncSessionClient, SessionClient

__all__ = ["ResultCallback", "grade_batch", "grade_batch_async"]

ResultCallback = Callable[[int, GradeResult], None]
Finished = list[tuple[int, "GradeResult | BaseException"]]
_log = logging.getLogger("collimate_rl.grading")


#: Targets whose guest cannot run a pack (said so once): their packs go alone.
_unpackable: set[tuple[str, str]] = set()


def _pack_needs_full(prepared: PreparedPack, response: Mapping[str, Any]) -> bool:
    stdout = response.get("stdout")
    form = prepared.contexts[0].form
    return (
        form != "full"
        and isinstance(stdout, str)
        and asked_for_full(stdout, prepared.nonce, NEED_FULL)
    )


def _packed_result(
    grade: PackedGrade, prepared: PreparedPack, response: Mapping[str, Any]
) -> GradeResult:
    outcome = grade.outcome
    raw = dict(response)
    raw["stdout"] = grade.stdout
    raw["pack"] = {"nonce": prepared.nonce, "size": len(prepared.indices)}
    return GradeResult(
        reward=outcome.reward,
        seed=grade.seed,
        seed_ack="verified" if grade.seed_echo == grade.seed else "no-ack",
        exit_code=0,
        fork_time_ms=_float_or_none(response.get("fork_time_ms")),
        exec_time_ms=grade.elapsed_ms,
        raw=raw,
        verdict=outcome.verdict,
        detail=outcome.detail,
        index=grade.index,
    )


def _take_pack(
    spec: GuestReward,
    key: tuple[str, str],
    prepared: PreparedPack,
    response: Mapping[str, Any],
) -> tuple[Finished, list[int]]:
    """The results a pack wrote, and the indices to grade alone: those it
    did not write, and those whose verdict blames the infrastructure (alone,
    they meet the lone grade's failure semantics exactly)."""
    stdout = response.get("stdout")
    grades, note = read_pack(spec, prepared, stdout if isinstance(stdout, str) else "")
    done: Finished = []
    for grade in grades:
        if grade.outcome.verdict != "infra_error":
            result = _packed_result(grade, prepared, response)
            runtime_forms.learn(key, result)
            done.append((grade.index, result))
    if note is not None and not grades and key not in _unpackable:
        _unpackable.add(key)
        _log.warning("%s cannot grade packs (%s): grading its candidates alone", key[1], note)
    finished = {index for index, _ in done}
    return done, [i for i in prepared.indices if i not in finished]


def _grade_pack(
    client: SessionClient,
    template_id: str,
    spec: GuestReward,
    candidates: Sequence[str],
    seeds: Sequence[str | None],
    unit: list[int],
    timeout_seconds: int,
) -> tuple[Finished, list[int]]:
    """Grade the candidates at ``unit`` in one exec: (finished, still to grade alone)."""
    key = runtime_forms.key(client, template_id, None)
    if key in _unpackable:
        return [], unit

    form = runtime_forms.get(key)
    prepared = prepare_pack(
        spec, candidates, seeds, unit, timeout_seconds=timeout_seconds, form=form
    )
    try:
        response = client.exec_once(template_id, **prepared.exec_kwargs)
        if _pack_needs_full(prepared, response):
            runtime_forms.forget(key)
            prepared = prepare_pack(spec, candidates, seeds, unit, timeout_seconds=timeout_seconds)
            response = client.exec_once(template_id, **prepared.exec_kwargs)
    except CollimateError:
        return [], unit  # alone, each meets the failure as a lone grade would
    return _take_pack(spec, key, prepared, response)


async def _grade_pack_async(
    client: AsyncSessionClient,
    template_id: str,
    spec: GuestReward,
    candidates: Sequence[str],
    seeds: Sequence[str | None],
    unit: list[int],
    timeout_seconds: int,
) -> tuple[Finished, list[int]]:
    """:func:`_grade_pack` with an async client."""
    key = runtime_forms.key(client, template_id, None)
    if key in _unpackable:
        return [], unit

    form = runtime_forms.get(key)
    prepared = prepare_pack(
        spec, candidates, seeds, unit, timeout_seconds=timeout_seconds, form=form
    )
    try:
        response = await client.exec_once(template_id, **prepared.exec_kwargs)
        if _pack_needs_full(prepared, response):
            runtime_forms.forget(key)
            prepared = prepare_pack(spec, candidates, seeds, unit, timeout_seconds=timeout_seconds)
            response = await client.exec_once(template_id, **prepared.exec_kwargs)
    except CollimateError:
        return [], unit
    return _take_pack(spec, key, prepared, response)


def _batch_seeds(candidates: Sequence[str], seeds: Sequence[str | None] | None) -> list[str | None]:
    if seeds is None:
        return [None] * len(candidates)
    if isinstance(seeds, str):
        raise TypeError("seeds must be a sequence of seeds, one per candidate (not a str)")
    if len(seeds) != len(candidates):
        raise ValueError(f"{len(seeds)} seeds for {len(candidates)} candidates")
    for s in seeds:
        _check_seed(s)
    return list(seeds)


def _check_batch_args(on_infra_error: str, concurrency: int) -> None:
    if on_infra_error not in INFRA_ERROR_MODES:
        raise ValueError(
            f"on_infra_error must be one of {INFRA_ERROR_MODES}, got {on_infra_error!r}"
        )
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")


class _Progress:
    """A Rich progress bar when asked for and Rich is installed; else nothing."""

    def __init__(self, enabled: bool, total: int) -> None:
        self._bar: Any = None
        self._task: Any = None
        if not enabled:
            return
        try:
            from rich.progress import Progress
        except ImportError:
            return
        self._bar = Progress(transient=False)
        self._task = self._bar.add_task("grading", total=total)

    @contextmanager
    def running(self) -> Iterator[_Progress]:
        if self._bar is None:
            yield self
            return
        with self._bar:
            yield self

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.advance(self._task)


class _Collector:
    """Positional results plus the first infra error, shared by both paths."""

    def __init__(
        self,
        candidates: Sequence[str],
        seeds: list[str | None],
        on_infra_error: str,
        on_result: ResultCallback | None,
        progress: _Progress,
    ) -> None:
        self.candidates = candidates
        self.seeds = seeds
        self.mode = on_infra_error
        self.on_result = on_result
        self.progress = progress
        self.results: list[GradeResult | None] = [None] * len(candidates)
        self.first_error: BaseException | None = None

    def done(self, index: int, outcome: GradeResult | BaseException) -> None:
        """Record one finished grade (called on the caller's thread/loop)."""
        if isinstance(outcome, BaseException):
            if not isinstance(outcome, CollimateError) or self.mode == "raise":
                if self.first_error is None:
                    self.first_error = outcome
                return
            flagged = getattr(outcome, "result", None)
            if isinstance(flagged, GradeResult):
                result = flagged  # the guest answered: keep its transcript
            else:
                result = infra_result(outcome, self.seeds[index], index)
        else:
            result = outcome
        self.results[index] = result
        _after_grade(result, self.candidates[index], index)
        if self.on_result is not None:
            self.on_result(index, result)
        self.progress.advance()

    def final(self) -> list[GradeResult]:
        if self.first_error is not None:
            raise self.first_error
        out = [r for r in self.results if r is not None]
        if self.mode == "skip":
            return [r for r in out if not r.infra_error]
        return out


def _units(
    candidates: Sequence[str], spec: RewardSpec, pack: int | None, session_id: str | None
) -> list[list[int]]:
    return pack_units(len(candidates), check_pack(pack, spec, session_id))


def grade_batch(
    client: SessionClient,
    template_id: str,
    candidates: Sequence[str],
    spec: RewardSpec,
    *,
    seeds: Sequence[str | None] | None = None,
    timeout_seconds: int = 30,
    concurrency: int = 24,
    on_infra_error: OnInfraError = "raise",
    progress: bool = False,
    on_result: ResultCallback | None = None,
    session_id: str | None = None,
    pack: int | None = None,
) -> list[GradeResult]:
    """Grade a group of candidates, at most ``concurrency`` execs at a time.

    Results are positional (``results[i]`` is ``candidates[i]``) except with
    ``on_infra_error="skip"``, which drops infra failures (each result keeps
    its ``index``). ``seeds`` gives one seed (or ``None``) per candidate, e.g.
    from :func:`~collimate_rl.group_seeds`. With ``"raise"`` no new grade
    starts after the first backend error, and that error is re-raised once
    the grades in flight have finished. ``on_result(index, result)`` and
    the ``collimate_rl_after_grade`` hook run on the calling thread as
    results arrive; ``progress=True`` draws a Rich bar when Rich is installed.

    ``pack=N`` grades up to ``N`` candidates per exec, one after another
    with a sweep between two (built-in reward kinds, one-shot grades only;
    see :mod:`collimate_rl.packing`): far fewer execs for the same rewards.
    A candidate the pack did not grade is graded alone, in an exec of its
    own beside the rest of the batch.
    """
    _check_batch_args(on_infra_error, concurrency)
    _check_timeout(timeout_seconds)
    per_seed = _batch_seeds(candidates, seeds)
    units = _units(candidates, spec, pack, session_id)
    collector = _Collector(
        candidates, per_seed, on_infra_error, on_result, _Progress(progress, len(candidates))
    )
    if not candidates:
        return []
    stop = threading.Event()

    def alone(i: int) -> GradeResult | BaseException:
        try:
            return _grade_one(
                client,
                template_id,
                candidates[i],
                spec,
                per_seed[i],
                timeout_seconds,
                session_id,
                i,
            )
        except Exception as exc:
            if on_infra_error == "raise" or not isinstance(exc, CollimateError):
                stop.set()
            return exc

    def work(unit: list[int]) -> tuple[Finished, list[int]]:
        """A unit's results, and the candidates it leaves to be graded alone."""
        if stop.is_set():
            return [], []
        if len(unit) == 1:
            return [(unit[0], alone(unit[0]))], []
        assert isinstance(spec, GuestReward)  # check_pack made sure
        try:
            return _grade_pack(
                client, template_id, spec, candidates, per_seed, unit, timeout_seconds
            )
        except Exception as exc:  # not the backend's: a lone grade would stop too
            stop.set()
            return [(unit[0], exc)], []

    workers = min(concurrency, len(candidates))
    with (
        collector.progress.running(),
        concurrent.futures.ThreadPoolExecutor(
            workers, thread_name_prefix="collimate-grade"
        ) as pool,
    ):
        pending = {pool.submit(work, unit) for unit in units}
        while pending:
            done, pending = concurrent.futures.wait(
                pending, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for fut in done:
                finished, alone_now = fut.result()
                for i, outcome in finished:
                    collector.done(i, outcome)
                # each an exec of its own, beside the rest of the batch
                pending |= {pool.submit(work, [i]) for i in alone_now}
    return collector.final()


async def grade_batch_async(
    client: AsyncSessionClient,
    template_id: str,
    candidates: Sequence[str],
    spec: RewardSpec,
    *,
    seeds: Sequence[str | None] | None = None,
    timeout_seconds: int = 30,
    concurrency: int = 24,
    on_infra_error: OnInfraError = "raise",
    progress: bool = False,
    on_result: ResultCallback | None = None,
    session_id: str | None = None,
    pack: int | None = None,
) -> list[GradeResult]:
    """:func:`grade_batch` on one event loop with an async client: no
    threads, ``concurrency`` execs in flight. With ``"raise"`` the grades
    still in flight are cancelled at the first backend error, which is then
    re-raised."""
    _check_batch_args(on_infra_error, concurrency)
    _check_timeout(timeout_seconds)
    per_seed = _batch_seeds(candidates, seeds)
    units = _units(candidates, spec, pack, session_id)
    collector = _Collector(
        candidates, per_seed, on_infra_error, on_result, _Progress(progress, len(candidates))
    )
    if not candidates:
        return []
    gate = asyncio.Semaphore(concurrency)
    failed = asyncio.Event()

    async def alone(i: int) -> GradeResult | BaseException:
        try:
            return await _grade_one_async(
                client,
                template_id,
                candidates[i],
                spec,
                per_seed[i],
                timeout_seconds,
                session_id,
                i,
            )
        except Exception as exc:
            if on_infra_error == "raise" or not isinstance(exc, CollimateError):
                failed.set()
            return exc

    async def work(unit: list[int]) -> tuple[Finished, list[int]]:
        """A unit's results, and the candidates it leaves to be graded alone."""
        async with gate:
            if failed.is_set():
                return [], []
            if len(unit) == 1:
                return [(unit[0], await alone(unit[0]))], []
            assert isinstance(spec, GuestReward)  # check_pack made sure
            try:
                return await _grade_pack_async(
                    client, template_id, spec, candidates, per_seed, unit, timeout_seconds
                )
            except Exception as exc:
                return [(unit[0], exc)], []

    tasks = {asyncio.ensure_future(work(unit)) for unit in units}
    try:
        with collector.progress.running():
            while tasks and collector.first_error is None:
                done, tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    finished, alone_now = task.result()
                    for i, outcome in finished:
                        collector.done(i, outcome)
                    # each an exec of its own, beside the rest of the batch
                    tasks |= {asyncio.ensure_future(work([i])) for i in alone_now}
    finally:
        pending = [t for t in tasks if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    return collector.final()
