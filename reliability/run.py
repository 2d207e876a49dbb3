"""One command for the reliability proofs: the fault matrix, the hostile
requests, the soak, the soak with a hostile minority, a node lost
mid-batch, laundering attempts (programs passing their own failure off as
the server's); one table; exit
status 1 when a count that must be zero is not.

    python reliability/run.py            # the full run (10,000-grade soak)
    python reliability/run.py --short    # the CI form (a 500-grade soak)

(``hatch run reliability:all`` / ``hatch run reliability:short``.)
"""

from __future__ import annotations

import argparse
import sys
import time

from hostile_run import HostileReport, run_hostile
from hostile_soak import HOSTILE, HostileSoakReport, run_hostile_soak
from laundering import LaunderingReport, run_laundering
from node_loss import NodeLossReport, run_node_loss
from soak import SoakReport, run_soak
from table import Row, print_table

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.proxy import FaultProxy
from collimate_rl.testing.reliability import (
    CALLS,
    CASE_FAULTS,
    Case,
    Matrix,
    settle_sessions,
)

MATRIX_SESSION_TTL_S = 1.0


def run_matrix(*, long_delays: bool) -> tuple[list[Case], int, int]:
    """Every call under every fault; with ``long_delays`` the grades' delay
    cases hold the answer past the grade's read timeout (33 s each).
    Returns the cases and the sessions left behind after the reaper's turn,
    and the created/ended mismatch of the server's counters."""
    with (
        LocalCollimateBackend(run_slots=1, session_ttl=MATRIX_SESSION_TTL_S) as backend,
        FaultProxy(backend.base_url, delay_s=2.5) as proxy,
    ):
        matrix = Matrix(proxy, backend.base_url, exec_delay_s=33.0 if long_delays else None)
        try:
            cases = [matrix.run(call, fault) for call in CALLS for fault in CASE_FAULTS]
            counters = settle_sessions(matrix.direct, MATRIX_SESSION_TTL_S * 10 + 10)
        finally:
            matrix.close()
    mismatch = abs(counters.sessions_created - counters.sessions_ended - counters.sessions)
    return cases, counters.sessions, mismatch


def rows(
    cases: list[Case],
    leaked: int,
    mismatch: int,
    hostile: HostileReport,
    soak: SoakReport,
    minority: HostileSoakReport,
    node_loss: NodeLossReport,
    laundering: LaunderingReport,
) -> list[Row]:
    infra_flagged = sum(c.infra_flagged for c in cases)
    return [
        Row("scenarios run", f"{len(cases)} fault cases, {hostile.tried} hostile, 1 soak"),
        Row(
            "faults injected",
            f"{sum(c.injected for c in cases)} matrix + {soak.faults_injected} soak "
            f"(in {soak.requests} requests)",
        ),
        Row(
            "requests executed twice",
            sum(c.executed_twice + c.ran_unforwarded for c in cases) + soak.executed_twice,
            due_zero=True,
        ),
        Row(
            "failures not typed",
            sum(c.outcome == "untyped" for c in cases) + soak.untyped,
            due_zero=True,
        ),
        Row(
            "infra failures as rewards",
            sum(c.infra_as_reward for c in cases) + soak.wrong_rewards,
            due_zero=True,
        ),
        Row("retry budgets exceeded", sum(c.over_budget for c in cases), due_zero=True),
        Row(
            "results lost",
            sum(c.results_lost for c in cases) + soak.results_lost,
            due_zero=True,
        ),
        Row("sessions leaked", leaked + mismatch + soak.sessions_leaked, due_zero=True),
        Row("processes leaked", soak.processes_leaked, due_zero=True),
        Row(
            "grades (soak)",
            f"{soak.grades} at concurrency {soak.concurrency}: {soak.rewarded} rewarded, "
            f"{soak.infra_errors} typed infra errors; matrix: {infra_flagged} flagged infra_error",
        ),
        Row(
            "server processes (soak)",
            f"{soak.processes_baseline} after warm-up, peak {soak.processes_peak}, "
            f"{soak.processes_settled} at the end (idle clones kept warm), "
            "0 alive after it stopped",
        ),
        Row(
            "server RSS (soak)",
            f"{_rss(soak)} ({'flat' if soak.rss_flat else 'GROWING'})",
            due_zero=False,
            failed=not soak.rss_flat,
        ),
        Row("hostile inputs tried", hostile.tried),
        Row("hostile inputs not contained", hostile.tried - hostile.contained, due_zero=True),
        Row("host paths exposed", hostile.exposed),
        *minority_rows(minority),
        *node_loss_rows(node_loss),
        *laundering_rows(laundering),
    ]


def laundering_rows(r: LaunderingReport) -> list[Row]:
    """Judged programs that sabotage themselves, then answer wrong
    (``laundering.py``): each is due its own 0.0, never an infra error."""
    missing = f"; not installed: {', '.join(r.missing)}" if r.missing else ""
    return [
        Row(
            "laundering attempts",
            f"{r.attempts} self-sabotaging programs in {', '.join(r.languages)}, "
            f"each beside right siblings{missing}",
            failed=not r.attempts,
        ),
        Row("infra errors seen (laundering)", r.infra_errors, due_zero=True),
        Row("sabotage rewarded (laundering)", r.rewarded, due_zero=True),
        Row("siblings harmed (laundering)", r.siblings_harmed, due_zero=True),
    ]


