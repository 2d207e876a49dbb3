"""The reward-spec contract: build an in-guest grader, read its verdict.

A :class:`RewardSpec` is the seed's two-method contract: ``build(path)``
returns the grader program (run as exec ``code``) for a candidate delivered at
``path``, and ``parse(stdout)`` turns the program's output into a reward.
Custom specs implement just those two (a ``COLLIMATE_REWARD=<x>`` line, or the
last line as a float, is read by the default ``parse``).

``grade`` talks to specs through two richer methods with safe defaults,
:meth:`RewardSpec.program` and :meth:`RewardSpec.outcome`, so the built-in
graders (:class:`GuestReward`) can carry a per-grade nonce, a delivery check,
a time budget and per-test detail without changing the seed's contract.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..guest.grader.wire import checksum
from .program import RuntimeForm, guest_program, py_literal
from .verdict import (
    VERDICT_MARKER,
    FramedVerdict,
    clamp_reward,
    last_verdict_any_nonce,
    parse_reward_text,
    read_frames,
)

__all__ = [
    "CANDIDATE_DIR",
    "SCORINGS",
    "GradeContext",
    "GuestReward",
    "Outcome",
    "RewardSpec",
    "Verdict",
    "budget_for",
    "candidate_context",
]

Verdict = Literal["passed", "failed", "infra_error"]

#: Where candidates are delivered in the guest (one unique file per grade).
CANDIDATE_DIR: Final = "/tmp"
#: How a kind turns passed tests into a reward (see ``GuestReward.scoring``).
SCORINGS: Final = ("fraction", "all")


def sealed_path(key: str) -> str:
    """Where a grade's (or a pack spec's) sealed test data is delivered."""
    return f"{CANDIDATE_DIR}/collimate_sealed_{key}.py"


class _Item:
    """A pack item for :meth:`GuestReward.pack_program` (spec, ctx, seed)."""

    def __init__(self, spec: GuestReward, ctx: GradeContext, seed: str) -> None:
        self.spec = spec
        self.ctx = ctx
        self.seed = seed


_TAIL = 400


@dataclass(frozen=True)
class GradeContext:
    """Everything about one grade that the program and its reading share."""

    nonce: str
    candidate_path: str
    timeout_seconds: float
    candidate_size: int | None = None
    candidate_crc: int | None = None
    #: How much of the grader runtime to ship (see :mod:`.program`).
    form: RuntimeForm = "full"


def candidate_context(
    candidate: str, nonce: str, timeout_seconds: float, form: RuntimeForm = "full"
) -> GradeContext:
    """The context of grading ``candidate`` (its delivered bytes follow the
    files rule: a trailing newline is appended when missing)."""
    data = delivered_text(candidate).encode("utf-8")
    return GradeContext(
        nonce=nonce,
        candidate_path=f"{CANDIDATE_DIR}/collimate_candidate_{nonce}.py",
        timeout_seconds=float(timeout_seconds),
        candidate_size=len(data),
        candidate_crc=checksum(data),
        form=form,
    )


def delivered_text(candidate: str) -> str:
    """The text a ``files`` entry really writes: ends with exactly the
    newline the guest would append anyway, so sizes match byte for byte."""
    return candidate if candidate.endswith("\n") else candidate + "\n"


def budget_for(timeout_seconds: float) -> float:
    """The grader's own deadline: the exec timeout minus a margin, so it can
    still write a verdict (with partial credit) before the guest kills it."""
    margin = min(2.0, max(0.2, 0.15 * timeout_seconds))
    return max(0.05, timeout_seconds - margin)


@dataclass(frozen=True)
class Outcome:
    """A spec's reading of one exec: reward, three-way verdict, and detail."""

    reward: float
    verdict: Verdict
    detail: dict[str, Any] = field(default_factory=dict)
    infra_message: str | None = None


def _tail(text: str) -> str:
    return text[-_TAIL:]


