"""``collimate rl``: K training steps of reward grading, live.

Each step grades a batch of rollouts as a trainer's reward call would:
the rows' completions against their ground truths through
:func:`~collimate_rl.grade_batch` (packed, at the target's width), so every
reward shown is a real grade. The rows come from ``--data`` (what
``collimate grade`` reads: JSONL or Parquet) or, without it, a built-in
sample: eight completions of one task (the demo's), graded with a property
reward under common random numbers.

The view: a step timeline (rollouts, wall time, rollouts/s, mean reward,
fork and grade p50), fork and grade percentiles over every step, the
verdict mix, and the warm-hit ratio and exec count from the server's own
counters (``GET /v1/stats``) when it serves them.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..plugins.events import Subcommands
from .draw import latency_lines, latency_table, stack
from .figures import percentiles
from .screen import Frame, Screen, wants_rich
from .target import DEFAULT_TEMPLATE, Target, add_target_options, open_target

__all__ = ["Rollouts", "StepRow", "add_rl_command", "run_rl", "sample_rollouts"]


def add_rl_command(subparsers: Subcommands) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "rl", help="K training steps of real reward grading, live: timeline and percentiles"
    )
    p.add_argument(
        "--data",
        help="a JSONL or Parquet file of rows, as `collimate grade` reads (default: a built-in "
        "sample task)",
    )
    p.add_argument("--steps", type=int, default=5, help="training steps (5)")
    p.add_argument("--batch", type=int, default=32, help="rollouts per step (32)")
    p.add_argument(
        "template",
        nargs="?",
        default=DEFAULT_TEMPLATE,
        help=f"template to grade in ({DEFAULT_TEMPLATE})",
    )
    p.add_argument("-c", "--concurrency", type=int, default=24, help="execs in flight (24)")
    p.add_argument(
        "--timeout",
        type=int,
        default=None,
        help="seconds per grade (10 with --data; 2 for the built-in sample, as the demo)",
    )
    p.add_argument(
        "--entry", default="solve", help="the function a row's code defines, when it names none"
    )
    add_target_options(p)
    p.set_defaults(func=run_rl)
    return p


@dataclass(frozen=True)
class Rollouts:
    """What a step draws from: code, its spec, its seed, one entry each."""

    codes: list[str]
    specs: list[Any]
    seeds: list[str | None]
    source: str

    def step(self, k: int, batch: int) -> tuple[list[str], list[Any], list[str | None]]:
        """Step ``k``'s batch: the next ``batch`` entries, cycling."""
        n = len(self.codes)
        idx = [(k * batch + i) % n for i in range(batch)]
        return (
            [self.codes[i] for i in idx],
            [self.specs[i] for i in idx],
            [self.seeds[i] for i in idx],
        )


def sample_rollouts() -> Rollouts:
    """The demo's group: eight completions of one task, one CRN seed."""
    from ..demo import GENERATOR, GROUP, REFERENCE
    from ..rewards import PropertyReward, extract_code
    from ..seeds import group_seeds

    spec = PropertyReward(reference=REFERENCE, generator=GENERATOR, k=16)
    codes = [extract_code(text) for _, text in GROUP]
    seeds = group_seeds(len(codes), "crn")
    return Rollouts(codes, [spec] * len(codes), seeds, "built-in sample (8 completions, 1 task)")


def file_rollouts(path: str, entry: str) -> Rollouts:
    """The valid rows of ``path``; raises ValueError when it has none."""
    from ..dataset_grading.rows import RowOptions, read_rows
    from ..dataset_grading.runner import row_seed

    read = read_rows(path, RowOptions(entry=entry))
    if not read.rows:
        first = f": {read.problems[0]}" if read.problems else ""
        raise ValueError(f"{path} has no row to grade{first}")
    rows = read.rows
    return Rollouts(
        [r.code for r in rows],
        [read.specs[r.spec_key] for r in rows],
        [row_seed(r, "crn") for r in rows],
        f"{path} ({len(rows)} rows, {len(read.problems)} skipped)",
    )


