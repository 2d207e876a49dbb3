"""Reading what a grader printed: framed verdicts and the bare reward line.

Two conventions are understood, in this order:

1. the framed verdict of the built-in graders: a line
   ``__COLLIMATE_VERDICT__<nonce> <JSON object>``; the LAST such line with
   the expected nonce wins, so noise before or after it changes nothing;
2. for custom graders: a ``COLLIMATE_REWARD=<float>`` line (last one wins),
   else the last non-empty line parsed as a float (the earlier release's
   convention).

Rewards are clamped to ``[0, 1]``; NaN and unparsable output read as 0.0.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "REWARD_LINE_PREFIX",
    "VERDICT_MARKER",
    "FramedVerdict",
    "asked_for_full",
    "clamp_reward",
    "last_verdict_any_nonce",
    "parse_reward_text",
    "read_frames",
]

VERDICT_MARKER: Final = "__COLLIMATE_VERDICT__"


def _decode(text: str) -> Any:
    """A verdict payload: JSON (``json`` is thread-safe and fast, where
    ``ast.literal_eval`` is neither on CPython 3.11)."""
    return json.loads(text)


def _verdict_in(payload: str) -> dict[str, Any] | None:
    """The verdict object a frame's payload carries, None when it carries
    none (not JSON, too deep, or not an object)."""
    try:
        parsed = _decode(payload)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


REWARD_LINE_PREFIX: Final = "COLLIMATE_REWARD="


def clamp_reward(value: Any) -> float:
    """A float in ``[0, 1]``; NaN and non-numbers are 0.0 (never a free pass)."""
    try:
        reward = float(value)
    except (TypeError, ValueError):
        return 0.0
    if math.isnan(reward):
        return 0.0
    return min(1.0, max(0.0, reward))


@dataclass(frozen=True)
class FramedVerdict:
    """What the frames of one grader run said.

    ``started`` is False when the grader never wrote its hello frame (it did
    not run at all); ``verdict`` is None when it started but never finished.
    """

    started: bool
    verdict: dict[str, Any] | None
    frames: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def read_frames(stdout: str, nonce: str) -> FramedVerdict:
    """Scan ``stdout`` for the frames carrying ``nonce``."""
    head = f"{VERDICT_MARKER}{nonce} "
    started = False
    verdict: dict[str, Any] | None = None
    frames = 0
    if head not in stdout:
        return FramedVerdict(False, None)
    for line in stdout.splitlines():
        if not line.startswith(head):
            continue
        payload = line[len(head) :]
        if payload == "hello":
            started = True
            continue
        frames += 1
        parsed = _verdict_in(payload)
        if parsed is not None:
            verdict = parsed
    return FramedVerdict(started, verdict, frames)


def asked_for_full(stdout: str, nonce: str, payload: str = "need-full") -> bool:
    """The guest could not use the program form it got and asks for the full one."""
    return f"{VERDICT_MARKER}{nonce} {payload}" in stdout


def last_verdict_any_nonce(stdout: str) -> dict[str, Any] | None:
    """The last framed verdict whatever its nonce (for ``spec.parse`` on an
    output captured elsewhere); None when there is none."""
    found: dict[str, Any] | None = None
    if VERDICT_MARKER not in stdout:
        return None
    for line in stdout.splitlines():
        if not line.startswith(VERDICT_MARKER):
            continue
        _, sep, payload = line.partition(" ")
        if not sep or payload == "hello":
            continue
        parsed = _verdict_in(payload)
        if parsed is not None:
            found = parsed
    return found


def parse_reward_text(stdout: str) -> float:
    """The reward of a custom grader's output (see the module docstring)."""
    lines = [line.strip() for line in stdout.splitlines()]
    for line in reversed(lines):
        if line.startswith(REWARD_LINE_PREFIX):
            return clamp_reward(line[len(REWARD_LINE_PREFIX) :].strip())
    for line in reversed(lines):
        if line:
            return clamp_reward(line)
    return 0.0