class RewardSpec(abc.ABC):
    """Builds an in-guest grader program and parses its reward."""

    #: The guest interpreter the program is written for (informational).
    interpreter: str = "python3"

    @abc.abstractmethod
    def build(self, candidate_path: str) -> str:
        """The grader program for a candidate written at ``candidate_path``."""

    def parse(self, stdout: str) -> float:
        """The reward in ``[0, 1]`` from the grader's merged output: the last
        ``COLLIMATE_REWARD=<x>`` line, else the last non-empty line as a
        float; anything unreadable is 0.0."""
        return parse_reward_text(stdout)

    def program(self, ctx: GradeContext) -> str:
        """What ``grade`` sends as exec ``code`` (default: :meth:`build`)."""
        return self.build(ctx.candidate_path)

    def program_files(self, ctx: GradeContext) -> list[dict[str, str]]:
        """Files the program needs besides the candidate (default: none)."""
        return []

    def outcome(self, stdout: str, exit_code: int, ctx: GradeContext) -> Outcome:
        """What ``grade`` reports (default: :meth:`parse`, plus the timeout
        flag). A custom grader has no frames, so it cannot tell a broken
        guest from a broken candidate: everything is a task outcome."""
        reward = clamp_reward(self.parse(stdout))
        detail: dict[str, Any] = {}
        if exit_code == -1:
            detail["timeout"] = True
        return Outcome(reward, "passed" if reward >= 1.0 else "failed", detail)


