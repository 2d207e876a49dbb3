"""The tables of ``benchmarks/README.md``, written from the results files.

Every benchmark writes its run to ``benchmarks/results/<script>.json``
(``_results.py``; ``--out DIR`` elsewhere, ``benchmarks/figures/`` for the
runs whose charts the repository keeps). For each ``bench_*.py`` this takes
the newest run (by its ``run.date``) of those two folders and writes one
table of it, with the run's date, commit, machine and the command that makes
it again, between the README's markers (``<!-- tables: begin -->`` and
``<!-- tables: end -->``); the rest of the README is left as it is.

A results file holds what its script measured (``figures``, in the script's
own terms), from which each table here computes its headline (its
*summary*). A run copied from ``HISTORY.md`` (the journal), made before the
script wrote results files, holds that summary itself (``summary``, the same
keys, as the journal gives them), and ``run.transcribed_from`` names the
journal's section.

    python benchmarks/readme_tables.py           rewrite the README's tables
    python benchmarks/readme_tables.py --check   change nothing; exit 1 if they differ

Standard library only: runs on any Python 3.10+, no environment needed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import statistics
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
#: Where runs are read from; of two runs of the same date, the first folder's wins.
RESULT_DIRS = (HERE / "results", HERE / "figures")
BEGIN = "<!-- tables: begin -->"
END = "<!-- tables: end -->"
NOTICE = (
    "<!-- Written by benchmarks/readme_tables.py from the results files: "
    "edit that script or the files, not the text between these markers. -->"
)

Json = dict[str, Any]


class Problem(Exception):
    """A results file or the README is not what this script can read."""


# --------------------------------------------------------------------------
# Numbers as the tables show them


def num(value: Any, unit: str = "") -> str:
    """A figure with its unit: three significant digits (none after the
    point from 100 up), a ``[low, high]`` pair as a range, text as it is,
    a figure not recorded as ``n/a``."""
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        low, high = value
        return f"{num(low)} to {num(high, unit)}"
    text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return text + unit


def aside(main: str, extra: str) -> str:
    """``main (extra)``, or ``main`` alone when ``extra`` was not recorded."""
    return main if extra == "n/a" else f"{main} ({extra})"


def times(value: Any, between: str) -> str:
    """A ratio (``11.5x``) and what it divides, in bold."""
    if value is None:
        return "n/a"
    return f"**{num(value, 'x')}** ({between})"


def ratio_of(a: Any, b: Any) -> float | list[float] | None:
    """``a / b``; a range where either is a ``[low, high]`` range."""
    if a is None or b is None or isinstance(a, str) or isinstance(b, str):
        return None
    if isinstance(a, list) or isinstance(b, list):
        a_lo, a_hi = a if isinstance(a, list) else (a, a)
        b_lo, b_hi = b if isinstance(b, list) else (b, b)
        return [a_lo / b_hi, a_hi / b_lo]
    return float(a) / float(b)


def at_most(value: Any, limit: float) -> bool | None:
    return None if not isinstance(value, (int, float)) else value <= limit


def at_least(value: Any, limit: float) -> bool | None:
    return None if not isinstance(value, (int, float)) else value >= limit


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def median_of_ratios(tops: Sequence[float], bottoms: Sequence[float]) -> float | None:
    """The median over rounds of ``top / bottom`` (each round's own ratio)."""
    return median([t / b for t, b in zip(tops, bottoms, strict=True)])


def of_rounds(count: Any) -> str:
    """``median of 5 rounds``; ``1 round``; nothing when not recorded."""
    if not count:
        return ""
    return "1 round" if count == 1 else f"median of {count} rounds"


def in_rounds(count: Any, more: str = "") -> str:
    """`` (median of 5 rounds)`` (``more`` inside the brackets), for a
    measure's text; nothing when not recorded."""
    return f" ({of_rounds(count)}{more})" if count else ""


def spread(values: Sequence[float]) -> list[float] | None:
    return [min(values), max(values)] if values else None


def two_ways(rates: Json, ours: str, theirs: str, ours_key: str, theirs_key: str) -> Json:
    """Two ways measured over rounds (``rates``: each way's figure a round,
    by name): how many rounds, each way's median, and their ``ratio``."""
    a, b = median(rates.get(ours, [])), median(rates.get(theirs, []))
    return {"rounds": len(rates.get(ours, [])), ours_key: a, theirs_key: b, "ratio": ratio_of(a, b)}


# --------------------------------------------------------------------------
# A table


@dataclass(frozen=True)
class Row:
    """One line of a table: what is measured, our figure, what it is
    compared with, the ratio, and the target (``met``: None if no verdict;
    a row with a verdict is also a line of the targets table)."""

    measure: str
    ours: str
    theirs: str = "-"
    ratio: str = "-"
    target: str = "-"
    met: bool | None = None
    short: str = ""  # the figure's name in the targets table (default: ``measure``)

    def verdict(self) -> str:
        if self.met is None:
            return self.target
        return f"{self.target}: {'met' if self.met else '**not met**'}"


class Summary:
    """A run's headline figures by name; remembers which names a table read,
    so a copied summary with a name no table reads is caught."""

    def __init__(self, values: Json) -> None:
        self.values = values
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self.values.get(key)

    def ratio(self, key: str, top: Any, bottom: Any) -> Any:
        """The ratio the summary gives as ``key``, else ``top / bottom``."""
        given = self[key]
        return given if given is not None else ratio_of(top, bottom)

    def unread(self) -> list[str]:
        return sorted(set(self.values) - self.read)

    def versus(
        self,
        measure: str,
        ours: str,
        theirs: str,
        unit: str,
        between: str,
        ratio: str = "",
        *,
        inverse: bool = False,
        target: str = "-",
    ) -> Row:
        """:func:`versus` of two of the summary's figures (by key): their ratio
        is the summary's ``ratio`` where it gives one, else ours / theirs
        (``inverse``: theirs / ours)."""
        a, b = self[ours], self[theirs]
        top, bottom = (b, a) if inverse else (a, b)
        given = self.ratio(ratio, top, bottom) if ratio else ratio_of(top, bottom)
        return versus(measure, a, b, unit, between, given, target=target)


def versus(
    measure: str,
    ours: Any,
    theirs: Any,
    unit: str,
    between: str,
    ratio: Any = ...,
    *,
    target: str = "-",
    met: bool | None = None,
    short: str = "",
    most: float | None = None,
    least: float | None = None,
) -> Row:
    """A row of two figures in one unit, ours against theirs, and their ratio
    in bold (``between`` says what it divides): ours / theirs unless
    ``ratio`` is given (another order, a median of each round's own). A
    target on the ratio (``at most 1.3x``, met or not) is ``most=1.3``, or
    ``least=``; any other is ``target`` and ``met``."""
    if ratio is ...:
        ratio = ratio_of(ours, theirs)
    if most is not None:
        target, met = f"at most {num(most, 'x')}", at_most(ratio, most)
    if least is not None:
        target, met = f"at least {num(least, 'x')}", at_least(ratio, least)
    return Row(
        measure, num(ours, unit), num(theirs, unit), times(ratio, between), target, met, short
    )


@dataclass(frozen=True)
class Bench:
    """A ``bench_*.py`` script's table: its title, what it compares with
    what (Markdown), how its summary is computed from a run's ``figures``,
    and the rows shown from a summary."""

    script: str
    title: str
    about: str
    summarize: Callable[[Json, Json], Json]  # (figures, run options) -> summary
    rows: Callable[[Summary], list[Row]]
    run_with: str = "hatch run bench:one"

    def command(self, argv: Sequence[str]) -> str:
        kept: list[str] = []
        skip = False
        for arg in argv:  # where the results go is not part of what is measured
            if skip:
                skip = False
            elif arg == "--out":
                skip = True
            elif not arg.startswith("--out="):
                kept.append(arg)
        return " ".join([self.run_with, f"benchmarks/{self.script}", *kept])


# --------------------------------------------------------------------------
# Each benchmark: its summary from its script's figures, and its rows

PEER = "collimate-rl 0.5.0"


def exec_latency_summary(f: Json, _: Json) -> Json:
    pct = f.get("percentiles_ms", {})
    raw, hx = pct.get("http.client", {}), pct.get("httpx", {})
    ours, peer = raw.get("ours", {}), raw.get(PEER, {})
    s: Json = {
        "samples": f.get("samples_per_side"),
        "p50_ms_ours": ours.get("p50"),
        "p50_ms_peer": peer.get("p50"),
        "p50_ratio": ratio_of(ours.get("p50"), peer.get("p50")),
        "p99_ms_ours": ours.get("p99"),
        "p99_ms_peer": peer.get("p99"),
        "httpx_p50_ms_ours": hx.get("ours", {}).get("p50"),
        "httpx_p50_ms_peer": hx.get(PEER, {}).get("p50"),
    }
    rates = f.get("throughput_execs_per_s", {})
    if rates.get("clients"):
        s["execs_per_s"] = {
            str(c): [o, p]
            for c, o, p in zip(rates["clients"], rates["ours"], rates[PEER], strict=True)
        }
    return s


def exec_latency_rows(s: Summary) -> list[Row]:
    samples = f", {s['samples']} execs a side" if s["samples"] else ""
    p50 = s.ratio("p50_ratio", s["p50_ms_ours"], s["p50_ms_peer"])
    rows = [
        Row(
            f"one-shot `print(1)` exec, sequential, p50 (`http.client`{samples})",
            num(s["p50_ms_ours"], " ms"),
            num(s["p50_ms_peer"], " ms"),
            f"**{num(p50)}** (ours / 0.5.0)",
            "at most 0.20",
            at_most(p50, 0.20),
            "one-shot exec latency, p50",
        )
    ]
    if s["p99_ms_ours"] is not None:
        rows.append(
            Row(
                "the same, p99",
                num(s["p99_ms_ours"], " ms"),
                num(s["p99_ms_peer"], " ms"),
                f"{num(ratio_of(s['p99_ms_ours'], s['p99_ms_peer']))} (ours / 0.5.0)",
            )
        )
    if s["httpx_p50_ms_ours"] is not None:
        rows.append(
            Row(
                "the same, p50, with `httpx` as the client",
                num(s["httpx_p50_ms_ours"], " ms"),
                num(s["httpx_p50_ms_peer"], " ms"),
                f"{num(ratio_of(s['httpx_p50_ms_ours'], s['httpx_p50_ms_peer']))} (ours / 0.5.0)",
            )
        )
    for clients, (ours, peer) in (s["execs_per_s"] or {}).items():
        rows.append(
            versus(
                f"execs/s, {clients} concurrent client{'' if clients == '1' else 's'}",
                ours,
                peer,
                "/s",
                "ours / 0.5.0",
            )
        )
    return rows


#: bench_grade_throughput.py's ways, as its results name them.
DOCUMENTED, DOC_ASYNC = "grade_batch (documented)", "grade_batch_async"
SINGLES_ASYNC, THREADS = "concurrent grade_async", "grade from threads"
PEER_BATCH = "collimate-rl 0.5.0 grade_batch"


def grade_throughput_summary(f: Json, _: Json) -> Json:
    rates, med = f.get("grades_per_s", {}), f.get("median_grades_per_s", {})
    agree = f.get("rewards_agree_with_0_5_0")
    return {
        "rounds": len(rates.get(DOCUMENTED, [])),
        "documented_gps": med.get(DOCUMENTED),
        "peer_gps": med.get(PEER_BATCH),
        "threads_gps": med.get(THREADS),
        "async_batch_gps": med.get(DOC_ASYNC),
        "async_singles_gps": med.get(SINGLES_ASYNC),
        # each round's own ratio (rates: ours over theirs; times: singles over batch)
        "documented_over_peer": median_of_ratios(rates[DOCUMENTED], rates[PEER_BATCH]),
        "threads_over_batch": median_of_ratios(rates[DOCUMENTED], rates[THREADS]),
        "async_singles_over_batch": median_of_ratios(rates[DOC_ASYNC], rates[SINGLES_ASYNC]),
        "rewards_agree": all(agree.values()) if agree else None,
    }


def grade_throughput_rows(s: Summary) -> list[Row]:
    rounds = f", median round of {s['rounds']}" if (s["rounds"] or 0) > 1 else ""
    rows = [
        versus(
            "one GRPO group (256 candidates, `PropertyReward(k=16)`), the documented "
            f"`grade_batch` call, grades/s, against 0.5.0's `grade_batch`{rounds}",
            s["documented_gps"],
            s["peer_gps"],
            "/s",
            "ours / 0.5.0",
            s["documented_over_peer"],
            least=12,
            short="one GRPO group, the documented `grade_batch` call against 0.5.0's",
        ),
        versus(
            "the same group as 256 `grade` calls from 32 threads, time against one "
            "`grade_batch` call (same round)",
            s["threads_gps"],
            s["documented_gps"],
            "/s",
            "threads / batch",
            s["threads_over_batch"],
            most=1.3,
            short="256 `grade` calls from 32 threads against one `grade_batch` call",
        ),
    ]
    if s["async_singles_over_batch"] is not None:
        rows.append(
            versus(
                "the same group as 256 concurrent `grade_async` calls on one loop, time "
                "against one `grade_batch_async` call (same round)",
                s["async_singles_gps"],
                s["async_batch_gps"],
                "/s",
                "singles / batch",
                s["async_singles_over_batch"],
                most=1.3,
                short="256 concurrent `grade_async` calls against one `grade_batch_async` call",
            )
        )
    if s["rewards_agree"] is not None:
        rows.append(Row("rewards identical to 0.5.0's, every way", num(s["rewards_agree"])))
    return rows


def grade_latency_summary(f: Json, _: Json) -> Json:
    p50 = f.get("p50_ms", {})
    return {
        "samples": f.get("samples_per_way"),
        "grade_ms": p50.get("grade"),
        "grade_uncoalesced_ms": p50.get("grade coalesce=False"),
        "async_ms": p50.get("grade_async"),
        "async_uncoalesced_ms": p50.get("grade_async coalesce=False"),
        "peer_ms": p50.get("0.5.0 grade"),
    }


def grade_latency_rows(s: Summary) -> list[Row]:
    n = f" ({s['samples']} calls each)" if s["samples"] else ""
    return [
        s.versus(
            f"a lone `grade()` call, p50{n}, against `grade(..., coalesce=False)`",
            "grade_ms",
            "grade_uncoalesced_ms",
            " ms",
            "coalescer on / off",
            target="1.0x: a lone grade does not wait",
        ),
        s.versus(
            "a lone `grade_async()` call, p50, against `grade_async(..., coalesce=False)`",
            "async_ms",
            "async_uncoalesced_ms",
            " ms",
            "coalescer on / off",
            target="1.0x",
        ),
        s.versus(
            "a lone `grade()` call, p50, against 0.5.0's `grade` on its backend",
            "grade_ms",
            "peer_ms",
            " ms",
            "ours / 0.5.0",
        ),
    ]


def grade_step_summary(f: Json, _: Json) -> Json:
    med = f.get("median_grades_per_s", {})
    one, alone = med.get("one call"), med.get("one grade at a time")
    return {
        "rows": f.get("rows"),
        "loopers": f.get("loopers"),
        "one_call_gps": one,
        "one_at_a_time_gps": alone,
        "ratio": ratio_of(one, alone),
        "rewards_agree": f.get("rewards_agree"),
    }


def grade_step_rows(s: Summary) -> list[Row]:
    loopers = f", {s['loopers']} completions looping to their budget" if s["loopers"] else ""
    return [
        s.versus(
            f"a step of {num(s['rows'])} completions (32 prompts x 8, four dataset formats"
            f"{loopers}) in one `grade_batch` call, grades/s, against one `grade` call at a time",
            "one_call_gps",
            "one_at_a_time_gps",
            "/s",
            "one call / one at a time",
            "ratio",
        ),
        Row("rewards identical both ways", num(s["rewards_agree"])),
    ]


def pack_cpu_summary(f: Json, _: Json) -> Json:
    def med(key: str) -> float | None:
        return median(f.get(key, []))

    return {
        "candidates": f.get("candidates"),
        "rounds": len(f.get("all_in_ms", [])),
        "all_in_ms": med("all_in_ms"),
        "all_in_range_ms": spread(f.get("all_in_ms", [])),
        "marginal_ms": med("marginal_ms"),
        "marginal_range_ms": spread(f.get("marginal_ms", [])),
        "floor_fork_300_pages_ms": med("floor_fork_300_pages_ms"),
        "floor_bare_fork_ms": med("floor_bare_fork_ms"),
        "page_fault_us": med("page_fault_us"),
    }


def pack_cpu_rows(s: Summary) -> list[Row]:
    n = num(s["candidates"] or 128)
    rounds = in_rounds(s["rounds"], "; range")
    rows = [
        Row(
            f"guest CPU per graded candidate, one pack of {n} on a one-slot backend, "
            f"all in{rounds}",
            aside(num(s["all_in_ms"], " ms"), num(s["all_in_range_ms"], " ms")),
            target="at most 2.5 ms",
            met=at_most(s["all_in_ms"], 2.5),
            short=f"guest CPU per graded candidate, a pack of {n}, all in",
        )
    ]
    if s["marginal_ms"] is not None:
        rows.append(
            Row(
                f"the same, marginal ({n} less 8, over the candidates between)",
                aside(num(s["marginal_ms"], " ms"), num(s["marginal_range_ms"], " ms")),
            )
        )
    if s["floor_fork_300_pages_ms"] is not None:
        rows += [
            Row(
                "the machine's floor: fork and exit of a spawner-sized process writing "
                "300 pages (a bare fork and exit)",
                f"{num(s['floor_fork_300_pages_ms'], ' ms')} "
                f"({num(s['floor_bare_fork_ms'], ' ms')})",
            ),
            Row("the machine's price of one page fault", num(s["page_fault_us"], " us")),
        ]
    return rows


def exec_count_summary(f: Json, options: Json) -> Json:
    threads = {k.split()[1]: v for k, v in f.items() if k.startswith("threads ")}
    return {
        "target": options.get("target"),
        "candidates_cpu_ms": f.get("candidates_cpu_ms"),
        "exec_cpu_ms": f.get("exec_cpu_ms"),
        "batch": f.get("batch"),
        "threads": threads,
    }


def exec_count_rows(s: Summary) -> list[Row]:
    target = s["target"] or 1.3
    batch = s["batch"] or {}
    rows = [
        Row(
            "a call's busy CPU (the line through every call of every way): its candidates, "
            "plus each exec",
            f"{num(s['candidates_cpu_ms'], ' ms')} + {num(s['exec_cpu_ms'], ' ms')} an exec",
        )
    ]
    for count, way in sorted((s["threads"] or {}).items(), key=lambda kv: int(kv[0])):
        execs = f"; {num(way.get('execs'))} execs a call" if way.get("execs") else ""
        rows.append(
            Row(
                f"256 `grade` calls from {count} threads against one `grade_batch` call: "
                f"wall time (machine's busy CPU){execs}",
                aside(num(way.get("wall_ms"), " ms"), num(way.get("busy_cpu_ms"), " ms")),
                aside(num(batch.get("wall_ms"), " ms"), num(batch.get("busy_cpu_ms"), " ms")),
                f"**{num(way.get('wall_over_batch'), 'x')}** "
                f"({num(way.get('cpu_over_batch'), 'x')}) (threads / batch)",
                f"{num(target, 'x')} needs an exec at most "
                f"{num(way.get('exec_cost_for_target_ms'), ' ms')}",
            )
        )
    return rows


#: bench_pack_vehicles.py's vehicles, in its order.
VEHICLES = (
    "one-shot exec",
    "exec in a kept session",
    "cell of a kept kernel",
    "feeder in a kept session",
    "pack of 2",
    "pack of 8",
    "pack of 32",
)


VEHICLE_NAMES = {
    "one-shot exec": "a one-shot exec of `pass` (a fresh clone, then its wipe)",
    "exec in a kept session": "an exec of `pass` in a kept session",
    "cell of a kept kernel": "a cell `pass` of a kept kernel",
    "feeder in a kept session": "a feeder: an exec in a kept session handing 16 KB to a "
    "process left there, and printing its 2 KB answer",
    "pack of 2": "a `grade_batch` pack of 2",
    "pack of 8": "a `grade_batch` pack of 8",
    "pack of 32": "a `grade_batch` pack of 32",
}


def pack_vehicles_summary(f: Json, _: Json) -> Json:
    return {
        "guest_ms": {k: v["guest_ms"] for k, v in f.items() if isinstance(v, dict)},
        "wall_ms": {k: v["wall_ms"] for k, v in f.items() if isinstance(v, dict)},
        "pack_fixed_ms": f.get("pack_fixed_ms"),
        "pack_per_candidate_ms": f.get("pack_per_candidate_ms"),
    }


def pack_vehicles_rows(s: Summary) -> list[Row]:
    guest, wall = s["guest_ms"] or {}, s["wall_ms"] or {}
    base = guest.get(VEHICLES[0])
    rows = []
    for name in VEHICLES:
        if name not in guest:
            continue
        what = VEHICLE_NAMES.get(name, name)
        rows.append(
            Row(
                f"{what}: guest CPU a call (wall)",
                aside(num(guest[name], " ms"), num(wall.get(name), " ms")),
                num(base, " ms") if name in VEHICLES[1:4] else "-",
                times(ratio_of(guest[name], base), "vehicle / one-shot exec")
                if name in VEHICLES[1:4]
                else "-",
            )
        )
    rows.append(
        Row(
            "a pack's fixed cost (the line through the packs, at zero candidates); a candidate's",
            f"{num(s['pack_fixed_ms'], ' ms')}; {num(s['pack_per_candidate_ms'], ' ms')}",
        )
    )
    return rows


def http_parse_summary(f: Json, _: Json) -> Json:
    parse, request = f.get("parse_us", {}), f.get("request_cpu_us", {})
    lean = request.get("lean transport, called directly (the SDK)")
    mounted = request.get("lean transport, mounted on httpx.Client")
    theirs = request.get("httpx.HTTPTransport (httpcore + h11), directly")
    s: Json = {
        "request_lean_us": lean,
        "request_mounted_us": mounted,
        "request_httpx_us": theirs,
        "request_mounted_ratio": ratio_of(mounted, lean),
        "request_httpx_ratio": ratio_of(theirs, lean),
    }
    for size, key in (("1 KB", "1kb"), ("1 MB", "1mb")):
        ours, h11 = parse.get(size, {}).get("ours"), parse.get(size, {}).get("h11")
        s |= {f"parse_{key}_us": ours, f"parse_{key}_h11_us": h11}
        s[f"parse_{key}_ratio"] = ratio_of(h11, ours)
    return s


def http_parse_rows(s: Summary) -> list[Row]:
    return [
        *(
            s.versus(
                f"parsing {what}, CPU, the SDK's parser against h11",
                f"parse_{key}_us",
                f"parse_{key}_h11_us",
                " us",
                "h11 / ours",
                f"parse_{key}_ratio",
                inverse=True,
            )
            for what, key in (("a lone exec's answer (1 KB)", "1kb"), ("a pack's (1 MB)", "1mb"))
        ),
        s.versus(
            "one request (`GET /v1/health`, keep-alive), client CPU: the lean transport "
            "called directly, against httpx's own `HTTPTransport`",
            "request_lean_us",
            "request_httpx_us",
            " us",
            "httpx / lean",
            "request_httpx_ratio",
            inverse=True,
        ),
        s.versus(
            "the same: the lean transport mounted on `httpx.Client`, against it called directly",
            "request_mounted_us",
            "request_lean_us",
            " us",
            "mounted / direct",
            "request_mounted_ratio",
        ),
    ]


def skyrl_step_summary(f: Json, _: Json) -> Json:
    gen, alone = "generator, 32 env threads", "one at a time, no coalescing"
    rates, execs = f.get("rollouts_per_s", {}), f.get("execs_per_step", {})
    return {
        "rollouts": f.get("rollouts_per_step"),
        **two_ways(rates, gen, alone, "generator_rps", "one_at_a_time_rps"),
        "generator_execs": median(execs.get(gen, [])),
        "one_at_a_time_execs": median(execs.get(alone, [])),
        "rewards_agree": f.get("rewards_agree"),
    }


def skyrl_step_rows(s: Summary) -> list[Row]:
    rounds = in_rounds(s["rounds"])
    return [
        s.versus(
            f"a {num(s['rollouts'])}-rollout step built as SkyRL's generator builds it (32 env "
            f"threads), rollouts/s{rounds}, against one rollout at a time without coalescing",
            "generator_rps",
            "one_at_a_time_rps",
            "/s",
            "generator / one at a time",
            "ratio",
        ),
        Row(
            "execs a step",
            num(s["generator_execs"]),
            num(s["one_at_a_time_execs"]),
        ),
        Row("rewards identical both ways", num(s["rewards_agree"])),
    ]


#: bench_slime.py's ways, as its results name them.
GATHERED, GROUP_RM, SEQUENTIAL = (
    "reward_func, gathered on one loop",
    "group_reward_func (--group-rm)",
    "one sample after another",
)


def slime_summary(f: Json, _: Json) -> Json:
    rates = f.get("samples_per_s", {})
    return {
        "sizes": {
            str(size): {
                "gathered": rates[GATHERED][i],
                "group_rm": rates[GROUP_RM][i],
                "sequential": rates[SEQUENTIAL][i],
                "stall_ms": f.get("longest_loop_stall_ms", [None] * (i + 1))[i],
            }
            for i, size in enumerate(f.get("sizes", []))
        }
    }


def slime_rows(s: Summary) -> list[Row]:
    rows = []
    for size, way in (s["sizes"] or {}).items():
        rows += [
            versus(
                f"{size} samples, slime's per-sample `reward_func` calls gathered on one loop, "
                "samples/s, against the same samples one after another",
                way["gathered"],
                way["sequential"],
                "/s",
                "gathered / sequential",
            ),
            versus(
                f"{size} samples, `group_reward_func` (`--group-rm`) once per prompt, gathered",
                way["group_rm"],
                way["sequential"],
                "/s",
                "group-rm / sequential",
            ),
            Row(
                f"{size} samples, the longest the loop went without its 5 ms ticker",
                num(way["stall_ms"], " ms"),
            ),
        ]
    return rows


def verl_compute_score_summary(f: Json, _: Json) -> Json:
    return two_ways(
        f.get("grades_per_s", {}),
        "compute_score (coalesced into packs)",
        "one exec per call (coalesce=False)",
        "coalesced_gps",
        "one_exec_gps",
    )


def verl_compute_score_rows(s: Summary) -> list[Row]:
    rounds = in_rounds(s["rounds"])
    return [
        s.versus(
            "verl's per-sample `compute_score` from 32 threads, coalesced into packs, "
            f"grades/s{rounds}, against one exec per call",
            "coalesced_gps",
            "one_exec_gps",
            "/s",
            "packed / one exec a call",
            "ratio",
        )
    ]


def openenv_summary(f: Json, _: Json) -> Json:
    start, step = f.get("start_p50_s", {}), f.get("step_ms", {})
    boxed, plain = start.get("sandboxed session"), start.get("plain subprocess")
    ws = step.get("reset + step over /ws (Mode A)", {}).get("p50")
    direct = step.get("grade_async from the trainer (Mode B)", {}).get("p50")
    return {
        "start_sandboxed_s": boxed,
        "start_plain_s": plain,
        "start_ratio": ratio_of(boxed, plain),
        "step_ws_ms": ws,
        "step_direct_ms": direct,
        "step_ratio": ratio_of(ws, direct),
        "sessions": f.get("sessions"),
        "steps_per_s_at_once": f.get("steps_per_s_at_once"),
        "sessions_left": f.get("sessions_left"),
    }


def openenv_rows(s: Summary) -> list[Row]:
    return [
        s.versus(
            "starting the code environment's server, p50: as a sandbox session, against "
            "a plain subprocess on the host",
            "start_sandboxed_s",
            "start_plain_s",
            " s",
            "sandboxed / plain",
            "start_ratio",
        ),
        s.versus(
            "a step, p50: `reset` + `step` over `/ws` (the server grades through the "
            "backend), against `grade_async` called from the trainer",
            "step_ws_ms",
            "step_direct_ms",
            " ms",
            "`/ws` / direct",
            "step_ratio",
        ),
        Row(
            f"{num(s['sessions'])} sessions stepping at once, steps/s (sessions left after)",
            f"{num(s['steps_per_s_at_once'], '/s')} ({num(s['sessions_left'])} left)",
        ),
    ]


def sandbox_fusion_summary(f: Json, _: Json) -> Json:
    backends = f.get("backends", {})
    s: Json = {"bad_answers": sum(b.get("bad_answers", 0) for b in backends.values())}
    for asked, key in (("auto", "isolated"), ("process", "none")):
        b = backends.get(asked, {})
        ours, ref = b.get("run_code_req_per_s"), b.get("sandbox_fusion_req_per_s_not_measured_here")
        s |= {
            f"{key}_isolation": b.get("isolation"),
            f"{key}_req_s": ours,
            f"{key}_sandbox_fusion_req_s": ref,
            f"{key}_ratio": ratio_of(ours, ref),
            f"{key}_bare_exec_req_s": b.get("bare_exec_req_per_s"),
        }
    return s


def sandbox_fusion_rows(s: Summary) -> list[Row]:
    rows = []
    for key, what in (("isolated", "isolated"), ("none", "unisolated")):
        rows.append(
            s.versus(
                f"verl's request on `POST /run_code` from 32 threads, {what} "
                f"(ours: {s[f'{key}_isolation'] or 'n/a'}), requests/s, against SandboxFusion's "
                f"{what} figure on this machine",
                f"{key}_req_s",
                f"{key}_sandbox_fusion_req_s",
                " req/s",
                "ours / SandboxFusion",
                f"{key}_ratio",
            )
        )
        if s[f"{key}_bare_exec_req_s"] is not None:
            rows.append(
                Row(
                    f"the same threads on the bare `POST /v1/exec` ({what}): what the exec path "
                    "allows",
                    num(s[f"{key}_bare_exec_req_s"], " req/s"),
                )
            )
    if s["bad_answers"] is not None:
        rows.append(Row("wrong answers", num(s["bad_answers"])))
    return rows


#: The judging benchmarks' ways (bench_cpp_judge.py, bench_python_judge.py),
#: as their results name them.
SF_WAY, RUN_CODE_WAY, GRADE_BATCH_WAY, CONTEST_WAY = (
    "sandbox-fusion /run_code",
    "ours /run_code",
    "ours grade_batch",
    "ours grade_batch ContestReward",
)
#: Each of our ways: its key in a summary, and its target (SandboxFusion / ours).
JUDGE_WAYS = {
    RUN_CODE_WAY: ("run_code", 3),
    GRADE_BATCH_WAY: ("grade_batch", 20),
    CONTEST_WAY: ("grade_batch_contest", None),
}


def judge_summary(f: Json, _: Json) -> Json:
    seconds = f.get("seconds", {})
    sf = seconds.get(SF_WAY, [])
    s: Json = {
        "rounds": len(sf),
        "sandbox_fusion_s": median(sf),
        "sandbox_fusion_commit": f.get("sandbox_fusion_commit"),
        "failures": sum(sum(v.values()) for v in f.get("failures", {}).values()),
        "reward_mismatches": f.get("reward_mismatches"),
    }
    for way, (key, _target) in JUDGE_WAYS.items():
        if way not in seconds:
            continue
        ours = seconds[way]
        s |= {
            f"{key}_s": median(ours),
            f"{key}_ratio": ratio_of(median(sf), median(ours)),
            f"{key}_ratio_rounds": [a / b for a, b in zip(sf, ours, strict=True)],
        }
    return s


def judge_rows(title: str, batch: str) -> Callable[[Summary], list[Row]]:
    """The rows of a judging benchmark: ``title`` names its language's
    judging ("C++ judging"), ``batch`` the spec of its ``grade_batch`` way."""
    ways = {
        "run_code": ("ours on `/run_code`, driven the same way", "our `/run_code`"),
        "grade_batch": (f"ours, one `grade_batch` call with {batch}", "our `grade_batch`"),
        "grade_batch_contest": (
            "ours, one `grade_batch` call with `ContestReward` (the judge route)",
            "our `grade_batch` with `ContestReward`",
        ),
    }

    def rows_of(s: Summary) -> list[Row]:
        rounds = of_rounds(s["rounds"]) or "median of the rounds"
        commit = s["sandbox_fusion_commit"]
        sf = f" (at `{commit}`)" if commit else ""
        rows = []
        for key, target in JUDGE_WAYS.values():
            if s[f"{key}_s"] is None:
                continue
            what, short = ways[key]
            each = ", ".join(num(r, "x") for r in s[f"{key}_ratio_rounds"] or [])
            ratio = s.ratio(f"{key}_ratio", s["sandbox_fusion_s"], s[f"{key}_s"])
            rows.append(
                Row(
                    f"seconds for the workload ({rounds}): {what}, against SandboxFusion{sf}",
                    num(s[f"{key}_s"], " s"),
                    num(s["sandbox_fusion_s"], " s"),
                    times(ratio, "SandboxFusion / ours") + (f"; rounds {each}" if each else ""),
                    f"at least {target}x" if target else "-",
                    at_least(ratio, target) if target else None,
                    f"{title}: {short} against SandboxFusion's `/run_code`",
                )
            )
        rows.append(
            Row(
                "rewards different from the reference's; failures (timeouts, errors)",
                f"{num(s['reward_mismatches'])}; {num(s['failures'])}",
            )
        )
        return rows

    return rows_of


def language_latency_summary(f: Json, _: Json) -> Json:
    return {"languages": f.get("languages", []), "skipped": f.get("skipped", {})}


def language_latency_rows(s: Summary) -> list[Row]:
    rows = [
        Row(
            f"{row['language']} ({row['toolchain']}, {row['kind']}): first request; the same again",
            f"{num(row['first_ms'], ' ms')}; {num(row['cached_ms'], ' ms')}",
        )
        for row in s["languages"] or []
    ]
    for name, why in (s["skipped"] or {}).items():
        rows.append(Row(f"{name}: skipped", why))
    return rows


def tool_latency_rows(s: Summary) -> list[Row]:
    """The rows of one workload of a tool-call benchmark (python tool, verl tool)."""
    a, b = s["ours"] or {}, s["theirs"] or {}
    rows = []
    for key, what in (
        ("p50_ms", "p50, every call"),
        ("p99_ms", "p99, every call"),
        ("first_call_p50_ms", "p50 of each trajectory's first call (ours starts its sandbox)"),
        ("later_calls_p50_ms", "p50 of the later calls"),
    ):
        rows.append(
            versus(f"{s['workload']}: {what}", a.get(key), b.get(key), " ms", "ours / theirs")
        )
    if s["outputs_agree"] is not None:
        rows.append(Row(f"{s['workload']}: outputs identical", num(s["outputs_agree"])))
    return rows


PYTHON_TOOL_OURS = "ours: sandbox kernel per trajectory"
PYTHON_TOOL_THEIRS = "skyrl-gym: python -c per call"


def python_tool_summary(f: Json, _: Json) -> Json:
    return {
        "workloads": {
            name: {
                "ours": w.get(PYTHON_TOOL_OURS, {}),
                "theirs": w.get(PYTHON_TOOL_THEIRS, {}),
                "outputs_agree": w.get("outputs", {}).get("agree"),
            }
            for name, w in f.get("workloads", {}).items()
        }
    }


def python_tool_rows(s: Summary) -> list[Row]:
    rows = []
    for name, w in (s["workloads"] or {}).items():
        workload = Summary({"workload": name, **w})
        rows += tool_latency_rows(workload)
    return rows


def verl_tool_summary(f: Json, _: Json) -> Json:
    latency = f.get("latency", {})
    return {
        "ours": latency.get("CollimatePythonTool (verl)"),
        "theirs": latency.get("skyrl-gym python -c"),
    }


def verl_tool_rows(s: Summary) -> list[Row]:
    w = Summary({"workload": "self-contained", "ours": s["ours"], "theirs": s["theirs"]})
    return tool_latency_rows(w)


def kernel_fork_summary(f: Json, _: Json) -> Json:
    return {
        "forks": f.get("forks"),
        "build_s": f.get("build_s"),
        "fork_s": f.get("fork_s"),
        "fork_over_build": f.get("fork_over_build"),
        "first_cell_s": f.get("first_cell_s"),
        "parent_mib": f.get("parent_mib"),
        "fork_mib": f.get("per_fork_mib_after_write"),
    }


#: The object a kernel builds before it forks: 100 MB, in MiB.
OBJECT_MIB = 100e6 / 2**20


def kernel_fork_rows(s: Summary) -> list[Row]:
    n = num(s["forks"] or 8)
    fork, parent = s["fork_mib"] or {}, s["parent_mib"] or {}

    def memory(m: Json) -> str:
        return (
            f"{num(m.get('USS'), ' MiB')}; {num(m.get('RSS'), ' MiB')}, {num(m.get('PSS'), ' MiB')}"
        )

    return [
        versus(
            f"`kernel.fork({n})` until all {n} are confined and listening, against building "
            "the 100 MB object once (median of the rounds)",
            s["fork_s"],
            s["build_s"],
            " s",
            "forks / build",
            s["fork_over_build"],
            target="below 1x",
            met=at_most(s["fork_over_build"], 1),
            short=f"`kernel.fork({n})` against building the object once",
        ),
        Row("then one cell on each fork in turn", num(s["first_cell_s"], " s")),
        Row(
            "each fork after it wrote one byte of the object: its own memory (USS), "
            "against the object's size; RSS, PSS",
            memory(fork),
            num(OBJECT_MIB, " MiB"),
            f"{num(ratio_of(fork.get('USS'), OBJECT_MIB))} (USS / object)",
            "a small fraction",
        ),
        Row("the parent kernel: USS; RSS, PSS", memory(parent)),
    ]


def engine_oneshot_summary(f: Json, _: Json) -> Json:
    return {"cpu_accounting": f.get("cpu_accounting"), "modes": f.get("modes")}


def engine_oneshot_rows(s: Summary) -> list[Row]:
    rows = []
    for mode, m in (s["modes"] or {}).items():
        rows.append(
            Row(
                f"`--modes {mode}` (ran as {m.get('isolation')}): one-shot `print(1)`, p50 (p99); "
                f"CPU an exec, teardown included ({s['cpu_accounting']})",
                f"{num(m.get('p50_ms'), ' ms')} ({num(m.get('p99_ms'), ' ms')}); "
                f"{num(m.get('cpu_per_exec_ms'), ' ms')} CPU",
            )
        )
    return rows


def ray_route_summary(f: Json, _: Json) -> Json:
    keys = (
        "ratio_median",
        "target_ratio",
        "ray_route_ms_median",
        "direct_ms_median",
        "connect_finds_graders_ms_first",
        "connect_finds_graders_ms_again",
    )
    return {k: f.get(k) for k in keys}


def ray_route_rows(s: Summary) -> list[Row]:
    limit = s["target_ratio"] or 1.1
    return [
        versus(
            "the default call (a one-shot `exec_once` of `print(1)`) through the client "
            "`connect()` finds inside Ray, against a client given the grader's URL "
            "(median of paired rounds)",
            s["ray_route_ms_median"],
            s["direct_ms_median"],
            " ms",
            "Ray route / direct",
            s["ratio_median"],
            most=limit,
            short="the default call through the Ray route against a direct URL",
        ),
        Row(
            "`connect()` finding the graders: the first time in a process; after",
            f"{num(s['connect_finds_graders_ms_first'], ' ms')}; "
            f"{num(s['connect_finds_graders_ms_again'], ' ms')}",
        ),
    ]


#: Every benchmark, in the README's order, under the README's headings.
SECTIONS: list[tuple[str, str, list[Bench]]] = [
    (
        "Against collimate-rl 0.5.0",
        "The published `collimate-rl==0.5.0` in a venv of its own (`/tmp/peer` if present, "
        "else one made once in `~/.cache`), its local backend a process of its own beside "
        "ours, rounds interleaved.",
        [
            Bench(
                "bench_exec_latency.py",
                "One-shot exec latency",
                "`POST /v1/exec` of `print(1)`, one at a time after a warm-up, the same "
                "keep-alive client on both backends.",
                exec_latency_summary,
                exec_latency_rows,
            ),
            Bench(
                "bench_grade_throughput.py",
                "Grading one GRPO group",
                "256 candidates graded with `PropertyReward(k=16)` under one seed: the "
                "documented call, its async twin and two ways of grading one candidate per "
                "call, against 0.5.0's `grade_batch`; every way's rewards must equal 0.5.0's.",
                grade_throughput_summary,
                grade_throughput_rows,
            ),
            Bench(
                "bench_grade_latency.py",
                "A lone grade's latency",
                "One candidate at a time with nothing else in flight: does the coalescer "
                "make a grade that arrives alone wait?",
                grade_latency_summary,
                grade_latency_rows,
            ),
        ],
    ),
    (
        "Against other projects",
        "Each peer is run here, in the same run, unless the table says otherwise.",
        [
            Bench(
                "bench_cpp_judge.py",
                "C++ contest grading against SandboxFusion",
                "ByteDance's SandboxFusion server run on this machine from its repository "
                "(`_sandbox_fusion_peer.py`, isolation `none`), driven as verl drives it; "
                "ours compile-cache cold every round; rewards checked against a reference.",
                judge_summary,
                judge_rows("C++ judging", "`ContestReward`"),
            ),
            Bench(
                "bench_python_judge.py",
                "Python stdin/stdout grading against SandboxFusion",
                "The same eight problems, models and checks as the C++ table, in Python 3: "
                "8 prompts x 8 candidates x 15 tests (the shape of the verifiable coding "
                "problems RL sets use), SandboxFusion's own server driven as verl drives it.",
                judge_summary,
                judge_rows(
                    "Python judging",
                    "the `StdioReward` verl's adapter makes of the ground truth",
                ),
            ),
            Bench(
                "bench_sandbox_fusion.py",
                "verl's SandboxFusion requests on our `/run_code`",
                "SandboxFusion's own figures are reference constants of the script, measured "
                "earlier on this machine, **not** in the run.",
                sandbox_fusion_summary,
                sandbox_fusion_rows,
            ),
            Bench(
                "bench_python_tool.py",
                "skyrl-gym's `python` tool",
                "64 trajectories x 10 calls at once from 64 threads through "
                "`ToolGroup.execute_tool`: ours (isolated, state kept per trajectory) against "
                "skyrl-gym 0.4.0's `PythonCodeExecutorToolGroup` (`python -c` per call, "
                "unisolated).",
                python_tool_summary,
                python_tool_rows,
            ),
            Bench(
                "bench_verl_tool.py",
                "verl's tool calls",
                "64 trajectories x 10 calls made as verl's `ToolAgentLoop` makes them on "
                "`CollimatePythonTool`, against skyrl-gym's `python -c` tool on the same "
                "self-contained calls.",
                verl_tool_summary,
                verl_tool_rows,
            ),
            Bench(
                "bench_http_parse.py",
                "The SDK's HTTP/1.1 parser and transport",
                "Why the SDK keeps its own answer parser (against h11) and calls its "
                "transport directly (against httpx's).",
                http_parse_summary,
                http_parse_rows,
            ),
        ],
    ),
    (
        "The framework adapters",
        "Each adapter's way of calling the grader against the same work without "
        "coalescing, on one local backend.",
        [
            Bench(
                "bench_grade_step.py",
                "A training step in one call",
                "32 prompts x 8 completions in four dataset formats (MBPP, KodCode, APPS, "
                "open-r1), one spec per completion.",
                grade_step_summary,
                grade_step_rows,
            ),
            Bench(
                "bench_skyrl_step.py",
                "A SkyRL step",
                'Envs made by `skyrl_gym.make("collimate_code", ...)` and stepped in '
                "SkyRL's thread pool; the other side grades each rollout alone.",
                skyrl_step_summary,
                skyrl_step_rows,
            ),
            Bench(
                "bench_slime.py",
                "slime's reward dispatch",
                "`collimate_rl.slime.reward_func` awaited per sample on one loop, as slime "
                "does, and its `--group-rm` path.",
                slime_summary,
                slime_rows,
            ),
            Bench(
                "bench_verl_compute_score.py",
                "verl's `compute_score`",
                "The same grade (code, spec, seed, client) each way.",
                verl_compute_score_summary,
                verl_compute_score_rows,
            ),
            Bench(
                "bench_openenv.py",
                "OpenEnv: the environment server as a sandbox",
                "Needs an OpenEnv line and `openenv-collimate-code`: run in the `openenv` "
                "environment.",
                openenv_summary,
                openenv_rows,
                run_with="hatch run openenv:python",
            ),
            Bench(
                "bench_ray_route.py",
                "Ray: the route `connect()` finds",
                "A one-node Ray cluster on this machine, its grader started by "
                "`collimate_rl.ray.up()`.",
                ray_route_summary,
                ray_route_rows,
            ),
        ],
    ),
    (
        "Costs and diagnostics",
        "What the design costs, measured to decide what to build; no peer unless named.",
        [
            Bench(
                "bench_pack_cpu.py",
                "CPU per graded candidate",
                "Read from the guest processes' own and reaped CPU (`/proc/<pid>/stat`); "
                "the machine's floor is measured in every round beside it, since it moves "
                "from one day to the next.",
                pack_cpu_summary,
                pack_cpu_rows,
            ),
            Bench(
                "bench_exec_count.py",
                "What one more exec costs a grading call",
                "The same group graded by one `grade_batch` and by 256 `grade` calls from "
                "16, 32 and 64 threads (fewer threads, more and smaller packs).",
                exec_count_summary,
                exec_count_rows,
            ),
            Bench(
                "bench_pack_vehicles.py",
                "What carrying a pack costs",
                "Each vehicle a pack could ride, on a one-slot backend, against the one-shot "
                "exec packs ride today.",
                pack_vehicles_summary,
                pack_vehicles_rows,
            ),
            Bench(
                "bench_kernel_fork.py",
                "Forking a live kernel",
                "A kernel holding a 100 MB object forks 8 copies of itself.",
                kernel_fork_summary,
                kernel_fork_rows,
            ),
            Bench(
                "bench_engine_oneshot.py",
                "The engine alone",
                "One-shot execs straight against the local backend's engine (no HTTP), "
                "per isolation mode.",
                engine_oneshot_summary,
                engine_oneshot_rows,
            ),
            Bench(
                "bench_language_latency.py",
                "One `/run_code` per language",
                "A program echoing a line of stdin (a passing test in a test-framework "
                "mode), wall ms at the client: the first request of a new source (a cold "
                "compile cache) and the same request again; median of the rounds.",
                language_latency_summary,
                language_latency_rows,
            ),
        ],
    ),
]


# --------------------------------------------------------------------------
# The runs


@dataclass(frozen=True)
class Run:
    path: Path
    data: Json

    @property
    def info(self) -> Json:
        run: Json = self.data.get("run", {})
        return run

    @property
    def date(self) -> str:
        return str(self.info.get("date", ""))


def load_runs(dirs: Sequence[Path]) -> dict[str, Run]:
    """The newest run of each benchmark (``<script stem>``) in ``dirs``, by
    the day of its ``run.date``; of two runs of one day, the earlier folder's."""
    newest: dict[str, tuple[tuple[str, int], Run]] = {}
    for rank, folder in enumerate(dirs):
        for path in sorted(folder.glob("bench_*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise Problem(f"{path}: not JSON: {exc}") from exc
            if not isinstance(data, dict) or not isinstance(data.get("run"), dict):
                raise Problem(f"{path}: no 'run' entry")
            if ("figures" in data) == ("summary" in data):
                raise Problem(f"{path}: needs either 'figures' or 'summary'")
            run = Run(path, data)
            if not run.date[:10]:
                raise Problem(f"{path}: run.date is missing")
            name = str(data.get("benchmark") or path.stem)
            key = (run.date[:10], -rank)
            if name not in newest or key > newest[name][0]:
                newest[name] = (key, run)
    return {name: run for name, (_, run) in newest.items()}


def summary_of(bench: Bench, run: Run) -> Json:
    if "summary" in run.data:
        given: Json = run.data["summary"]
        return given
    options: Json = run.info.get("options") or {}
    return bench.summarize(run.data["figures"], options)


# --------------------------------------------------------------------------
# The Markdown


def shown_date(date: str) -> str:
    """``2026-12-02T21:46:52+00:00`` as ``2026-12-02 21:46 UTC``; else as written."""
    if len(date) >= 16 and date[10] == "T" and date.endswith("+00:00"):
        return f"{date[:10]} {date[11:16]} UTC"
    return date


def run_line(run: Run) -> str:
    info = run.info
    parts = [f"run of {shown_date(run.date)}"]
    commits = [c.strip() for c in str(info.get("commit") or "").split(",") if c.strip()]
    if commits:
        parts.append(
            ("commits " if len(commits) > 1 else "commit ") + ", ".join(f"`{c}`" for c in commits)
        )
    else:
        parts.append("commit not recorded")
    if info.get("cpus"):
        parts.append(f"{info['cpus']} CPUs")
    loads = [
        f"{info[key][0]:g} at its {when}"
        for key, when in (("load_average_at_start", "start"), ("load_average_at_end", "end"))
        if info.get(key)
    ]
    if loads:
        parts.append("load average " + " and ".join(loads))
    line = ", ".join(parts)
    for key in ("machine", "note"):
        if info.get(key):
            line += f"; {str(info[key]).rstrip('.')}"
    return line + "."


def source_line(run: Run) -> str:
    rel = run.path.relative_to(HERE.parent).as_posix()
    section = run.info.get("transcribed_from")
    if section:
        return f"`{rel}`, copied from {section}"
    return f"`{rel}`, as the script wrote it"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(rows: Sequence[Row]) -> Iterator[str]:
    yield "| | ours | compared with | ratio | target |"
    yield "|---|---|---|---|---|"
    for r in rows:
        cells = (r.measure, r.ours, r.theirs, r.ratio, r.verdict())
        yield "| " + " | ".join(cell(c) for c in cells) + " |"


@dataclass
class Rendered:
    text: str
    problems: list[str]


def render(runs: dict[str, Run], scripts: Sequence[str]) -> Rendered:
    """The Markdown between the markers, and what is wrong with the runs."""
    problems: list[str] = []
    listed = [b.script for _, _, benches in SECTIONS for b in benches]
    for script in scripts:
        if script not in listed:
            problems.append(f"{script}: no table in readme_tables.py (add it to SECTIONS)")
    for name in runs:
        if f"{name}.py" not in listed:
            problems.append(f"{runs[name].path}: no benchmark {name}.py has a table")

    glance: list[tuple[str, Row, str]] = []
    blocks: list[str] = []
    for heading, intro, benches in SECTIONS:
        blocks += [f"## {heading}", "", intro, ""]
        for bench in benches:
            run = runs.get(bench.script.removesuffix(".py"))
            blocks += [f"### {bench.title} (`{bench.script}`)", "", bench.about, ""]
            if run is None:
                blocks += [
                    "No run recorded yet: run the command below, then "
                    "`python benchmarks/readme_tables.py`.",
                    "",
                    f"- command: `{bench.command([])}`",
                    "",
                ]
                continue
            values = Summary(summary_of(bench, run))
            try:
                rows = bench.rows(values)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                problems.append(f"{run.path}: its figures do not fit the table: {exc!r}")
                continue
            if "summary" in run.data and values.unread():
                problems.append(f"{run.path}: summary keys no row reads: {values.unread()}")
            glance += [(bench.script, r, run.date[:10]) for r in rows if r.met is not None]
            argv = [str(a) for a in run.info.get("argv") or []]
            blocks += [
                *table(rows),
                "",
                f"- {run_line(run)}",
                f"- file: {source_line(run)}",
                f"- command: `{bench.command(argv)}`",
                "",
            ]
    head = [
        NOTICE,
        "",
        "## The targets today",
        "",
        "Each figure that has a target, from the newest run of its benchmark (below).",
        "",
        "| figure | today | target | run | benchmark |",
        "|---|---|---|---|---|",
        *(
            f"| {cell(r.short or r.measure)} | {cell(r.ratio if r.ratio != '-' else r.ours)} "
            f"| {cell(r.verdict())} | {date} | `{script}` |"
            for script, r, date in glance
        ),
        "",
    ]
    return Rendered("\n".join(head + blocks).rstrip("\n") + "\n", problems)


def replace_tables(readme: str, tables: str) -> str:
    if readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise Problem(f"{README}: needs one {BEGIN} line and one {END} line")
    before, rest = readme.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    return f"{before}{BEGIN}\n{tables}{END}{after}"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the README differs"
    )
    args = ap.parse_args(argv)
    try:
        runs = load_runs(RESULT_DIRS)
        scripts = sorted(p.name for p in HERE.glob("bench_*.py"))
        rendered = render(runs, scripts)
        old = README.read_text(encoding="utf-8")
        new = replace_tables(old, rendered.text)
    except (OSError, Problem) as exc:
        print(f"readme_tables: {exc}", file=sys.stderr)
        return 1
    for problem in rendered.problems:
        print(f"readme_tables: {problem}", file=sys.stderr)
    if rendered.problems:
        return 1
    if new == old:
        print(f"{README.relative_to(HERE.parent)}: the tables are up to date")
        return 0
    if args.check:
        diff = difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            "README.md (committed)",
            "README.md (from the results files)",
        )
        sys.stdout.writelines(diff)
        print(
            f"{README.relative_to(HERE.parent)}: the tables differ from the results files; "
            "run python benchmarks/readme_tables.py"
        )
        return 1
    README.write_text(new, encoding="utf-8")
    print(f"{README.relative_to(HERE.parent)}: tables rewritten from {len(runs)} results files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
