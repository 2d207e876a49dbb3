"""``collimate demo``: the one-command tour as a live view: bake an image
into a template, watch its warm pool converge, then grade a GRPO group in
it for a few rounds (the completions and reward of
``python -m collimate_rl.demo``), each reward a real grade.

On the embedded backend (the default) the bake goes through its gateway
wire with the key it generated; with ``--api-key`` on the gateway named.
A daemon (``--url`` / ``--socket``) has no bakes: the view grades in
``--template`` directly. The template baked here is deleted at the end,
Ctrl-C included, unless ``--keep`` or the tenant had it before.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..errors import CollimateError
from ..plugins.events import Subcommands
from .draw import latency_lines, latency_table, stack
from .screen import Frame, Screen, wants_rich
from .target import DEFAULT_TEMPLATE, add_target_options, open_target

__all__ = ["add_demo_command", "run_demo"]


def add_demo_command(subparsers: Subcommands) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "demo", help="bake a template, watch its pool converge, grade a GRPO group in it"
    )
    p.add_argument("--image", default="python:3.11", help="the image to bake (python:3.11)")
    p.add_argument("--name", default="collimate-demo", help="the template's name")
    p.add_argument("--width", type=int, default=4, help="the pool width to declare (4)")
    p.add_argument("--rounds", type=int, default=3, help="grading rounds of the group (3)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the pool")
    p.add_argument(
        "--template",
        default=DEFAULT_TEMPLATE,
        help=f"on a daemon (no bakes): the template to grade in ({DEFAULT_TEMPLATE})",
    )
    p.add_argument("--keep", action="store_true", help="keep the baked template at the end")
    add_target_options(p, transport=False)
    p.set_defaults(func=run_demo)
    return p


def bake_frame(status: Any, elapsed: float) -> Frame:
    head = (
        f"[{elapsed:5.1f}s] bake {status.id}: {status.phase}, pool {status.total}/"
        f"{status.declared} ({status.warm} warm, {status.frozen} frozen), {status.converge_state}"
    )

    def rich() -> Any:
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        table = Table(title=Text(head), title_justify="left", show_header=False)
        table.add_row("phase", status.phase)
        table.add_row(
            "pool",
            ProgressBar(total=max(status.declared, 1), completed=status.total, width=40),
        )
        for n in status.per_node:
            table.add_row(f"node {n.get('node', '?')}", f"{n.get('warm', 0)} warm")
        return table

    return Frame([head], rich)


class GradingRounds:
    """The demo group graded ``rounds`` times, and the frame of the results."""

    def __init__(self) -> None:
        from ..demo import GROUP

        self.labels = [label for label, _ in GROUP]
        self.rounds: list[list[Any]] = []
        self.walls: list[float] = []

    def grade(self, client: Any, template: str) -> None:
        from ..batch import grade_batch
        from ..demo import GENERATOR, GROUP, REFERENCE
        from ..rewards import PropertyReward, extract_code
        from ..seeds import group_seeds

        spec = PropertyReward(reference=REFERENCE, generator=GENERATOR, k=16)
        codes = [extract_code(text) for _, text in GROUP]
        t0 = time.perf_counter()
        results = grade_batch(
            client,
            template,
            codes,
            spec,
            seeds=group_seeds(len(codes), "crn"),
            timeout_seconds=2,
            on_infra_error="raise",
        )
        self.walls.append(time.perf_counter() - t0)
        self.rounds.append(results)

    def frame(self, head: str) -> Frame:
        last = self.rounds[-1] if self.rounds else []
        means = [sum(r.reward for r in rs) / len(rs) for rs in self.rounds]
        lines = [head]
        lines += [
            f"  {label:>18}  reward {r.reward:.3f}  {r.verdict}"
            for label, r in zip(self.labels, last, strict=False)
        ]
        lines += [
            f"  round {i + 1}: group mean reward {m:.3f} in {w * 1000:.0f} ms"
            for i, (m, w) in enumerate(zip(means, self.walls, strict=True))
        ]
        series = {"grade": [r.exec_time_ms or 0.0 for rs in self.rounds for r in rs]}
        lines += latency_lines(series)

        def rich() -> Any:
            from rich.table import Table
            from rich.text import Text

            table = Table(title=Text(head), title_justify="left")
            for col in ("completion", "reward", "verdict", "exec ms"):
                table.add_column(col, justify="left" if col == "completion" else "right")
            for label, r in zip(self.labels, last, strict=False):
                table.add_row(label, f"{r.reward:.3f}", r.verdict, f"{r.exec_time_ms or 0:.1f}")
            rounds = "\n".join(lines[1 + len(last) : 1 + len(last) + len(means)])
            return stack(table, rounds, latency_table("grade latency", series))

        return Frame(lines, rich)


def _start_bake(gateway: Any, args: argparse.Namespace) -> tuple[Any, bool]:
    """Start the bake; its handle, and whether the template was there
    before (the bake is idempotent: the same request names the same id)."""
    from ..gateway_flows.templates import Template

    existed = any(t.get("name") == args.name for t in gateway.list_templates())
    handle = Template.bake(gateway, name=args.name, image=args.image, width=args.width)
    return handle, existed


def _follow_bake(handle: Any, args: argparse.Namespace, screen: Screen) -> None:
    """Show the bake's phase and pool until the pool is full."""
    started = time.monotonic()
    last = handle.wait(
        args.timeout,
        poll_interval=0.2,
        on_update=lambda st: screen.update(bake_frame(st, time.monotonic() - started)),
    )
    screen.line(bake_frame(last, time.monotonic() - started).plain[0])


def _delete_template(gateway: Any, template_id: str, screen: Screen) -> None:
    """Delete the template the demo baked; a refusal is told, not raised
    (the run's own outcome is what the exit status reports)."""
    try:
        gateway.delete_template(template_id)
    except CollimateError as exc:
        screen.line(f"could not delete {template_id}: {exc}")


def run_demo(args: argparse.Namespace) -> int:
    if args.rounds < 1 or args.width < 1:
        print("collimate demo: --rounds and --width must be at least 1", file=sys.stderr)
        return 2
    out = sys.stdout
    interrupted = False
    with open_target(args) as target:
        gateway = target.gateway()
        client = gateway if gateway is not None else target.client
        rounds = GradingRounds()
        baked: str | None = None  # the template to delete at the end
        template: str = args.template
        with Screen(out, rich=wants_rich(out, plain=args.plain)) as screen:
            screen.line(f"demo on {target.where}")
            try:
                if gateway is not None:
                    handle, existed = _start_bake(gateway, args)
                    template = str(handle.id)
                    baked = None if existed else template  # never delete what was there
                    screen.line(f"baking {template} from {args.image}, width {args.width}")
                    _follow_bake(handle, args, screen)
                for i in range(args.rounds):
                    rounds.grade(client, template)
                    screen.update(rounds.frame(f"round {i + 1}/{args.rounds} in {template}"))
            except KeyboardInterrupt:
                interrupted = True
            except (CollimateError, TimeoutError) as exc:
                screen.stop()
                print(f"collimate demo: {exc}", file=sys.stderr)
                return 1
            finally:
                if baked is not None and not args.keep:
                    _delete_template(gateway, baked, screen)
                if gateway is not None and gateway is not target.client:
                    gateway.close()
            screen.final(
                rounds.frame(
                    f"demo: {len(rounds.rounds)} rounds of {len(rounds.labels)} "
                    f"completions graded in {template}"
                )
            )
    return 130 if interrupted else 0
