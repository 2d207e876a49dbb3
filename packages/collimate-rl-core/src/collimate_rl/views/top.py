"""``collimate top``: a running server, live: execs per second, the queue,
clones warm and busy, recent exec latencies, the exit-status mix and the
compile cache, from its ``GET /v1/stats`` counters.

Rates are differences between two readings divided by the time between
them; the final frame gives the last reading and what changed over the
whole watch, so its figures can be checked against the server's.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from typing import Any

from ..plugins.events import Subcommands
from .screen import Frame, Screen, wants_rich
from .target import add_target_options, open_target

__all__ = ["add_top_command", "run_top", "top_frame"]


def add_top_command(subparsers: Subcommands) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "top", help="a running server live: execs/s, queue, clones, latencies, verdicts"
    )
    p.add_argument("--interval", type=float, default=1.0, help="seconds between readings (1)")
    p.add_argument(
        "--count", type=int, default=30, help="readings before exiting (30; 0: until Ctrl-C)"
    )
    add_target_options(p, transport=False)
    p.set_defaults(func=run_top)
    return p


def _get(d: Mapping[str, Any], *path: str) -> Any:
    cur: Any = d
    for key in path:
        cur = cur.get(key) if isinstance(cur, Mapping) else None
    return cur


def _num(d: Mapping[str, Any], *path: str) -> int:
    value = _get(d, *path)
    return int(value) if isinstance(value, (int, float)) else 0


def top_frame(
    first: Mapping[str, Any],
    prev: Mapping[str, Any],
    now: Mapping[str, Any],
    seconds: float,
    *,
    final: bool = False,
) -> Frame:
    """The frame for reading ``now``; rates over ``seconds`` since ``prev``,
    totals since ``first`` (the watch's first reading)."""
    rate = (_num(now, "execs_run") - _num(prev, "execs_run")) / seconds if seconds > 0 else 0.0
    hits, misses = _num(now, "clones", "pool_hits"), _num(now, "clones", "pool_misses")
    warm_hit = f"{100 * hits / (hits + misses):.0f}%" if hits + misses else "-"
    v = {k: _num(now, "verdicts", k) for k in ("ok", "nonzero", "timeout")}
    cache = _get(now, "compile_cache")
    cache_text = (
        f"compile cache {_num(now, 'compile_cache', 'hits')} hits / "
        f"{_num(now, 'compile_cache', 'compiles')} compiles"
        if isinstance(cache, Mapping)
        else "compile cache: none"
    )
    lines = [
        f"top: {rate:.1f} execs/s, {_num(now, 'execs_run')} execs, "
        f"{_num(now, 'queued')} queued, "
        f"{_num(now, 'inflight')}/{_num(now, 'max_inflight')} in flight",
        f"clones: {_num(now, 'clones', 'warm')} warm, {_num(now, 'clones', 'busy')} busy, "
        f"{_num(now, 'sessions')} sessions; warm hits {warm_hit}",
        f"exec ms (last {_num(now, 'exec_ms', 'samples')}): "
        f"p50 {_get(now, 'exec_ms', 'p50') or 0:.1f}  p99 {_get(now, 'exec_ms', 'p99') or 0:.1f}",
        f"verdicts: {v['ok']} ok, {v['nonzero']} nonzero exit, {v['timeout']} timeout",
        cache_text,
    ]
    if final:
        lines.append(
            f"during the watch: +{_num(now, 'execs_run') - _num(first, 'execs_run')} execs, "
            f"+{_num(now, 'sessions_created') - _num(first, 'sessions_created')} sessions created"
        )

    def rich() -> Any:
        from rich.panel import Panel
        from rich.text import Text

        body = Text("\n".join(lines[1:]))
        return Panel(body, title=Text(lines[0]), title_align="left")

    return Frame(lines, rich)


def run_top(args: argparse.Namespace) -> int:
    if args.interval <= 0 or args.count < 0:
        print("collimate top: --interval must be > 0 and --count >= 0", file=sys.stderr)
        return 2
    out = sys.stdout
    with open_target(args) as target:
        first = target.stats()
        if first is None:
            print(f"collimate top: {target.where} serves no /v1/stats", file=sys.stderr)
            return 1
        prev, now, then = first, first, time.monotonic()
        seconds = 0.0
        interrupted = False
        with Screen(out, rich=wants_rich(out, plain=args.plain), plain_interval=0) as screen:
            screen.line(f"top on {target.where}")
            try:
                n = 1
                while args.count == 0 or n < args.count:
                    time.sleep(args.interval)
                    reading = target.stats()
                    if reading is None:
                        break
                    prev, now = now, reading
                    seconds, then = time.monotonic() - then, time.monotonic()
                    n += 1
                    screen.update(top_frame(first, prev, now, seconds))
            except KeyboardInterrupt:
                interrupted = True
            screen.final(top_frame(first, prev, now, seconds, final=True))
    return 130 if interrupted else 0
