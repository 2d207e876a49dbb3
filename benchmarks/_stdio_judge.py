"""Judging stdin/stdout programs of a training step, side by side on one
machine in one run: SandboxFusion's own server driven as verl drives it,
our local backend's ``/run_code`` driven the same way, and one documented
``grade_batch`` call (the driver of ``bench_cpp_judge.py`` and
``bench_python_judge.py``; not a benchmark itself: no ``bench_`` prefix).

Why: verl's sandbox_fusion reward sends one ``POST /run_code`` per test case.
This measures that pattern on SandboxFusion (run here from its repository by
``_sandbox_fusion_peer.py``: its own server, venv and ``local`` config,
isolation ``none``) and on ours (``_sides.ours_backend``), and what grading
each group in one call saves (the language's :class:`Language` names the
reward specs, one way each).

The workload: prompts x distinct candidates x tests, Codeforces-style
stdin/stdout programs, right and wrong ones, each wrong one with a Python
model of what it prints (``_judge_problems.py``), so every candidate's
reward is known beforehand. Every way's rewards must equal those, and any
timeout, HTTP, compile, run or infra error is a failure: either makes the
run exit 1. The ways take turns in interleaved rounds, each round's and
way's sources carrying a comment of their own, so nothing is cached across
ways or rounds (our compile cache is cold for every way and round).
``--compile-timeout`` (default 120 s, verl's is 10) goes in both sides'
bodies: SandboxFusion's compile timeout is wall time, which 32 concurrent
compiles on a small machine outlast; ours counts CPU time. A limit decides
what is killed, never how fast anything runs.

Targets (medians of rounds): SandboxFusion / ours ``/run_code`` at least 3x,
SandboxFusion / ours ``grade_batch`` at least 20x. ``--quick``: 2 prompts x
4 candidates x 3 tests, 1 round (a smoke run).
"""

from __future__ import annotations

import argparse
import http.client
import math
import os
import random
import re
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from _judge_problems import Problem, load_problems
from _results import add_out_option, write_results
from _sandbox_fusion_peer import (
    DEFAULT_CHECKOUT,
    checkout_commit,
    ensure_sandbox_fusion_venv,
    run_code,
    sandbox_fusion_checkout,
    sandbox_fusion_repo,
    sandbox_fusion_server,
)
from _sides import ours_backend

from collimate_rl import CollimateClient, RewardSpec, grade_batch

#: A prompt's tests (input, expected output) to the spec one ``grade_batch`` way grades it by.
SpecOf = Callable[[list[tuple[str, str]]], RewardSpec]


@dataclass(frozen=True)
class BatchWay:
    """One way of grading the whole workload in one ``grade_batch`` call."""

    name: str  # as the results and the README name it: "ours grade_batch"
    label: str  # as the charts name it
    spec_of: SpecOf


@dataclass(frozen=True)
class Language:
    """What one benchmark judges: its candidates' language and what differs
    with it."""

    name: str  # as both servers' /run_code takes it: "cpp", "python"
    title: str  # as printed: "C++"
    script: str  # the benchmark's file: names its results and seeds its tests
    problems_dir: Path
    comment: str  # a line comment's start: "//", "#"
    #: A program printing the sum of the two integers of its stdin (the warm-up).
    add_two: str
    batch_ways: tuple[BatchWay, ...]
    tests: int  # the default tests per prompt
    rounds: int  # the default rounds

    @property
    def ways(self) -> tuple[str, ...]:
        return (SF_WAY, RUN_CODE_WAY, *(w.name for w in self.batch_ways))

    @property
    def labels(self) -> dict[str, str]:
        return {
            SF_WAY: "SandboxFusion /run_code (its own server)",
            RUN_CODE_WAY: "ours /run_code (same client, same requests)",
            **{w.name: w.label for w in self.batch_ways},
        }


#: verl's extra wait for an answer beyond compile and run (its API_TIMEOUT).
API_TIMEOUT_S = 10

SF_WAY, RUN_CODE_WAY, BATCH_WAY = "sandbox-fusion /run_code", "ours /run_code", "ours grade_batch"

#: Targets: sandbox-fusion's seconds over ours (median of rounds).
TARGETS = {RUN_CODE_WAY: 3.0, BATCH_WAY: 20.0}

#: A /run_code answer's kinds that are the program's own (a test passed or not).
PROGRAM_KINDS = ("pass", "wrong")


# ---------------------------------------------------------------- the workload


