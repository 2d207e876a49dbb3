"""``collimate burst``: N sandbox lifecycles (create, one exec, delete) at
concurrency C, with each phase timed on its own.

The final frame: how many lifecycles completed and failed, the percentiles
of each phase and of the whole, a histogram of lifecycle latencies, and the
rate. Every sandbox created is deleted, a failed or interrupted run
included; ``exec_ok`` counts execs that exited 0.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

from ..plugins.events import Subcommands
from .draw import histogram_lines, histogram_panel, latency_lines, latency_table, stack
from .fanout import FanRun, add_fan_options
from .figures import Samples
from .screen import Frame, Screen, wants_rich
from .target import Target, add_target_options, open_target

__all__ = ["BurstRun", "add_burst_command", "run_burst"]

#: The exec of each lifecycle: a trivial interpreter one-liner, so the figures
#: measure the sandbox's lifecycle rather than the work done in it.
DEFAULT_EXEC = 'python3 -c "import os; print(os.getpid())"'


def add_burst_command(subparsers: Subcommands) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "burst", help="create, exec and delete N sandboxes at concurrency C; latency figures"
    )
    add_fan_options(
        p, n=50, n_help="lifecycles to run", concurrency=8, concurrency_help="lifecycles at once"
    )
    p.add_argument("--exec-cmd", default=DEFAULT_EXEC, help="the command each sandbox runs")
    p.add_argument("--timeout", type=int, default=30, help="seconds per exec (30)")
    add_target_options(p)
    p.set_defaults(func=run_burst)
    return p


class BurstRun(FanRun):
    """The samples of one burst and its frames."""

    def __init__(self, target: Target, args: argparse.Namespace) -> None:
        self.create, self.exec, self.delete, self.total = Samples(), Samples(), Samples(), Samples()
        self.exec_ok = 0
        self._lock = threading.Lock()
        super().__init__(target, args, self._lifecycle)
        self.wall = 0.0

    def _lifecycle(self, _i: int) -> None:
        t0 = time.perf_counter()
        sid = str(self.ledger.create(self.args.template)["session_id"])
        t1 = time.perf_counter()
        try:
            res = self.ledger.client.session_exec(
                sid, command=self.args.exec_cmd, timeout_seconds=self.args.timeout
            )
        finally:
            t2 = time.perf_counter()
            self.ledger.delete(sid)
        t3 = time.perf_counter()
        if res.get("exit_code") == 0:
            with self._lock:
                self.exec_ok += 1
        self.create.add((t1 - t0) * 1000)
        self.exec.add((t2 - t1) * 1000)
        self.delete.add((t3 - t2) * 1000)
        self.total.add((t3 - t0) * 1000)

    def headline(self) -> str:
        elapsed = self.wall or (time.perf_counter() - self.started)
        rate = self.fan.done / elapsed if elapsed > 0 else 0.0
        return (
            f"burst {self.args.template}: {self.fan.done}/{self.args.n} done, "
            f"{self.fan.failed} failed, {self.ledger.live} live, "
            f"{rate:.1f}/s at concurrency {self.args.concurrency}"
        )

    def frame(self, *, final: bool = False) -> Frame:
        series = {
            "create": self.create.values(),
            "exec": self.exec.values(),
            "delete": self.delete.values(),
            "lifecycle": self.total.values(),
        }
        head = self.headline()
        plain = [head]
        if final:
            plain += [
                f"execs: {len(series['exec'])} answered, {self.exec_ok} exited 0; "
                f"wall {self.wall:.2f} s",
                *latency_lines(series),
                "lifecycle histogram:",
                *histogram_lines(series["lifecycle"]),
                *(f"error: {e}" for e in self.fan.errors),
            ]

        def rich() -> Any:
            parts: list[Any] = [head, latency_table("latency", series)]
            parts.append(histogram_panel("lifecycle ms", series["lifecycle"]))
            if final:
                parts.insert(1, plain[1])
                parts += [f"error: {e}" for e in self.fan.errors]
            return stack(*parts)

        return Frame(plain, rich)


def run_burst(args: argparse.Namespace) -> int:
    if args.n < 1 or args.concurrency < 1:
        print("collimate burst: -n and -c must be at least 1", file=sys.stderr)
        return 2
    out = sys.stdout
    with open_target(args) as target:
        run = BurstRun(target, args)
        with Screen(out, rich=wants_rich(out, plain=args.plain)) as screen:
            screen.line(f"burst on {target.where}")
            try:
                finished = run.fan.run(lambda: screen.update(run.frame()))
            finally:
                left = run.ledger.delete_all()
            run.wall = time.perf_counter() - run.started
            screen.final(run.frame(final=True))
            if left:
                screen.line(f"deleted {left} sandboxes left by the interruption")
    if not finished:
        return 130
    return 0 if run.fan.failed == 0 else 1
