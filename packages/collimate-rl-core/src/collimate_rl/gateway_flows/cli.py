"""``collimate bake``, ``collimate images`` and ``collimate status``: the
gateway flows from a terminal.

``bake`` starts a bake and follows it: every change of phase or pool is one
line (``--plain``, ``NO_COLOR``, or when stdout is not a terminal) or a live
table (with ``rich`` on a terminal); ``status`` prints one reading the same
way (:func:`collimate_rl._terminal.wants_rich`). Exit status: 0 when the
bake reached its goal, 1 when the gateway refused, the bake ``Failed`` or the wait timed out, 2 when
no API key was given. Keys come from ``--api-key`` or ``$COLLIMATE_API_KEY``
and are never printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

from .._terminal import wants_rich
from ..errors import CollimateError, DemoTierLimit, TemplateBakeFailed
from ..plugins.events import Subcommands
from .status import Ready, TemplateStatus
from .templates import Template, TemplateHandle

__all__ = ["BakeView", "add_gateway_commands"]

_T = TypeVar("_T")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--api-key", default=None, help="a col_* key (default: $COLLIMATE_API_KEY)")
    p.add_argument(
        "--base-url", default=None, help="the gateway origin (default: $COLLIMATE_BASE_URL)"
    )


def add_gateway_commands(subparsers: Subcommands) -> None:
    """Add ``bake``, ``images`` and ``status`` to the ``collimate`` parser."""
    bake = subparsers.add_parser(
        "bake", help="bake an image into a template and follow its phases and pool"
    )
    _common(bake)
    bake.add_argument("--image", required=True, help="the source image, e.g. python:3.11")
    bake.add_argument("--name", default=None, help="the template's name (default: from --image)")
    bake.add_argument("--ready-cmd", default=None, help="ready when this command exits 0")
    bake.add_argument("--ready-http", default=None, help="ready when this URL answers 2xx")
    bake.add_argument(
        "--ready-http-timeout", type=int, default=0, help="seconds to keep probing --ready-http"
    )
    bake.add_argument(
        "--port",
        type=int,
        action="append",
        default=[],
        help="expose this guest port per sandbox (repeatable; implies --network)",
    )
    bake.add_argument(
        "--network",
        action="store_true",
        help="give the template a NIC so rollouts can carry egress policies (pro/ent)",
    )
    bake.add_argument("--env", action="append", default=[], metavar="K=V", help="guest env var")
    bake.add_argument("--width", type=int, default=1000, help="the pool width to declare")
    bake.add_argument(
        "--cold-fraction", type=int, default=0, help="percent of the pool kept frozen (0-100)"
    )
    bake.add_argument("--timeout", type=float, default=600.0, help="seconds to wait")
    bake.add_argument(
        "--until",
        choices=("converged", "live"),
        default="converged",
        help="wait until the pool is full (default) or only until the bake is Live",
    )
    bake.add_argument("--poll-interval", type=float, default=1.0, help="seconds between reads")
    bake.add_argument("--no-wait", action="store_true", help="start the bake and exit")
    bake.add_argument("--plain", action="store_true", help="one line per change, no live table")
    bake.add_argument(
        "--max-exec", type=int, default=None, help="shown in the summary (display only)"
    )
    bake.set_defaults(func=run_bake)

    images = subparsers.add_parser("images", help="list the gateway's ready-to-run images")
    _common(images)
    images.add_argument("--json", action="store_true", help="machine-readable output")
    images.set_defaults(func=run_images)

    status = subparsers.add_parser("status", help="a template's bake phase and pool, once")
    _common(status)
    status.add_argument("template", help="the template id")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.add_argument(
        "--plain", action="store_true", help="plain lines, no table (also: NO_COLOR, no tty)"
    )
    status.set_defaults(func=run_status)


def _client(args: argparse.Namespace) -> Any:
    from ..gateway import GatewayClient

    return GatewayClient(api_key=args.api_key, base_url=args.base_url)


def _ready(args: argparse.Namespace) -> Ready | None:
    env: dict[str, str] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--env expects KEY=VALUE, got {item!r}")
        env[key] = value
    ready = Ready(
        cmd=args.ready_cmd or "",
        http=args.ready_http or "",
        http_timeout_s=args.ready_http_timeout,
        ports=list(args.port),
        env=env,
        network=bool(args.network),
    )
    return ready if ready.to_wire() is not None else None


def _fail(exc: BaseException, out: TextIO) -> int:
    if isinstance(exc, DemoTierLimit):
        print(exc.message, file=out)  # the server's notice, verbatim
    else:
        print(f"collimate: {exc}", file=out)
    return 1


def _read(args: argparse.Namespace, command: str, call: Callable[[Any], _T]) -> _T | int:
    """What ``call`` reads through a client of ``args`` (closed after), or
    the exit status when there is none: 2 when the client cannot be made
    (no key), 1 when the gateway refused."""
    try:
        client = _client(args)
    except ValueError as exc:
        print(f"collimate {command}: {exc}", file=sys.stderr)
        return 2
    with client:
        try:
            return call(client)
        except CollimateError as exc:
            return _fail(exc, sys.stderr)


class BakeView:
    """Shows a bake as it goes: a line per change, or a live table.

    Only changes are printed (a poll that saw nothing new prints nothing), so
    a long bake stays readable in a log file.
    """

    def __init__(self, out: TextIO, *, live: bool = False, started: float | None = None) -> None:
        self.out = out
        self.started = time.monotonic() if started is None else started
        self._last: tuple[Any, ...] | None = None
        self._live: Any = None
        if live:
            try:
                from rich.console import Console
                from rich.live import Live

                self._live = Live(console=Console(file=out), refresh_per_second=4)
                self._live.start()
            except ImportError:  # rich is optional (the "progress" extra)
                self._live = None

    def __call__(self, st: TemplateStatus) -> None:
        key = (st.phase, st.warm, st.frozen, st.declared, st.error, tuple(map(str, st.per_node)))
        if key == self._last:
            return
        self._last = key
        if self._live is not None:
            self._live.update(self.table(st))
            return
        elapsed = time.monotonic() - self.started
        nodes = ", ".join(
            f"{n.get('node', '?')}: {n.get('warm', 0)}+{n.get('frozen', 0)}" for n in st.per_node
        )
        line = f"[{elapsed:6.1f}s] {st.phase:<12} pool {st.total}/{st.declared}"
        line += f" ({st.warm} warm, {st.frozen} frozen)"
        if nodes:
            line += f"  [{nodes}]"
        if st.error:
            line += f"  error ({st.build_fails}): {st.error}"
        print(line, file=self.out, flush=True)

    @staticmethod
    def table(st: TemplateStatus) -> Any:
        """The Rich table of one reading: per node, then all nodes."""
        from rich.table import Table

        table = Table(title=f"{st.id}  {st.phase}  {st.total}/{st.declared}")
        for col in ("node", "warm", "frozen"):
            table.add_column(col)
        for n in st.per_node:
            table.add_row(str(n.get("node", "?")), str(n.get("warm", 0)), str(n.get("frozen", 0)))
        table.add_row("all", str(st.warm), str(st.frozen))
        return table

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


def run_bake(args: argparse.Namespace) -> int:
    out = sys.stdout
    try:
        ready = _ready(args)
        client = _client(args)
    except ValueError as exc:
        print(f"collimate bake: {exc}", file=sys.stderr)
        return 2
    name = args.name or args.image.replace("/", "-").replace(":", "-")
    with client:
        try:
            handle = Template.bake(
                client,
                name=name,
                image=args.image,
                ready=ready,
                width=args.width,
                cold_fraction=args.cold_fraction,
            )
        except (CollimateError, ValueError) as exc:
            return _fail(exc, sys.stderr)
        print(f"baking {handle.id} (image {handle.image}, width {args.width})", file=out)
        if args.no_wait:
            return 0
        view = BakeView(out, live=wants_rich(out, plain=args.plain))
        try:
            st = handle.wait(
                args.timeout, poll_interval=args.poll_interval, on_update=view, until=args.until
            )
        except TemplateBakeFailed as exc:
            view.close()
            return _fail(exc, sys.stderr)
        except (CollimateError, TimeoutError) as exc:
            view.close()
            return _fail(exc, sys.stderr)
        view.close()
    done = f"{handle.id} is {st.phase}: {st.total}/{st.declared} ready"
    if args.max_exec is not None:
        done += f"; up to {args.max_exec} execs at once"
    print(done, file=out)
    return 0


def run_images(args: argparse.Namespace) -> int:
    rows = _read(args, "images", lambda client: client.images())
    if isinstance(rows, int):
        return rows
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    cols = ("id", "name", "image", "tier", "description")
    table = [[str(r.get(c) or "") for c in cols] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in table)]) for i, c in enumerate(cols)]
    print("  ".join(c.upper().ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip())
    for row in table:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    return 0


def run_status(args: argparse.Namespace) -> int:
    st = _read(args, "status", lambda client: TemplateHandle(client, args.template).status())
    if isinstance(st, int):
        return st
    if args.json:
        print(json.dumps(st.raw, indent=2))
        return 0
    if wants_rich(sys.stdout, plain=args.plain):
        from rich.console import Console

        Console(file=sys.stdout).print(BakeView.table(st))
        return 0
    print(st.summary())
    for n in st.per_node:
        print(f"  {n.get('node', '?')}: {n.get('warm', 0)} warm, {n.get('frozen', 0)} frozen")
    if st.bake_mode:
        print(f"  bake mode: {st.bake_mode}")
    return 0