@dataclass(frozen=True)
class Prompt:
    name: str
    tests: list[tuple[str, str]]  # (input, expected output)
    sources: list[str]  # one per candidate (before the round's tag)
    notes: list[str]
    expected: list[float]  # each candidate's reward


def _verl_pass(stdout: str, expected: str) -> bool:
    return stdout.rstrip("\n") == expected.rstrip("\n")


def build_workload(
    language: Language, problems: tuple[Problem, ...], prompts: int, candidates: int, tests: int
) -> list[Prompt]:
    """``prompts`` prompts (the problems in turn, each with its own seeded
    tests), ``candidates`` distinct sources each, and every candidate's
    expected reward from the Python models."""
    out = []
    n = len(problems)
    for p in range(prompts):
        problem = problems[p % n]
        rng = random.Random(f"{Path(language.script).stem}/{problem.name}/{p}")
        inputs = [problem.generate(rng, i) for i in range(tests)]
        answers = [problem.reference(inp) for inp in inputs]
        sources, notes, expected = [], [], []
        for c in range(candidates):
            cand = problem.candidates[c % len(problem.candidates)]
            source = cand.source
            if p >= n:
                source += f"{language.comment} prompt {p}\n"
            if c >= len(problem.candidates):
                source += f"{language.comment} sample {c}\n"
            model = cand.model or problem.reference
            passed = 0
            for inp, answer in zip(inputs, answers, strict=True):
                printed = model(inp)
                verl = _verl_pass(printed, answer)
                # the judge compares tokens: the two must agree on every pair
                assert verl == (printed.split() == answer.split()), (problem.name, c, inp)
                passed += verl
            sources.append(source)
            notes.append(cand.note)
            expected.append(passed / tests)
        assert len(set(sources)) == len(sources), f"{problem.name}: candidates not distinct"
        label = problem.name if p < n else f"{problem.name} #{p}"
        out.append(Prompt(label, list(zip(inputs, answers, strict=True)), sources, notes, expected))
    return out


def tagged(language: Language, source: str, way: str, round_no: int) -> str:
    """The source as submitted by ``way`` in round ``round_no``: nothing is
    shared with any other way or round (a cold compile cache)."""
    tag = re.sub(r"[^a-z0-9]+", "-", way.lower()).strip("-")
    return f"{source}{language.comment} {tag} round {round_no}\n"


# ---------------------------------------------------------------- the ways


@dataclass
class WayRun:
    seconds: float
    rewards: list[float]
    failures: Counter[str]
    first_message: dict[str, str]
    cache: dict[str, int] | None = None


def classify(answer: dict[str, Any], expected: str) -> str:
    """One ``/run_code`` answer: ``pass``, ``wrong`` (the program's own
    failure) or the kind of failure that is not the program's."""
    if answer.get("status") == "SandboxError":
        return "SandboxError"
    compiled = answer.get("compile_result") or {}
    if compiled.get("status") == "TimeLimitExceeded":
        return "compile timeout"
    if compiled and (compiled.get("status") != "Finished" or compiled.get("return_code") != 0):
        return "compile error"
    run = answer.get("run_result") or {}
    if run.get("status") == "TimeLimitExceeded":
        return "run timeout"
    if run.get("status") != "Finished" or run.get("return_code") != 0:
        return "run error"
    if answer.get("status") == "Success" and _verl_pass(str(run.get("stdout")), expected):
        return "pass"
    return "wrong"


def _summary(answer: dict[str, Any]) -> str:
    text = repr(answer)
    return text if len(text) < 600 else text[:600] + "..."