def node_loss_rows(r: NodeLossReport) -> list[Row]:
    """A node SIGKILLed mid-batch under a many-node client (``node_loss.py``)."""
    return [
        Row(
            "node lost mid-batch",
            f"{r.grades} grades over 3 nodes, one killed after a quarter: {r.rewarded} "
            f"rewarded, {r.infra_errors} typed infra errors ({r.lost_node_requests} "
            "requests on the lost node)",
        ),
        Row("rewards wrong or untyped (node loss)", r.wrong + r.untyped, due_zero=True),
        Row("graded twice or uncounted (node loss)", r.miscounted, due_zero=True),
    ]


def minority_rows(r: HostileSoakReport) -> list[Row]:
    """The soak with one hostile candidate in ten (``hostile_soak.py``)."""
    mixed, apart = r.mixed, r.slowdown_beyond_own
    return [
        Row(
            "hostile-minority soak",
            f"{mixed.grades} grades at concurrency {r.concurrency}, {mixed.hostile} hostile "
            f"({len(HOSTILE)} kinds): {mixed.rate:.0f} grades/s against {r.clean.rate:.0f} clean "
            f"({r.slowdown:.1f}x raw: the hostile ones' own time); {apart:.2f}x the time of its "
            "honest and hostile parts graded apart (at most 2x)",
            failed=apart > 2.0,
        ),
        Row("honest rewards wrong (hostile soak)", mixed.honest_wrong, due_zero=True),
        Row("honest infra errors (hostile soak)", mixed.honest_infra, due_zero=True),
        Row(
            "hostile candidates rewarded",
            mixed.hostile_rewarded + r.hostile_alone.hostile_rewarded,
            due_zero=True,
        ),
        Row(
            "untyped failures (hostile soak)",
            mixed.untyped + r.hostile_alone.untyped,
            due_zero=True,
        ),
        Row(
            "processes, fds, RSS (hostile soak)",
            f"{r.processes_clean_end} -> {r.processes_end} processes, {r.fds_clean_end} -> "
            f"{r.fds_end} fds ({r.clones_clean_end} -> {r.clones_end} clones kept warm), "
            f"{r.rss_clean_end_mib:.1f} -> {r.rss_end_mib:.1f} MiB "
            f"from the clean pass's end ({'flat' if r.flat else 'GROWING'}); "
            f"{mixed.hostile_infra} hostile graded as infra errors",
            failed=not r.flat,
        ),
        Row("processes leaked (hostile soak)", r.processes_leaked, due_zero=True),
    ]


def _rss(soak: SoakReport) -> str:
    if not soak.rss_mib:
        return "n/a"
    low, high = min(soak.rss_mib), max(soak.rss_mib)
    return (
        f"{soak.rss_mib[0]:.1f} -> {soak.rss_mib[-1]:.1f} MiB over {len(soak.rss_mib)} samples "
        f"(min {low:.1f}, max {high:.1f}), growth {soak.rss_growth_mib:+.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--short", action="store_true", help="the CI form: a 500-grade soak")
    p.add_argument(
        "--grades", type=int, default=None, help="soak grades (default 10,000; short 500)"
    )
    p.add_argument("--concurrency", type=int, default=64)
    args = p.parse_args(argv)
    grades = args.grades or (500 if args.short else 10_000)
    started = time.monotonic()
    print("fault matrix ...", flush=True)
    cases, leaked, mismatch = run_matrix(long_delays=not args.short)
    print("hostile requests ...", flush=True)
    hostile = run_hostile(flood=1000 if args.short else 3000)
    print(f"soak: {grades} grades at concurrency {args.concurrency} ...", flush=True)
    # the short soak's 500 grades are some 80 requests (packs): fault more of them
    soak = run_soak(grades, args.concurrency, fault_rate=0.25 if args.short else 0.1)
    print(f"hostile-minority soak: {grades} grades, 1 in 10 hostile ...", flush=True)
    minority = run_hostile_soak(grades, args.concurrency)
    node_grades = 500 if args.short else 1000
    print(f"node loss: {node_grades} grades over 3 nodes, one killed mid-batch ...", flush=True)
    node_loss = run_node_loss(node_grades, 16)
    print("laundering attempts ...", flush=True)
    laundering = run_laundering(short=args.short)
    table = rows(cases, leaked, mismatch, hostile, soak, minority, node_loss, laundering)
    print()
    ok = print_table(table, title=f"collimate-rl reliability ({'short' if args.short else 'full'})")
    print(f"\n{time.monotonic() - started:.0f} s")
    for c in cases:
        if not c.clean:
            print(f"  not clean: {c.call} under {c.fault}: {c}", file=sys.stderr)
    for name in hostile.failures:
        print(f"  not contained: {name}", file=sys.stderr)
    for detail in laundering.details:
        print(f"  laundering: {detail}", file=sys.stderr)
    for detail in minority.mixed.honest_wrong_details:
        print(f"  honest candidate not rewarded (hostile soak): {detail}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