class GuestReward(RewardSpec):
    """Base of the built-in graders: they run :mod:`..guest.grader`.

    Subclasses name their ``kind`` and return their data from
    :meth:`guest_config`; this class adds the framing, the delivery check and
    the time budget, and reads framed verdicts with per-test detail.
    """

    kind: str = ""
    entry: str = "solve"
    test_timeout: float | None = None
    tol: float | None = 1e-9

    @abc.abstractmethod
    def guest_config(self) -> Mapping[str, Any]:
        """Kind-specific, JSON-like data for the guest runtime."""

    #: ``"fraction"``: the share of tests passed; ``"all"``: 1.0 only when
    #: every test passes (DeepCoder's scoring), else 0.0.
    scoring: str = "fraction"

    def program(self, ctx: GradeContext) -> str:
        return guest_program(self._config(ctx), form=ctx.form)

    def program_files(self, ctx: GradeContext) -> list[dict[str, str]]:
        """The sealed data: what decides the reward, delivered as a file the
        grader reads and removes before the candidate runs (never in the
        exec's code, which the guest may hold where the candidate runs)."""
        return [{"path": sealed_path(ctx.nonce), "content": self._sealed()[0]}]

    def _sealed(self) -> tuple[str, int, int]:
        """The sealed file's text, byte size and checksum (made once per spec)."""
        cached: tuple[str, int, int] | None = self.__dict__.get("_sealed_cache")
        if cached is None:
            text = delivered_text(py_literal(dict(self.guest_config())))
            data = text.encode("utf-8")
            cached = (text, len(data), checksum(data))
            self.__dict__["_sealed_cache"] = cached
        return cached

    def pack_program(
        self, nonce: str, items: Sequence[tuple[GradeContext, str]], form: RuntimeForm = "full"
    ) -> str:
        """One program grading several candidates of this spec, one after
        another (see :meth:`pack_parts`, which also gives the files)."""
        return self.pack_parts(nonce, [_Item(self, ctx, seed) for ctx, seed in items], form)[0]

    @staticmethod
    def pack_parts(
        nonce: str, items: Sequence[Any], form: RuntimeForm = "full"
    ) -> tuple[str, list[dict[str, str]]]:
        """The code of a pack grading ``items`` (each with ``spec``, ``ctx``
        and ``seed``, e.g. :class:`.shipping.PackItem`), one after another,
        each as it would be graded alone with its exec seed and framed with
        its own nonce; ``nonce`` frames the pack's own lines. Items may
        carry different specs: each distinct spec ships one sealed file."""
        if not items:
            raise ValueError("a pack needs at least one candidate")
        order: dict[int, int] = {}
        specs: list[dict[str, Any]] = []
        files: list[dict[str, str]] = []
        entries = []
        for it in items:
            spec = it.spec
            if not isinstance(spec, GuestReward):
                raise TypeError(f"a pack grades built-in reward kinds, not {type(spec).__name__}")
            at = order.get(id(spec))
            if at is None:
                at = order[id(spec)] = len(specs)
                path = sealed_path(f"{nonce}_{at}")
                config = spec._config(it.ctx, path)
                specs.append(config)
                files.append({"path": path, "content": spec._sealed()[0]})
            ctx = it.ctx
            entries.append(
                {
                    "nonce": ctx.nonce,
                    "path": ctx.candidate_path,
                    "size": ctx.candidate_size,
                    "crc": ctx.candidate_crc,
                    "seed": it.seed,
                    "spec": at,
                }
            )
        config = {"marker": VERDICT_MARKER, "nonce": nonce, "pack": entries, "specs": specs}
        return guest_program(config, form=form), files

    def _config(self, ctx: GradeContext, sealed_at: str | None = None) -> dict[str, Any]:
        """The public config (nothing of it decides a reward): where things
        are, the entry point, the time budget, and where the sealed data is."""
        _text, size, crc = self._sealed()
        return {
            "kind": self.kind,
            "marker": VERDICT_MARKER,
            "nonce": ctx.nonce,
            "path": ctx.candidate_path,
            "module": "candidate",
            "entry": self.entry,
            "size": ctx.candidate_size,
            "crc": ctx.candidate_crc,
            "budget": budget_for(ctx.timeout_seconds),
            "test_timeout": self.test_timeout,
            "tol": self.tol,
            "sealed": {"path": sealed_at or sealed_path(ctx.nonce), "size": size, "crc": crc},
        }

    def build(self, candidate_path: str) -> str:
        """A grader for the seed's two-method contract (no delivery check,
        30 s budget). Its sealed data is written by the program itself
        before the grader starts: a caller of ``build`` ships no other file."""
        ctx = GradeContext("", candidate_path, 30.0)
        text = self._sealed()[0]
        return f"open({sealed_path('')!r}, 'w', encoding='utf-8').write({text!r})\n" + self.program(
            ctx
        )

    def parse(self, stdout: str) -> float:
        verdict = last_verdict_any_nonce(stdout)
        if verdict is None:
            return 0.0
        return clamp_reward(verdict.get("reward"))

    def outcome(self, stdout: str, exit_code: int, ctx: GradeContext) -> Outcome:
        return self.outcome_from_frames(read_frames(stdout, ctx.nonce), stdout, exit_code)

    def outcome_from_frames(self, frames: FramedVerdict, stdout: str, exit_code: int) -> Outcome:
        """:meth:`outcome` once the frames are read (a pack reads them first,
        to know which candidates it graded, and is not made to read them twice)."""
        if not frames.started:
            return Outcome(
                0.0,
                "infra_error",
                {"exit_code": exit_code, "output_tail": _tail(stdout)},
                f"the grader never started in the guest (exit code {exit_code}); "
                f"is the template a python template? output: {_tail(stdout)!r}",
            )
        verdict = frames.verdict
        if verdict is None:
            timed_out = exit_code == -1
            detail = {
                "timeout": timed_out,
                "exit_code": exit_code,
                "message": (
                    "the exec timed out before the grader finished"
                    if timed_out
                    else "the candidate ended the grader before it wrote its verdict"
                ),
            }
            return Outcome(0.0, "failed", detail)
        for infra_key in ("delivery_error", "grader_error", "environment_error"):
            if verdict.get(infra_key):
                return Outcome(0.0, "infra_error", dict(verdict), str(verdict[infra_key]))
        reward = clamp_reward(verdict.get("reward"))
        scored: dict[str, Any] = {k: v for k, v in verdict.items() if k != "reward"}
        if self.scoring == "all" and reward < 1.0:
            scored["fraction"] = reward
            reward = 0.0
        return Outcome(reward, "passed" if reward >= 1.0 else "failed", scored)