def drive_run_code(
    language: Language,
    url: str,
    workload: list[Prompt],
    way: str,
    round_no: int,
    threads: int,
    compile_timeout: float,
    run_timeout: float,
) -> WayRun:
    """verl's pattern: one ``/run_code`` per (candidate, test), ``threads``
    threads, a keep-alive connection each, verl's wait for an answer."""
    host, port = url.removeprefix("http://").split(":")
    wait = compile_timeout + run_timeout + API_TIMEOUT_S
    tasks: list[tuple[int, dict[str, Any], str]] = []
    slot = 0
    for prompt in workload:
        for source in prompt.sources:
            code = tagged(language, source, way, round_no)
            for inp, answer in prompt.tests:
                body = {
                    "code": code,
                    "stdin": inp,
                    "compile_timeout": compile_timeout,
                    "run_timeout": run_timeout,
                    "memory_limit_MB": 1024,
                    "language": language.name,
                    "files": {},
                    "fetch_files": [],
                }
                tasks.append((slot, body, answer))
            slot += 1
    kinds: list[str] = [""] * len(tasks)
    first_message: dict[str, str] = {}
    lock = threading.Lock()
    left = iter(range(len(tasks)))

    def worker() -> None:
        conn: http.client.HTTPConnection | None = None
        while True:
            with lock:
                i = next(left, None)
            if i is None:
                break
            _, body, expected = tasks[i]
            if conn is None:
                conn = http.client.HTTPConnection(host, int(port), timeout=wait)
            message = ""
            try:
                answer = run_code(conn, body)
                kind = classify(answer, expected)
                message = _summary(answer)
            except TimeoutError as exc:
                kind, message = "client timeout", f"no answer within {wait:g} s ({exc})"
            except RuntimeError as exc:  # run_code: an HTTP status other than 200
                kind, message = "http error", str(exc)[:600]
            except (OSError, http.client.HTTPException, ValueError) as exc:
                kind, message = type(exc).__name__, str(exc)[:600]
            if kind not in PROGRAM_KINDS and conn is not None:
                conn.close()
                conn = None
            with lock:
                kinds[i] = kind
                if kind not in PROGRAM_KINDS:
                    first_message.setdefault(kind, message)
        if conn is not None:
            conn.close()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    started = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - started
    passed = [0] * slot
    tests = [0] * slot
    for (cand, _, _), kind in zip(tasks, kinds, strict=True):
        passed[cand] += kind == "pass"
        tests[cand] += 1
    failures = Counter(k for k in kinds if k not in PROGRAM_KINDS)
    return WayRun(
        seconds, [p / t for p, t in zip(passed, tests, strict=True)], failures, first_message
    )


def drive_grade_batch(
    language: Language, url: str, workload: list[Prompt], way: BatchWay, round_no: int
) -> WayRun:
    """The documented call, timed: one spec per prompt, listed once per
    candidate."""
    candidates, specs = [], []
    for prompt in workload:
        spec = way.spec_of(prompt.tests)
        for source in prompt.sources:
            candidates.append(tagged(language, source, way.name, round_no))
            specs.append(spec)
    failures: Counter[str] = Counter()
    first_message: dict[str, str] = {}
    with CollimateClient(url) as client:
        started = time.perf_counter()
        try:
            results = grade_batch(client, "py", candidates, specs)
        except Exception as exc:  # an infra error (on_infra_error="raise") or worse
            seconds = time.perf_counter() - started
            failures["grade_batch raised"] += 1
            first_message["grade_batch raised"] = f"{type(exc).__name__}: {exc}"[:600]
            return WayRun(seconds, [math.nan] * len(candidates), failures, first_message)
        seconds = time.perf_counter() - started
    rewards = []
    for result in results:
        if result.infra_error or result.verdict == "infra_error":
            failures["infra_error"] += 1
            first_message.setdefault("infra_error", str(result.error or result.detail)[:600])
        elif result.detail.get("load_error"):
            failures["compile error"] += 1
            first_message.setdefault("compile error", str(result.detail["load_error"])[:600])
        rewards.append(result.reward)
    return WayRun(seconds, rewards, failures, first_message)


# ---------------------------------------------------------------- helpers


def compile_cache(url: str) -> dict[str, int]:
    health = httpx.get(f"{url}/v1/health", timeout=30).json()
    counters: dict[str, int] = health.get("compile_cache") or {}
    return counters


def cache_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in ("compiles", "hits", "joined")}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def check_rewards(way: str, round_no: int, run: WayRun, workload: list[Prompt]) -> list[str]:
    """Differences between a way's rewards and the expected ones (printed)."""
    expected = [r for prompt in workload for r in prompt.expected]
    where = [
        (prompt.name, c, prompt.notes[c]) for prompt in workload for c in range(len(prompt.sources))
    ]
    wrong = []
    for (name, c, note), want, got in zip(where, expected, run.rewards, strict=True):
        if not (got == want or abs(got - want) < 1e-9):
            wrong.append(
                f"{way}, round {round_no}: {name} candidate {c} ({note}): "
                f"expected {want:g}, got {got:g}"
            )
    if wrong:
        print(f"  !! REWARD MISMATCH: {len(wrong)} of {len(expected)} candidates", flush=True)
        for line in wrong[:20]:
            print(f"     {line}", flush=True)
        if len(wrong) > 20:
            print(f"     ... and {len(wrong) - 20} more", flush=True)
    return wrong


