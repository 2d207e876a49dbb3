"""Grading candidates in sandboxes: ``grade`` and ``grade_async``, and the
pieces every grade shares (``GradeResult``, failure semantics, program forms).
Groups go through :mod:`collimate_rl.batch` (``grade_batch`` and its async
twin, re-exported here).

One grade is one exec: the candidate goes in as a text ``files`` entry at a
unique guest path, the spec's grader runs as ``code``, and the spec reads the
verdict. The pure steps (:func:`prepare_grade`, :func:`result_from_response`,
:func:`infra_result`) are shared by the blocking and the async paths, which
only differ in how they wait.

The rule everything here serves: **an infrastructure failure is never a
reward.** A backend error (or a grader that never started, or a candidate
that arrived altered) is re-raised by default (``on_infra_error="raise"``) so
the trainer resamples the group; ``"zero"`` keeps positional alignment and
flags the slot (``infra_error=True``, ``verdict="infra_error"``); ``"skip"``
drops it. A candidate that crashes, loops, prints garbage or writes to stderr
is a *task* outcome: its reward comes from the verdict and
``infra_error`` stays False.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from .errors import CollimateError
from .rewards.program import FORM_FOR_HOW, NEED_FULL, RuntimeForm
from .rewards.shipping import ship_grade
from .rewards.spec import GradeContext, RewardSpec, candidate_context
from .rewards.verdict import asked_for_full
from .seeds import is_valid_seed

if TYPE_CHECKING:
    from .batch import grade_batch, grade_batch_async
    from .transport import AsyncSessionClient, SessionClient

__all__ = [
    "INFRA_ERROR_MODES",
    "GradeResult",
    "GraderInfraError",
    "OnInfraError",
    "grade",
    "grade_async",
    "grade_batch",
    "grade_batch_async",
    "infra_result",
    "prepare_grade",
    "result_from_response",
    "runtime_forms",
]

OnInfraError = Literal["raise", "zero", "skip"]
INFRA_ERROR_MODES: Final = ("raise", "zero", "skip")


@dataclass
class GradeResult:
    """The reward of one candidate and how it was obtained.

    ``verdict`` is three-way: ``"passed"`` (full reward), ``"failed"`` (a
    task outcome, possibly with partial reward) or ``"infra_error"`` (no
    reward could be computed: do not train on it). ``detail`` carries the
    grader's per-test report (``passed``, ``total``, ``failed_indices``, the
    first ``failed`` entries with ``index``/``reason``/``message``, ``timeout``,
    ``memory_error``, ``load_error``) when the spec provides one. ``index`` is the candidate's
    position in its batch (useful with ``on_infra_error="skip"``).
    """

    reward: float
    seed: str | None = None
    seed_ack: str | None = None
    exit_code: int | None = None
    fork_time_ms: float | None = None
    exec_time_ms: float | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    infra_error: bool = False
    verdict: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    index: int | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if not self.verdict:
            if self.infra_error:
                self.verdict = "infra_error"
            else:
                self.verdict = "passed" if self.reward >= 1.0 else "failed"

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"


@dataclass(frozen=True)
class PreparedGrade:
    """One grade ready to send: the exec's keyword arguments and the context
    needed to read its answer."""

    ctx: GradeContext
    seed: str | None
    exec_kwargs: dict[str, Any]


def _check_seed(seed: str | None) -> None:
    if seed is not None and not is_valid_seed(seed):
        raise ValueError(f"seed must be 64 hex chars or None, got {seed!r:.80}")


def _check_timeout(timeout_seconds: float) -> None:
    if isinstance(timeout_seconds, bool) or not timeout_seconds > 0:
        raise ValueError(f"timeout_seconds must be positive, got {timeout_seconds!r}")


class _FormCache:
    """The smallest program form each target accepted (see
    :mod:`collimate_rl.rewards.program`): targets are (endpoint, template or
    session). Shared by threads and event loops; bounded."""

    _LIMIT = 4096

    def __init__(self) -> None:
        self._forms: dict[tuple[str, str], RuntimeForm] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(client: Any, template_id: str, session_id: str | None) -> tuple[str, str]:
        endpoint = getattr(client, "endpoint", None)
        where = str(endpoint) if isinstance(endpoint, str) else f"client:{id(client)}"
        target = f"session:{session_id}" if session_id is not None else f"template:{template_id}"
        return where, target

    def get(self, key: tuple[str, str]) -> RuntimeForm:
        return self._forms.get(key, "full")

    def learn(self, key: tuple[str, str], result: GradeResult) -> None:
        how = result.detail.get("runtime") if not result.infra_error else None
        form = FORM_FOR_HOW.get(how) if isinstance(how, str) else None
        with self._lock:
            if form is None or form == "full":
                self._forms.pop(key, None)
                return
            if len(self._forms) >= self._LIMIT:
                self._forms.clear()
            self._forms[key] = form

    def remember(self, key: tuple[str, str], form: RuntimeForm) -> None:
        with self._lock:
            self._forms[key] = form

    def forget(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._forms.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._forms.clear()


#: Process-wide: what each target accepted. ``runtime_forms.clear()`` resets.
runtime_forms = _FormCache()


def prepare_grade(
    spec: RewardSpec,
    candidate: str,
    *,
    seed: str | None,
    timeout_seconds: int,
    form: RuntimeForm = "full",
) -> PreparedGrade:
    """Build the exec for grading ``candidate`` (a fresh nonce per grade, so
    concurrent grades in one warm session never share a file or a frame)."""
    if not isinstance(candidate, str):
        raise TypeError(f"candidate must be str, got {type(candidate).__name__}")
    ctx = candidate_context(candidate, secrets.token_hex(12), timeout_seconds, form)
    shipment = ship_grade(spec, ctx, candidate)
    kwargs: dict[str, Any] = {
        "code": shipment.code,
        "files": shipment.files,
        "timeout_seconds": timeout_seconds,
        "seed": seed,
    }
    return PreparedGrade(ctx, seed, kwargs)


def _float_or_none(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def result_from_response(
    spec: RewardSpec, prepared: PreparedGrade, response: Mapping[str, Any], index: int = 0
) -> GradeResult:
    """The GradeResult of one ExecResponse, as the spec reads it."""
    stdout = response.get("stdout")
    exit_code = response.get("exit_code")
    code = exit_code if isinstance(exit_code, int) else -2
    outcome = spec.outcome(stdout if isinstance(stdout, str) else "", code, prepared.ctx)
    infra = outcome.verdict == "infra_error"
    return GradeResult(
        reward=0.0 if infra else outcome.reward,
        seed=response.get("seed") or prepared.seed,
        seed_ack=response.get("seed_ack"),
        exit_code=exit_code if isinstance(exit_code, int) else None,
        fork_time_ms=_float_or_none(response.get("fork_time_ms")),
        exec_time_ms=_float_or_none(response.get("exec_time_ms")),
        raw=dict(response),
        infra_error=infra,
        verdict=outcome.verdict,
        detail=outcome.detail,
        index=index,
        error=outcome.infra_message,
    )


def infra_result(error: BaseException, seed: str | None, index: int) -> GradeResult:
    """The placeholder of a slot whose grade failed for infrastructure
    reasons (``on_infra_error="zero"``): reward 0.0, loudly flagged."""
    return GradeResult(
        reward=0.0,
        seed=seed,
        infra_error=True,
        verdict="infra_error",
        index=index,
        error=f"{type(error).__name__}: {error}",
    )


class GraderInfraError(CollimateError):
    """The exec answered, but no reward could be computed for reasons that
    are not the candidate's (the grader never started, the candidate arrived
    altered, the spec's reference/generator is broken). ``result`` is the
    flagged GradeResult, with the guest's answer in ``raw``."""

    def __init__(self, message: str, result: GradeResult | None = None) -> None:
        super().__init__(message, None, "grader_infra_error")
        self.result = result


