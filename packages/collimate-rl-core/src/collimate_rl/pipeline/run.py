"""Step 2: run the execs. A unit's exec is built, sent within what the
target admits, sent again in full if the target refused the short program
form, and read (step 3) into a :class:`Report`: the results it produced
and the units that must grade what it left (step 1's follow-up).

The logic is written once, as *steps* (:func:`unit_steps`): a generator
that yields each exec request and is sent the answer (or thrown the
backend's error). :func:`run_unit` and :func:`run_unit_async` only drive
those steps, one blocking, one on the running loop, so the two paths cannot
drift apart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import CollimateError
from ..rewards.contest import JudgedReward
from ..rewards.program import build_runtime, runtime_built
from ..rewards.spec import GuestReward
from ._async.admission import admitted_async
from ._sync.admission import admitted
from .admission import gate_for
from .client import GradingClient, JudgeCall, Judges
from .execs import prepare_grade, prepare_pack
from .forms import runtime_forms
from .plan import Job, Unit, follow_up, judged, singles
from .read import asked_again_in_full, read_pack_answer, result_from_response
from .result import Graded, GradeResult, as_outcome
from .targets import facts, facts_async, unpackable

__all__ = ["Report", "Route", "run_unit", "run_unit_async", "unit_steps"]

#: what a step asks to be sent: an exec's arguments, or a judge request
Request = Mapping[str, Any] | JudgeCall
Answer = dict[str, Any]
Steps = Generator[Request, Answer, "Report"]


@dataclass(frozen=True)
class Route:
    """Where a unit's exec goes: a fresh clone of ``template_id`` (or the
    warm session ``session_id``), with each candidate's ``timeout_seconds``."""

    template_id: str
    session_id: str | None
    timeout_seconds: int


@dataclass
class Report:
    """What running a unit produced."""

    #: each candidate graded, with its result or the error a lone grade raises
    finished: list[tuple[Job, Graded]] = field(default_factory=list)
    #: units that must grade the candidates it did not (see plan.follow_up)
    follow: list[Unit] = field(default_factory=list)


def unit_steps(key: tuple[str, str], route: Route, unit: Unit) -> Steps:
    """The steps of grading ``unit``; ``key`` names the target (endpoint,
    template or session) for what is learnt about it."""
    if judged(unit):
        return (yield from _judge_steps(unit))
    if unit.packed:
        return (yield from _pack_steps(key, route, unit))
    return (yield from _alone_steps(key, route, unit.jobs[0]))


def _judge_steps(unit: Unit) -> Steps:
    """One ``/v1/judge`` request for the unit's candidates (each judged on
    its own by the server); a backend error is each candidate's, as a lone
    grade's would be."""
    problems: list[dict[str, Any]] = []
    seen: dict[int, int] = {}
    candidates = []
    for job in unit.jobs:
        spec = job.spec
        assert isinstance(spec, JudgedReward)
        if id(spec) not in seen:
            seen[id(spec)] = len(problems)
            problems.append(spec.problem())
        candidates.append({"problem": seen[id(spec)], **spec.judged_candidate(job.candidate)})
    try:
        answer = yield JudgeCall(problems, candidates)
        results = answer["results"]
        if not isinstance(results, list) or len(results) != len(unit.jobs):
            raise CollimateError("the judge answered a result per candidate it was not sent")
    except Exception as exc:
        return Report([(job, exc) for job in unit.jobs])
    finished: list[tuple[Job, Graded]] = []
    for job, entry in zip(unit.jobs, results, strict=True):
        spec = job.spec
        assert isinstance(spec, JudgedReward)
        outcome = spec.judged(entry)
        infra = outcome.verdict == "infra_error"
        result = GradeResult(
            reward=0.0 if infra else outcome.reward,
            seed=job.seed,
            raw={"judge": entry, "compile_cache": answer.get("compile_cache")},
            infra_error=infra,
            verdict=outcome.verdict,
            detail=outcome.detail,
            index=job.index,
            error=outcome.infra_message,
        )
        finished.append((job, as_outcome(result)))
    return Report(finished)


def _alone_steps(key: tuple[str, str], route: Route, job: Job) -> Steps:
    form = runtime_forms.get(key)
    try:
        prepared = prepare_grade(
            job.spec, job.candidate, seed=job.seed, timeout_seconds=route.timeout_seconds, form=form
        )
        response = yield prepared.exec_kwargs
        if asked_again_in_full(prepared.ctx.nonce, form, response):  # the target changed
            runtime_forms.forget(key)
            prepared = prepare_grade(
                job.spec, job.candidate, seed=job.seed, timeout_seconds=route.timeout_seconds
            )
            response = yield prepared.exec_kwargs
        result = result_from_response(job.spec, prepared, response, job.index)
    except Exception as exc:  # the backend's error, or the spec's: this grade's own
        return Report([(job, exc)])
    runtime_forms.learn(key, result)
    return Report([(job, as_outcome(result))])