def warm_up(
    language: Language, sf_url: str, ours_url: str, compile_timeout: float, run_timeout: float
) -> None:
    """One request each of a program outside the workload (SandboxFusion
    probes its g++ flags on its first C++ request), and one call of each
    ``grade_batch`` way."""
    source = f"{language.add_two}{language.comment} warm-up\n"
    body = {
        "code": source,
        "stdin": "20 22\n",
        "compile_timeout": compile_timeout,
        "run_timeout": run_timeout,
        "memory_limit_MB": 1024,
        "language": language.name,
        "files": {},
        "fetch_files": [],
    }
    for url in (sf_url, ours_url):
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=300)
        try:
            kind = classify(run_code(conn, body), "42\n")
        finally:
            conn.close()
        if kind != "pass":
            raise RuntimeError(f"warm-up /run_code on {url} answered {kind}")
    with CollimateClient(ours_url) as client:
        for way in language.batch_ways:
            spec = way.spec_of([("1 2\n", "3\n")])
            code = f"{source}{language.comment} {way.name}\n"
            (result,) = grade_batch(client, "py", [code], spec)
            if result.reward != 1.0:
                raise RuntimeError(f"warm-up of {way.name}: {result}")


def _ratio_line(name: str, sf: list[float], ours: list[float], target: float | None) -> str:
    med = statistics.median(sf) / statistics.median(ours)
    per_round = [a / b for a, b in zip(sf, ours, strict=True)]
    spread = ", ".join(f"{r:.1f}x" for r in per_round)
    line = f"sandbox-fusion / {name}: {med:.1f}x (medians of rounds; rounds {spread})"
    if target is None:
        return line + "; no target"
    return line + f"; target >= {target:g}x: {'met' if med >= target else 'NOT met'}"


def charts(language: Language, times: dict[str, list[float]], what: str) -> list[dict[str, Any]]:
    """The chart entries of a run: each way's seconds, round by round and
    their median, and SandboxFusion's time over each of ours against its
    target."""
    labels = language.labels
    rounds = len(times[SF_WAY])
    categories = [f"round {r}" for r in range(1, rounds + 1)] + ["median"]
    sf = statistics.median(times[SF_WAY])
    return [
        {
            "name": "seconds",
            "kind": "bar",
            "title": f"{language.title} judging: {what}",
            "categories": categories,
            "series": [
                {"name": labels[way], "values": [*times[way], statistics.median(times[way])]}
                for way in language.ways
            ],
            "y_label": "seconds for the whole workload, lower is better",
            "x_label": "round (compile cache cold for every way in every round)",
        },
        {
            "name": "speed-up",
            "kind": "bar",
            "title": "SandboxFusion's time over ours (median of rounds)",
            "categories": [labels[way] for way in TARGETS],
            "series": [
                {
                    "name": "measured",
                    "values": [sf / statistics.median(times[way]) for way in TARGETS],
                },
                {"name": "target", "values": list(TARGETS.values())},
            ],
            "y_label": "times faster than SandboxFusion (x)",
        },
    ]


def run_way(
    language: Language, args: argparse.Namespace, url: str, workload: list[Prompt], way: str, r: int
) -> WayRun:
    """One way's turn in round ``r``."""
    batch = {w.name: w for w in language.batch_ways}
    if way in batch:
        return drive_grade_batch(language, url, workload, batch[way], r)
    return drive_run_code(
        language, url, workload, way, r, args.threads, args.compile_timeout, args.run_timeout
    )


