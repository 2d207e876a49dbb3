"""``collimate fleet``: the tenant's warm pools from the gateway, once or
watched: each template's phase, declared width, warm and frozen spares,
and every node's share.

Everything shown is what ``GET /v1/templates`` and ``GET /v1/templates/{id}``
answer, nothing derived; :func:`fetch_fleet` is the one place that reads
them (a richer fleet model can replace it without touching the view).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from ..errors import CollimateError
from ..gateway_flows.status import TemplateStatus
from ..plugins.events import Subcommands
from .draw import stack
from .screen import Frame, Screen, wants_rich
from .target import add_target_options, open_target

__all__ = ["add_fleet_command", "fetch_fleet", "fleet_frame", "run_fleet"]


def add_fleet_command(subparsers: Subcommands) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "fleet", help="the tenant's warm pools across nodes, from the gateway (once or --watch)"
    )
    p.add_argument(
        "--template",
        action="append",
        default=[],
        help="a template id (repeatable; default: every template of the tenant)",
    )
    p.add_argument("--watch", action="store_true", help="read again every --interval seconds")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between reads (2)")
    p.add_argument(
        "--timeout", type=float, default=60.0, help="seconds a --watch lasts at most (60)"
    )
    p.add_argument(
        "--until-converged",
        action="store_true",
        help="with --watch: stop once every template's pool reached its declared width",
    )
    add_target_options(p, transport=False)
    p.set_defaults(func=run_fleet)
    return p


def fetch_fleet(gateway: Any, template_ids: Sequence[str] = ()) -> list[TemplateStatus]:
    """One reading of the tenant's templates (or of ``template_ids``)."""
    ids = list(template_ids) or [str(t.get("id")) for t in gateway.list_templates()]
    return [TemplateStatus.from_response(gateway.get_template(tid)) for tid in ids]


def _nodes(rows: Sequence[TemplateStatus]) -> dict[str, tuple[int, int]]:
    """Warm and frozen spares per node, over every template."""
    nodes: dict[str, tuple[int, int]] = {}
    for st in rows:
        for n in st.per_node:
            name = str(n.get("node", "?"))
            warm, frozen = nodes.get(name, (0, 0))
            nodes[name] = (warm + int(n.get("warm") or 0), frozen + int(n.get("frozen") or 0))
    return nodes


def converged(rows: Sequence[TemplateStatus]) -> bool:
    """Every template that declares a width reached it (and there is one)."""
    declaring = [st for st in rows if st.declared > 0]
    return bool(declaring) and all(st.converged for st in declaring)


def fleet_frame(rows: Sequence[TemplateStatus]) -> Frame:
    warm = sum(st.warm for st in rows)
    frozen = sum(st.frozen for st in rows)
    declared = sum(st.declared for st in rows)
    nodes = _nodes(rows)
    head = (
        f"fleet: {len(rows)} templates, {warm + frozen}/{declared} spares "
        f"({warm} warm, {frozen} frozen) on {len(nodes)} nodes; "
        f"{'converged' if converged(rows) else 'converging'}"
    )
    plain = [head]
    plain += [
        f"  {st.id}  {st.phase}  {st.total}/{st.declared}  "
        f"({st.warm} warm, {st.frozen} frozen)  {st.converge_state}"
        for st in rows
    ]
    plain += [f"  node {name}: {w} warm, {f} frozen" for name, (w, f) in sorted(nodes.items())]

    def rich() -> Any:
        from rich.table import Table
        from rich.text import Text

        table = Table(title=Text(head), title_justify="left")
        for col in ("template", "phase", "ready", "warm", "frozen", "state"):
            table.add_column(col, justify="left" if col in ("template", "phase") else "right")
        for st in rows:
            table.add_row(
                st.id,
                st.phase,
                f"{st.total}/{st.declared}",
                str(st.warm),
                str(st.frozen),
                st.converge_state,
            )
        per_node = Table(title="per node", title_justify="left")
        for col in ("node", "warm", "frozen"):
            per_node.add_column(col, justify="left" if col == "node" else "right")
        for name, (w, f) in sorted(nodes.items()):
            per_node.add_row(name, str(w), str(f))
        return stack(table, per_node)

    return Frame(plain, rich)


def run_fleet(args: argparse.Namespace) -> int:
    out = sys.stdout
    with open_target(args) as target:
        gateway = target.gateway()
        if gateway is None:
            print(
                "collimate fleet: a daemon has no fleet; name the gateway (--api-key)",
                file=sys.stderr,
            )
            return 2
        with Screen(out, rich=wants_rich(out, plain=args.plain)) as screen:
            screen.line(f"fleet on {target.where}")
            rows: list[TemplateStatus] = []
            try:
                rows = fetch_fleet(gateway, args.template)
                deadline = time.monotonic() + args.timeout
                while args.watch and time.monotonic() < deadline:
                    if args.until_converged and converged(rows):
                        break
                    screen.update(fleet_frame(rows))
                    time.sleep(args.interval)
                    rows = fetch_fleet(gateway, args.template)
            except KeyboardInterrupt:
                screen.final(fleet_frame(rows))
                return 130
            except CollimateError as exc:  # a refused key, a template not the tenant's
                screen.stop()
                print(f"collimate fleet: {exc}", file=sys.stderr)
                return 1
            finally:
                if gateway is not target.client:
                    gateway.close()
            screen.final(fleet_frame(rows))
    if args.until_converged and not converged(rows):
        return 1
    return 0
