"""``collimate ray up | status | down``: the graders of a running Ray
cluster, from a shell on any of its machines."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from collimate_rl.plugins import Subcommands

__all__ = ["add_ray_command", "format_status", "run"]


def add_ray_command(subparsers: Subcommands) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "ray", help="start, watch and stop a grader on every node of a running Ray cluster"
    )
    parser.add_argument(
        "--address",
        default=None,
        help="the Ray cluster (default: RAY_ADDRESS, else the one started on this machine)",
    )
    actions = parser.add_subparsers(dest="ray_action", required=True)
    up = actions.add_parser("up", help="a grader on every node (and on every node that joins)")
    up.add_argument("--host", default=None, help="address graders listen on (default: node IP)")
    up.add_argument("--interval", type=float, default=2.0, help="seconds between reconcile rounds")
    up.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="one more `collimate serve` argument (repeatable, e.g. --serve-arg=--run-slots=2)",
    )
    status = actions.add_parser("status", help="each node's grader: where, load, health")
    status.add_argument("--json", action="store_true", help="one JSON list, for scripts")
    actions.add_parser("down", help="stop every grader and the registry")
    parser.set_defaults(func=run)
    return parser


def format_status(rows: list[dict[str, Any]]) -> str:
    """The status as an aligned table, one node a line."""
    head = ("node", "grader", "health", "load", "in flight", "queued", "execs run")
    lines = [head]
    for row in rows:
        lines.append(
            (
                row["node_id"][:12],
                row["url"] or "-",
                row["health"] + (" (restarted)" if row["restarted"] else ""),
                f"{row['load']:.2f}",
                f"{row['in_flight']}/{row['run_slots']}",
                str(row["queued"]),
                str(row["execs_run"]),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def run(args: argparse.Namespace) -> int:
    from . import control

    control.connect_cluster(args.address)
    if args.ray_action == "up":
        rows = [
            s.as_dict()
            for s in control.up(host=args.host, serve_args=args.serve_arg, interval=args.interval)
        ]
        print(format_status(rows))
        return 0 if all(r["health"] == "ok" for r in rows) else 1
    if args.ray_action == "status":
        if control.registry() is None:
            print("no graders: this cluster runs none (collimate ray up)", file=sys.stderr)
            return 1
        rows = [s.as_dict() for s in control.status()]
        print(json.dumps(rows, indent=2) if args.json else format_status(rows))
        return 0 if rows and all(r["health"] == "ok" for r in rows) else 1
    stopped = control.down()
    print(f"stopped {stopped} grader(s)")
    return 0