@dataclass
class StepRow:
    step: int
    rollouts: int
    wall_s: float
    mean_reward: float
    fork_p50: float
    grade_p50: float
    infra: int


class _Stoppable:
    """The target's client, refusing new execs once stopped, so an
    interrupted step ends with the execs already in flight."""

    def __init__(self, client: Any, stop: threading.Event) -> None:
        self._client, self._stop = client, stop

    def exec_once(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if self._stop.is_set():
            from ..dataset_grading.runner import GradingHalted

            raise GradingHalted()
        result: dict[str, Any] = self._client.exec_once(*args, **kwargs)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class RlRun:
    """The steps of one run, their samples and its frames."""

    def __init__(self, target: Target, args: argparse.Namespace, rollouts: Rollouts) -> None:
        self.target, self.args, self.rollouts = target, args, rollouts
        self.timeout: int = args.timeout or (10 if args.data else 2)
        self.stop = threading.Event()
        self.timeline: list[StepRow] = []
        self.fork: list[float] = []
        self.grade: list[float] = []
        self.rewards: list[float] = []
        self.verdicts: Counter[str] = Counter()
        self.first_stats = target.stats()
        self.last_stats = self.first_stats
        self.graded_s = 0.0
        self._step_results: list[Any] = []
        self._lock = threading.Lock()

    def _on_result(self, _i: int, result: Any) -> None:
        if result.infra_error and self.stop.is_set():
            return  # not graded: refused after Ctrl-C
        with self._lock:
            self._step_results.append(result)

    def run_step(self, k: int) -> None:
        from ..batch import grade_batch

        codes, specs, seeds = self.rollouts.step(k, self.args.batch)
        with self._lock:
            self._step_results = []
        t0 = time.perf_counter()
        grade_batch(
            _Stoppable(self.target.client, self.stop),
            self.args.template,
            codes,
            specs,
            seeds=seeds,
            timeout_seconds=self.timeout,
            concurrency=self.args.concurrency,
            on_infra_error="zero",
            on_result=self._on_result,
        )
        wall = time.perf_counter() - t0
        with self._lock:
            results = list(self._step_results)
        forks = [r.fork_time_ms for r in results if r.fork_time_ms is not None]
        grades = [r.exec_time_ms for r in results if r.exec_time_ms is not None]
        rewards = [r.reward for r in results]
        self.fork += forks
        self.grade += grades
        self.rewards += rewards
        self.verdicts.update(
            "infra_error" if r.infra_error else (r.verdict or "?") for r in results
        )
        self.graded_s += wall
        self.timeline.append(
            StepRow(
                step=k + 1,
                rollouts=len(results),
                wall_s=wall,
                mean_reward=sum(rewards) / len(rewards) if rewards else 0.0,
                fork_p50=percentiles(forks, (50.0,))[50.0],
                grade_p50=percentiles(grades, (50.0,))[50.0],
                infra=sum(1 for r in results if r.infra_error),
            )
        )
        self.last_stats = self.target.stats() or self.last_stats

    def _server_lines(self) -> list[str]:
        a, b = self.first_stats, self.last_stats
        if a is None or b is None:
            return ["server counters: not served by this target (no /v1/stats)"]

        def delta(*path: str) -> int:
            def get(d: Any) -> int:
                for key in path:
                    d = d.get(key) if isinstance(d, dict) else None
                return int(d) if isinstance(d, (int, float)) else 0

            return get(b) - get(a)

        hits, misses = delta("clones", "pool_hits"), delta("clones", "pool_misses")
        ratio = f"{100 * hits / (hits + misses):.0f}%" if hits + misses else "-"
        return [
            f"server: +{delta('execs_run')} execs for {len(self.rewards)} rollouts (packed); "
            f"warm hits {ratio} ({hits} from the pool, {misses} forked on demand)"
        ]

    def frame(self, *, final: bool = False) -> Frame:
        n = len(self.rewards)
        rate = n / self.graded_s if self.graded_s > 0 else 0.0
        mean = sum(self.rewards) / n if n else 0.0
        head = (
            f"rl: step {len(self.timeline)}/{self.args.steps}, {n} rollouts graded, "
            f"{rate:.1f} rollouts/s, mean reward {mean:.3f}"
        )
        rows = [
            f"  step {s.step}: {s.rollouts} rollouts in {s.wall_s:.2f} s, "
            f"R {s.mean_reward:.3f}, fork p50 {s.fork_p50:.1f} ms, grade p50 {s.grade_p50:.1f} ms"
            + (f", {s.infra} infra errors" if s.infra else "")
            for s in self.timeline
        ]
        mix = ", ".join(f"{v} {c}" for v, c in sorted(self.verdicts.items()))
        series = {"fork": self.fork, "grade": self.grade}
        server = self._server_lines()
        plain = [head]
        if final:
            plain += [
                f"data: {self.rollouts.source}",
                *rows,
                *latency_lines(series),
                f"verdicts: {mix or '-'}",
                *server,
            ]

        def rich() -> Any:
            from rich.table import Table
            from rich.text import Text

            table = Table(title=Text(head), title_justify="left")
            for col in ("step", "rollouts", "wall s", "rollouts/s", "R", "fork p50", "grade p50"):
                table.add_column(col, justify="right")
            for s in self.timeline:
                table.add_row(
                    str(s.step),
                    str(s.rollouts),
                    f"{s.wall_s:.2f}",
                    f"{s.rollouts / s.wall_s if s.wall_s else 0:.1f}",
                    f"{s.mean_reward:.3f}",
                    f"{s.fork_p50:.1f}",
                    f"{s.grade_p50:.1f}",
                )
            parts: list[Any] = [table, latency_table("latency (all steps)", series)]
            parts += [f"verdicts: {mix or '-'}", *server]
            if final:
                parts.insert(0, f"data: {self.rollouts.source}")
            return stack(*parts)

        return Frame(plain, rich)


def _step_in_thread(run: RlRun, k: int, redraw: Any) -> None:
    """Step ``k`` on a worker thread while this one redraws; Ctrl-C stops
    new execs, waits for those in flight, and re-raises."""
    failure: list[BaseException] = []

    def work() -> None:
        try:
            run.run_step(k)
        except BaseException as exc:  # handed to the calling thread
            failure.append(exc)

    worker = threading.Thread(target=work, name="collimate-rl-step")
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)
            redraw()
    except KeyboardInterrupt:
        run.stop.set()
        worker.join()
        raise
    if failure:
        raise failure[0]


def run_rl(args: argparse.Namespace) -> int:
    if args.steps < 1 or args.batch < 1 or args.concurrency < 1:
        print("collimate rl: --steps, --batch and -c must be at least 1", file=sys.stderr)
        return 2
    from ..dataset_grading.parquet import InputError

    try:
        rollouts = file_rollouts(args.data, args.entry) if args.data else sample_rollouts()
    except (OSError, ValueError, InputError) as exc:
        print(f"collimate rl: {exc}", file=sys.stderr)
        return 2
    out = sys.stdout
    interrupted = False
    with open_target(args) as target:
        run = RlRun(target, args, rollouts)
        with Screen(out, rich=wants_rich(out, plain=args.plain)) as screen:
            screen.line(f"rl on {target.where}: {rollouts.source}")
            try:
                for k in range(args.steps):
                    _step_in_thread(run, k, lambda: screen.update(run.frame()))
                    screen.update(run.frame())
            except KeyboardInterrupt:
                interrupted = True
            screen.final(run.frame(final=True))
    return 130 if interrupted else 0
