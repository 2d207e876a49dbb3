"""A batch's results, in the caller's order, with its failure mode.

Results arrive in whatever order their execs finish; :class:`Collector`
puts each in its candidate's place, applies ``on_infra_error`` (``raise``:
the first error is kept and stops the batch; ``zero``: a flagged 0.0;
``skip``: dropped at the end), and tells ``on_result``, the
``collimate_rl_after_grade`` observers and the progress bar, all on the
caller's thread or loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import CollimateError
from .plan import Job
from .result import Graded, GradeResult, after_grade, infra_result

__all__ = ["Collector", "Progress", "ResultCallback"]

ResultCallback = Callable[[int, GradeResult], None]


class Progress:
    """A Rich progress bar when asked for and Rich is installed; else nothing."""

    def __init__(self, enabled: bool, total: int) -> None:
        self._bar: Any = None
        self._task: Any = None
        if not enabled:
            return
        try:
            from rich.progress import Progress as RichProgress
        except ImportError:
            return
        self._bar = RichProgress(transient=False)
        self._task = self._bar.add_task("grading", total=total)

    @contextmanager
    def running(self) -> Iterator[Progress]:
        if self._bar is None:
            yield self
            return
        with self._bar:
            yield self

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.advance(self._task)


class Collector:
    """Positional results plus the first error that stops the batch."""

    def __init__(
        self,
        total: int,
        on_infra_error: str,
        on_result: ResultCallback | None,
        progress: Progress,
    ) -> None:
        self.mode = on_infra_error
        self.on_result = on_result
        self.progress = progress
        self.results: list[GradeResult | None] = [None] * total
        self.first_error: BaseException | None = None

    @property
    def stopped(self) -> bool:
        """No new grade should start (``raise`` met an error, or a bug did)."""
        return self.first_error is not None

    def done(self, job: Job, outcome: Graded) -> None:
        """Record one finished grade (on the caller's thread or loop)."""
        if isinstance(outcome, BaseException):
            if not isinstance(outcome, CollimateError) or self.mode == "raise":
                if self.first_error is None:
                    self.first_error = outcome
                return
            flagged = getattr(outcome, "result", None)
            if isinstance(flagged, GradeResult):
                result = flagged  # the guest answered: keep its transcript
            else:
                result = infra_result(outcome, job.seed, job.index)
        else:
            result = outcome
        self.results[job.index] = result
        after_grade(result, job.candidate, job.index)
        if self.on_result is not None:
            self.on_result(job.index, result)
        self.progress.advance()

    def final(self) -> list[GradeResult]:
        if self.first_error is not None:
            raise self.first_error
        out = [r for r in self.results if r is not None]
        if self.mode == "skip":
            return [r for r in out if not r.infra_error]
        return out
