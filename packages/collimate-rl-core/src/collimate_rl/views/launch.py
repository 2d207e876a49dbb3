"""``collimate launch``: a create-only fan-out: N sandboxes brought up at
concurrency C and held, no exec, with a big live counter.

After ``--hold`` seconds with all of them up (or at Ctrl-C) every sandbox
created is deleted, and the final frame gives the count, the create
latencies and the rate. Unlike a launch that leaves its fleet running,
nothing outlives the command.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..plugins.events import Subcommands
from .draw import histogram_lines, histogram_panel, latency_lines, latency_table, stack
from .fanout import FanRun, add_fan_options
from .figures import Samples
from .screen import Frame, Screen, wants_rich
from .target import Target, add_target_options, open_target

__all__ = ["LaunchRun", "add_launch_command", "run_launch"]


def add_launch_command(subparsers: Subcommands) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "launch", help="create N sandboxes at concurrency C (no exec), hold them, delete them"
    )
    add_fan_options(
        p, n=100, n_help="sandboxes to create", concurrency=16, concurrency_help="creates at once"
    )
    p.add_argument(
        "--hold", type=float, default=1.0, help="seconds to hold them all up before deleting (1)"
    )
    add_target_options(p)
    p.set_defaults(func=run_launch)
    return p


class LaunchRun(FanRun):
    """The creates of one launch and its frames."""

    def __init__(self, target: Target, args: argparse.Namespace) -> None:
        self.create = Samples()
        super().__init__(target, args, self._create)
        self.up_after = 0.0  # seconds until the last create answered
        self.deleted = 0

    def _create(self, _i: int) -> None:
        t0 = time.perf_counter()
        self.ledger.create(self.args.template)
        self.create.add((time.perf_counter() - t0) * 1000)

    def frame(self, *, final: bool = False) -> Frame:
        up = len(self.create)
        elapsed = self.up_after or (time.perf_counter() - self.started)
        rate = up / elapsed if elapsed > 0 else 0.0
        head = (
            f"launch {self.args.template}: {up}/{self.args.n} sandboxes up, "
            f"{self.fan.failed} failed, {rate:.1f} creates/s, {elapsed:.2f} s"
        )
        plain = [head]
        if final:
            plain += [
                f"deleted: {self.deleted}",
                *latency_lines({"create": self.create.values()}),
                "create histogram:",
                *histogram_lines(self.create.values()),
                *(f"error: {e}" for e in self.fan.errors),
            ]

        def rich() -> Any:
            from rich.align import Align
            from rich.panel import Panel
            from rich.text import Text

            big = Text(f"{up:,} / {self.args.n:,}", style="bold cyan", justify="center")
            parts: list[Any] = [
                Panel(Align.center(big), title="sandboxes up", subtitle=f"{rate:.1f} creates/s"),
                latency_table("create latency", {"create": self.create.values()}),
                histogram_panel("create ms", self.create.values(), 8),
            ]
            if final:
                parts.append(f"{elapsed:.2f} s to bring them up; deleted {self.deleted}")
                parts += [f"error: {e}" for e in self.fan.errors]
            return stack(*parts)

        return Frame(plain, rich)


def _hold(seconds: float, redraw: Any) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(min(0.1, max(0.0, end - time.monotonic())))
        redraw()


def run_launch(args: argparse.Namespace) -> int:
    if args.n < 1 or args.concurrency < 1 or args.hold < 0:
        print("collimate launch: -n and -c must be at least 1, --hold >= 0", file=sys.stderr)
        return 2
    out = sys.stdout
    interrupted = False
    with open_target(args) as target:
        run = LaunchRun(target, args)
        with Screen(out, rich=wants_rich(out, plain=args.plain)) as screen:
            screen.line(f"launch on {target.where}")
            try:
                interrupted = not run.fan.run(lambda: screen.update(run.frame()))
                run.up_after = time.perf_counter() - run.started
                if not interrupted:
                    _hold(args.hold, lambda: screen.update(run.frame()))
            except KeyboardInterrupt:
                interrupted = True
            finally:
                run.up_after = run.up_after or time.perf_counter() - run.started
                run.deleted = run.ledger.delete_all()
            screen.final(run.frame(final=True))
    if interrupted:
        return 130
    return 0 if run.fan.failed == 0 else 1