def _pack_steps(key: tuple[str, str], route: Route, unit: Unit) -> Steps:
    if key in unpackable:
        return Report(follow=singles(unit.jobs))
    form = runtime_forms.get(key)
    prepared = prepare_pack(unit.jobs, timeout_seconds=route.timeout_seconds, form=form)
    try:
        response = yield prepared.exec_kwargs
        if asked_again_in_full(prepared.nonce, form, response):
            runtime_forms.forget(key)
            prepared = prepare_pack(unit.jobs, timeout_seconds=route.timeout_seconds)
            response = yield prepared.exec_kwargs
    except CollimateError:  # alone, each meets the failure as a lone grade would
        return Report(follow=singles(unit.jobs))
    reading = read_pack_answer(unit.jobs, prepared, response)
    if reading.cannot_pack:
        unpackable.mark(key, reading.note or "")
    finished: list[tuple[Job, Graded]] = []
    for position, result in reading.taken:
        runtime_forms.learn(key, result)
        finished.append((unit.jobs[position], result))
    follow = follow_up(
        unit,
        [position for position, _ in reading.taken],
        reading.blamed,
        said_why=reading.said_why,
        on_time=reading.on_time,
        cannot_pack=reading.cannot_pack,
    )
    return Report(finished, follow)


def _exec(client: GradingClient, route: Route, request: Request) -> Any:
    if isinstance(request, JudgeCall):
        if not isinstance(client, Judges):
            raise CollimateError(
                f"{type(client).__name__} cannot judge programs: ContestReward needs a "
                "backend serving POST /v1/judge (the local backend's daemon wire, "
                "CollimateClient)",
                None,
                "judge_unsupported",
            )
        return client.judge(request.problems, request.candidates)
    if route.session_id is not None:
        return client.session_exec(route.session_id, **request)
    return client.exec_once(route.template_id, **request)


def _step(steps: Steps, outcome: Answer | CollimateError | None) -> Request | Report:
    """The next request ``steps`` make, given what the last one came to (its
    answer, or the backend's error, thrown into them), or their report once
    they are done."""
    try:
        if isinstance(outcome, CollimateError):
            return steps.throw(outcome)
        return steps.send(outcome)  # type: ignore[arg-type]
    except StopIteration as done:
        report: Report = done.value
        return report


def _drive(steps: Steps, send: Callable[[Request], Answer]) -> Report:
    outcome: Answer | CollimateError | None = None
    while not isinstance(step := _step(steps, outcome), Report):
        try:
            outcome = send(step)
        except CollimateError as exc:
            outcome = exc
    return step


async def _drive_async(steps: Steps, send: Callable[[Request], Awaitable[Answer]]) -> Report:
    outcome: Answer | CollimateError | None = None
    while not isinstance(step := _step(steps, outcome), Report):
        try:
            outcome = await send(step)
        except CollimateError as exc:
            outcome = exc
    return step


def runtime_needed(unit: Unit, form: str) -> tuple[str | None, str, bool] | None:
    """The grader runtime ``unit``'s program is built with (kind, form,
    packed), or None for a custom spec (no grader runtime)."""
    kinds = set()
    for job in unit.jobs:
        if not isinstance(job.spec, GuestReward):
            return None
        kinds.add(job.spec.kind)
    kind = kinds.pop() if len(kinds) == 1 else None
    return kind, form, unit.packed


def run_unit(client: GradingClient, route: Route, unit: Unit) -> Report:
    """Grade ``unit`` with a blocking client."""
    key = runtime_forms.key(client, route.template_id, route.session_id)
    gate = gate_for(client, facts(client))

    def send(request: Request) -> Answer:
        answer: Answer = admitted(gate, lambda: _exec(client, route, request))
        return answer

    return _drive(unit_steps(key, route, unit), send)


async def run_unit_async(client: GradingClient, route: Route, unit: Unit) -> Report:
    """Grade ``unit`` with an async client, on the running loop."""
    key = runtime_forms.key(client, route.template_id, route.session_id)
    gate = gate_for(client, await facts_async(client))
    need = runtime_needed(unit, runtime_forms.get(key))
    if need is not None and not runtime_built(*need):
        # the first program of a kind: built in a thread, the loop keeps going
        await asyncio.to_thread(build_runtime, *need)

    async def send(request: Request) -> Answer:
        answer: Answer = await admitted_async(gate, lambda: _exec(client, route, request))
        return answer

    return await _drive_async(unit_steps(key, route, unit), send)