def main(language: Language, argv: list[str]) -> int:
    """The benchmark of ``language``: its command line, run, printout and
    results file (named after ``language.script``)."""
    ap = argparse.ArgumentParser(
        description=f"{language.title} judging: SandboxFusion against ours, side by side"
    )
    ap.add_argument("--rounds", type=int, default=language.rounds)
    ap.add_argument("--threads", type=int, default=32, help="for the /run_code ways")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--candidates", type=int, default=8, help="per prompt")
    ap.add_argument("--tests", type=int, default=language.tests, help="per prompt")
    ap.add_argument("--compile-timeout", type=float, default=120.0)
    ap.add_argument("--run-timeout", type=float, default=10.0)
    ap.add_argument("--quick", action="store_true", help="2 x 4 x 3, 1 round (a smoke run)")
    ap.add_argument(
        "--sf-repo", type=Path, default=None,
        help="SandboxFusion's git repository (or $COLLIMATE_SANDBOX_FUSION_REPO)",
    )  # fmt: skip
    add_out_option(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.prompts, args.candidates, args.tests, args.rounds = 2, 4, 3, 1

    problems = load_problems(language.problems_dir)
    workload = build_workload(language, problems, args.prompts, args.candidates, args.tests)
    ways = language.ways
    n_cand = sum(len(p.sources) for p in workload)
    n_runs = sum(len(p.sources) * len(p.tests) for p in workload)
    print(
        f"{language.title} judging: {args.prompts} prompts x {args.candidates} candidates x"
        f" {args.tests} tests = {n_runs} runs of {n_cand} distinct programs per way;"
        f" {args.rounds} round(s); /run_code from {args.threads} threads (compile_timeout"
        f" {args.compile_timeout:g} s, run_timeout {args.run_timeout:g} s)"
    )
    print("expected rewards (from the Python models), one column per candidate:")
    for prompt in workload:
        cells = " ".join(f"{r:4.2f}" for r in prompt.expected)
        print(f"  {prompt.name:<18} {cells}")

    checkout = sandbox_fusion_checkout(sandbox_fusion_repo(args.sf_repo), DEFAULT_CHECKOUT)
    venv = ensure_sandbox_fusion_venv(checkout)
    times: dict[str, list[float]] = {w: [] for w in ways}
    failures: dict[str, Counter[str]] = {w: Counter() for w in ways}
    messages: dict[str, dict[str, str]] = {w: {} for w in ways}
    mismatches: list[str] = []
    width = max(map(len, ways)) + 2
    with sandbox_fusion_server(checkout, venv) as sf_url, ours_backend() as ours_url:
        health = httpx.get(f"{ours_url}/v1/health", timeout=30).json()
        print(
            f"sandbox-fusion: {sf_url} (SandboxFusion {checkout_commit(checkout)[:12]}, "
            f"isolation none); ours: {ours_url} (collimate-rl {health.get('version')}, "
            f"isolation {health.get('isolation')})"
        )
        warm_up(language, sf_url, ours_url, args.compile_timeout, args.run_timeout)
        print(f"warm-up done; compile_cache {compile_cache(ours_url)}", flush=True)
        for r in range(1, args.rounds + 1):
            print(f"\nround {r} (load average {load()})", flush=True)
            for way in ways:
                ours = way != SF_WAY
                before = compile_cache(ours_url) if ours else {}
                run = run_way(language, args, ours_url if ours else sf_url, workload, way, r)
                if ours:
                    run.cache = cache_delta(before, compile_cache(ours_url))
                times[way].append(run.seconds)
                failures[way].update(run.failures)
                for kind, message in run.first_message.items():
                    messages[way].setdefault(kind, message)
                bad = sum(run.failures.values())
                line = f"  {way:<{width}} {run.seconds:8.2f} s   failures {bad}"
                if run.failures:
                    line += " (" + ", ".join(f"{k}: {n}" for k, n in run.failures.items()) + ")"
                if run.cache is not None:
                    c = run.cache
                    line += (
                        f"; compile_cache +{c['compiles']} compiles, +{c['hits']} hits,"
                        f" +{c['joined']} joined"
                    )
                print(line, flush=True)
                mismatches += check_rewards(way, r, run, workload)

    print(f"\nsummary: {n_cand} candidates x {args.tests} tests, {args.rounds} round(s)")
    print(f"  {'way':<{width}} {'median s':>9}   rounds")
    for way in ways:
        rounds = ", ".join(f"{t:.2f}" for t in times[way])
        print(f"  {way:<{width}} {statistics.median(times[way]):>9.2f}   {rounds}")
    sf = times[SF_WAY]
    for way in ways[1:]:
        print("  " + _ratio_line(way, sf, times[way], TARGETS.get(way)))
    total_failures = 0
    for way in ways:
        if failures[way]:
            total_failures += sum(failures[way].values())
            print(f"  FAILURES in {way}: {dict(failures[way])}")
            for kind, message in messages[way].items():
                print(f"    first {kind}: {message}")
    if not total_failures:
        print("  failures: none (no SandboxError, timeout, HTTP, compile or infra error)")
    if mismatches:
        print(f"  REWARD MISMATCHES: {len(mismatches)} (listed above): FAILED")
    else:
        print("  rewards: every way, every round equal the expected rewards")
    what = (
        f"{n_cand} {language.title} candidates x {args.tests} tests,"
        f" {args.threads} threads for /run_code"
    )
    figures = {
        "language": language.name,
        "seconds": times,
        "sandbox_fusion_commit": checkout_commit(checkout)[:12],
        "failures": {way: dict(f) for way, f in failures.items()},
        "reward_mismatches": len(mismatches),
    }
    write_results(language.script, args, figures, charts(language, times, what))
    return 1 if mismatches or total_failures else 0