def _raise_if_infra(result: GradeResult) -> GradeResult:
    if result.infra_error:
        raise GraderInfraError(result.error or "grading failed for infrastructure reasons", result)
    return result


def _after_grade(result: GradeResult, candidate: str, index: int) -> None:
    from .plugins import get_plugin_manager

    hook = get_plugin_manager().hook.collimate_rl_after_grade
    if hook.get_hookimpls():
        hook(result=result, candidate=candidate, index=index)


def _exec(
    client: SessionClient, template_id: str, session_id: str | None, kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    if session_id is not None:
        return client.session_exec(session_id, **kwargs)
    return client.exec_once(template_id, **kwargs)


async def _exec_async(
    client: AsyncSessionClient,
    template_id: str,
    session_id: str | None,
    kwargs: Mapping[str, Any],
) -> dict[str, Any]:
    if session_id is not None:
        return await client.session_exec(session_id, **kwargs)
    return await client.exec_once(template_id, **kwargs)


def _needs_full(prepared: PreparedGrade, response: Mapping[str, Any]) -> bool:
    stdout = response.get("stdout")
    return (
        prepared.ctx.form != "full"
        and isinstance(stdout, str)
        and asked_for_full(stdout, prepared.ctx.nonce, NEED_FULL)
    )


def _grade_one(
    client: SessionClient,
    template_id: str,
    candidate: str,
    spec: RewardSpec,
    seed: str | None,
    timeout_seconds: int,
    session_id: str | None,
    index: int,
) -> GradeResult:
    key = runtime_forms.key(client, template_id, session_id)
    form = runtime_forms.get(key)
    prepared = prepare_grade(spec, candidate, seed=seed, timeout_seconds=timeout_seconds, form=form)
    response = _exec(client, template_id, session_id, prepared.exec_kwargs)
    if _needs_full(prepared, response):  # the target changed: send everything once
        runtime_forms.forget(key)
        prepared = prepare_grade(spec, candidate, seed=seed, timeout_seconds=timeout_seconds)
        response = _exec(client, template_id, session_id, prepared.exec_kwargs)
    result = result_from_response(spec, prepared, response, index)
    runtime_forms.learn(key, result)
    return _raise_if_infra(result)


async def _grade_one_async(
    client: AsyncSessionClient,
    template_id: str,
    candidate: str,
    spec: RewardSpec,
    seed: str | None,
    timeout_seconds: int,
    session_id: str | None,
    index: int,
) -> GradeResult:
    key = runtime_forms.key(client, template_id, session_id)
    form = runtime_forms.get(key)
    prepared = prepare_grade(spec, candidate, seed=seed, timeout_seconds=timeout_seconds, form=form)
    response = await _exec_async(client, template_id, session_id, prepared.exec_kwargs)
    if _needs_full(prepared, response):
        runtime_forms.forget(key)
        prepared = prepare_grade(spec, candidate, seed=seed, timeout_seconds=timeout_seconds)
        response = await _exec_async(client, template_id, session_id, prepared.exec_kwargs)
    result = result_from_response(spec, prepared, response, index)
    runtime_forms.learn(key, result)
    return _raise_if_infra(result)


def grade(
    client: SessionClient,
    template_id: str,
    candidate: str,
    spec: RewardSpec,
    *,
    seed: str | None = None,
    timeout_seconds: int = 30,
    session_id: str | None = None,
) -> GradeResult:
    """Grade one candidate in a fresh clone of ``template_id`` (or in the
    warm session ``session_id``). Infrastructure failures raise
    :class:`~collimate_rl.CollimateError`; task failures are rewards."""
    _check_seed(seed)
    _check_timeout(timeout_seconds)
    result = _grade_one(client, template_id, candidate, spec, seed, timeout_seconds, session_id, 0)
    _after_grade(result, candidate, 0)
    return result


async def grade_async(
    client: AsyncSessionClient,
    template_id: str,
    candidate: str,
    spec: RewardSpec,
    *,
    seed: str | None = None,
    timeout_seconds: int = 30,
    session_id: str | None = None,
) -> GradeResult:
    """:func:`grade` with an async client (``AsyncCollimateClient`` /
    ``AsyncGatewayClient``)."""
    _check_seed(seed)
    _check_timeout(timeout_seconds)
    result = await _grade_one_async(
        client, template_id, candidate, spec, seed, timeout_seconds, session_id, 0
    )
    _after_grade(result, candidate, 0)
    return result


def __getattr__(name: str) -> Any:
    """``grade_batch`` and ``grade_batch_async`` live in :mod:`.batch`, which
    builds on this module: re-exported lazily, without an import cycle."""
    if name in ("grade_batch", "grade_batch_async"):
        from . import batch

        return getattr(batch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
