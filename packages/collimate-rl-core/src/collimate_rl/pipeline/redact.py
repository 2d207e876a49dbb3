"""What a policy must never read of a result: the lines of its ground truth.

The grader's per-test messages are meant for the trainer's logs; a failing
assert is reported with its statement (``AssertionError: assert add(1, 2)
== 3``), a wrong answer may show the expected value. Feedback that reaches
the policy (a multi-turn environment's next observation: SkyRL's
``collimate_code``, OpenEnv's code environment) must not quote the tests, or
the policy learns the answers instead of the task: every message that
quotes a line of the ground truth (a test, a check, an expected output:
every string in it, JSON documents decoded) is left out.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from .result import GradeResult

__all__ = ["MIN_SEALED", "quotes", "sealed_lines", "sealed_result"]

#: Lines shorter than this are not looked for (an expected ``4`` may
#: appear in any message).
MIN_SEALED: Final = 8


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
        text = value.strip()
        if text[:1] in ("{", "["):  # a JSON document (APPS' input_output): its strings too
            try:
                decoded = json.loads(text)
            except ValueError:
                return
            if not isinstance(decoded, str):
                yield from _strings(decoded)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def sealed_lines(ground_truth: Any) -> frozenset[str]:
    """The stripped lines (at least :data:`MIN_SEALED` long) of every
    string in ``ground_truth``."""
    return frozenset(
        line.strip()
        for text in _strings(ground_truth)
        for line in text.splitlines()
        if len(line.strip()) >= MIN_SEALED
    )


def quotes(text: str, sealed: frozenset[str]) -> bool:
    """Whether ``text`` quotes one of the ``sealed`` lines."""
    return any(line in text for line in sealed)


def _policy_entry(entry: Any, sealed: frozenset[str]) -> Any:
    """A failing test's record as a policy may read it: never its
    ``statement`` (a bare assert's source, for the trainer's log), and no
    message quoting a sealed line."""
    if not isinstance(entry, Mapping):
        return entry
    shown = {k: v for k, v in entry.items() if k != "statement"}
    if quotes(str(shown.get("message") or ""), sealed):
        shown["message"] = ""
    return shown


def sealed_result(result: GradeResult, sealed: frozenset[str]) -> GradeResult:
    """``result`` as a policy may read it: every message that quotes a sealed
    line emptied (the failing tests' messages, the load error, the error),
    and the failing tests' statements left out."""
    detail = dict(result.detail or {})
    failed = detail.get("failed")
    if isinstance(failed, list):
        detail["failed"] = [_policy_entry(f, sealed) for f in failed]
    load_error = detail.get("load_error")
    if load_error and quotes(str(load_error), sealed):
        detail["load_error"] = "the candidate did not load"
    error = result.error
    if error and quotes(error, sealed):
        error = None
    return dataclasses.replace(result, detail=detail, error=error)
