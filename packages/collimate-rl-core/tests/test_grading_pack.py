"""Packed grading (``grade_batch(..., pack=N)``) against the REAL local backend.

The promise under test: a candidate graded in a pack gets exactly the
reward it gets alone, a pack-mate cannot reach it, and whatever goes wrong
with a pack sends its unfinished candidates to be graded alone.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from collimate_rl import (
    AsyncCollimateClient,
    CollimateClient,
    GradeResult,
    PropertyReward,
    RewardSpec,
    StdioReward,
    UnitTestReward,
    fresh_seed,
    grade,
    grade_batch,
    grade_batch_async,
)
from collimate_rl.grading import runtime_forms
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.packing import pack_timeout, prepare_pack, read_pack
from collimate_rl.pipeline.plan import Job, chunk
from collimate_rl.pipeline.targets import unpackable
from collimate_rl.plugins import ExecEvent, get_plugin_manager, hookimpl
from collimate_rl.rewards import verdict as verdict_module
from collimate_rl.rewards.spec import GradeContext, Outcome

TEMPLATE = "py"
SEEDED = UnitTestReward([{"input": [i], "output": i % 3} for i in range(8)])
DRAWS = "import random\ndef solve(i):\n    return random.randint(0, 2)\n"
RIGHT = "def solve(i):\n    return i % 3\n"
# right, and slower than the quarter second a pack holds its verdicts at most
SLOW = "import time\ndef solve(i):\n    time.sleep(0.04)\n    return i % 3\n"
VOWELS = PropertyReward(
    reference="    return sum(c in 'aeiouAEIOU' for c in x)",
    generator="''.join(random.choice('abcdEIOUxyz') for _ in range(8))",
    k=16,
)
ECHO = StdioReward([{"input": "3 4\n", "output": "7"}, {"input": "1 1\n", "output": "2"}])


# a python template whose warm interpreter does not preload the grader runtime
BARE = "bare"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(templates=[{"id": BARE, "kind": "python"}]) as b:
        yield b


def batch(
    mode: str, url: str, candidates: Sequence[str], spec: RewardSpec, **kw: Any
) -> list[GradeResult]:
    if mode == "sync":
        with CollimateClient(url, retries=0) as c:
            return grade_batch(c, TEMPLATE, candidates, spec, **kw)

    async def run() -> list[GradeResult]:
        async with AsyncCollimateClient(url, retries=0) as c:
            return await grade_batch_async(c, TEMPLATE, candidates, spec, **kw)

    return asyncio.run(run())


def distinct(n: int) -> list[str | None]:
    return [fresh_seed() for _ in range(n)]


def packed(result: GradeResult) -> bool:
    return "pack" in result.raw


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_pack_grades_every_candidate_as_it_would_be_graded_alone(
    mode: str, backend: LocalCollimateBackend, same_as_alone: Callable[..., None]
) -> None:
    url = backend.base_url
    cases: list[tuple[RewardSpec, list[str]]] = [
        (SEEDED, [DRAWS] * 5),  # rewards that depend on each candidate's own seed
        (
            VOWELS,
            [
                "def solve(x):\n    return sum(c in 'aeiou' for c in x)\n",
                "def solve(x):\n    return sum(c in 'aeiouAEIOU' for c in x)\n",
                "def solve(x):\n    raise ValueError(x)\n",
                "def solve(x)\n",
                "import random\ndef solve(x):\n    return random.randint(0, 3)\n",
            ],
        ),
        (ECHO, ["a, b = map(int, input().split())\nprint(a + b)\n", "print(7)\n"]),
    ]
    for spec, candidates in cases:
        seeds = distinct(len(candidates))
        results = batch(mode, url, candidates, spec, seeds=seeds, pack=3, concurrency=2)
        assert all(packed(r) for r in results)  # (no unit of one: it would go alone)
        assert [r.seed for r in results] == seeds
        assert {r.seed_ack for r in results} == {"verified"}
        for result, candidate, seed in zip(results, candidates, seeds, strict=True):
            same_as_alone(result, candidate, spec, seed)
    # seeds drawn for the caller are echoed too, and differ
    drawn = batch(mode, url, [DRAWS] * 4, SEEDED, pack=4)
    assert all(packed(r) for r in drawn) and len({r.seed for r in drawn}) == 4


# draws from ``random`` and reads COLLIMATE_SEED: its reward depends on both
SEED_AND_DRAWS = (
    "import os, random\n"
    "def solve(i):\n"
    "    return (random.randint(0, 2) + int(os.environ['COLLIMATE_SEED'][:8], 16)) % 3\n"
)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_each_candidate_of_a_pack_starts_from_its_own_seed_whatever_came_before(
    mode: str, backend: LocalCollimateBackend, same_as_alone: Callable[..., None]
) -> None:
    """The spawner sets a seed's environment and ``random`` state once and
    its candidates inherit them: seeds that alternate, repeat and come back
    within one pack each give what that seed gives alone."""
    a, b, c = distinct(3)
    seeds = [a, b, a, a, c, b, a]
    results = batch(
        mode, backend.base_url, [SEED_AND_DRAWS] * len(seeds), SEEDED,
        seeds=seeds, pack=len(seeds),
    )  # fmt: skip
    assert all(packed(r) for r in results) and [r.seed for r in results] == seeds
    for result, seed in zip(results, seeds, strict=True):
        same_as_alone(result, SEED_AND_DRAWS, SEEDED, seed)
    by_seed = {seed: result.reward for seed, result in zip(seeds, results, strict=True)}
    assert [r.reward for r in results] == [by_seed[seed] for seed in seeds]
    # and each finds its own seed in COLLIMATE_SEED, as a lone exec does
    echo = "import os\ndef solve(i):\n    return os.environ.get('COLLIMATE_SEED')\n"
    own = [UnitTestReward([{"input": [0], "output": seed}]) for seed in seeds]
    echoed = batch(mode, backend.base_url, [echo] * len(seeds), own, seeds=seeds, pack=len(seeds))
    assert all(packed(r) for r in echoed) and [r.reward for r in echoed] == [1.0] * len(seeds)


# i % 3 only where its process runs on the CPU the backend's turn owns
ON_THE_TURNS_CPU = """
import os
def solve(i):
    cpu = os.environ.get("COLLIMATE_CPU")
    return i % 3 if cpu is not None and os.sched_getaffinity(0) == {int(cpu)} else -1
"""


def test_a_grades_processes_stay_on_the_cpu_its_turn_owns(backend: LocalCollimateBackend) -> None:
    """Alone (the grader and the candidate's process) and in a pack (the
    grader, the spawner and every candidate's process): one CPU, the one the
    backend's run queue gave the exec, so that none of their handovers wakes
    another CPU."""
    with CollimateClient(backend.base_url, retries=0) as c:
        assert grade(c, TEMPLATE, ON_THE_TURNS_CPU, SEEDED, coalesce=False).reward == 1.0
    results = batch("async", backend.base_url, [ON_THE_TURNS_CPU] * 3, SEEDED, pack=3)
    assert all(packed(r) for r in results)
    assert [r.reward for r in results] == [1.0] * 3, [r.detail for r in results]


# Leaves a file in every place its uid can write and a daemon that keeps
# planting one and listens on a port; the pack-mate after it looks for all.
PLANTER = """
import os, socket, time
def solve(i):
    if i == 0:
        for d in ("/tmp", "/dev/shm", os.getcwd(), "/"):
            try:
                open(os.path.join(d, "planted"), "w").write("x")
            except OSError:
                pass
        if os.fork() == 0:
            try:
                os.setsid()
                if os.fork() == 0:
                    s = socket.socket()
                    s.bind(("127.0.0.1", 47321))
                    s.listen()
                    while True:
                        open("/tmp/planted", "w").write("x")
                        time.sleep(0.005)
            finally:
                os._exit(0)
        time.sleep(0.1)
    return i % 3
"""
FINDER = """
import os, socket
def solve(i):
    for d in ("/tmp", "/dev/shm", os.getcwd(), "/"):
        if os.path.exists(os.path.join(d, "planted")):
            return "found a file in " + d
    try:
        socket.create_connection(("127.0.0.1", 47321), timeout=1).close()
        return "found the daemon"
    except OSError:
        return i % 3
"""


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_candidate_leaves_nothing_its_pack_mates_can_find(
    mode: str, backend: LocalCollimateBackend
) -> None:
    results = batch(mode, backend.base_url, [PLANTER, FINDER, FINDER], SEEDED, pack=3)
    assert all(packed(r) for r in results)  # swept, not a reason to stop the pack
    assert [r.reward for r in results] == [1.0, 1.0, 1.0], [r.detail for r in results]


# System V objects outlive their processes and are not the sweep's to remove
IPC_MAKERS = {
    "shm": "shmget(0, 4096, 0o1000 | 0o600)",
    "msg": "msgget(0, 0o1000 | 0o600)",
    "sem": "semget(0, 1, 0o1000 | 0o600)",
}


def ipc_leaver(kind: str) -> str:
    return (
        "import ctypes\ndef solve(i):\n"
        f"    assert ctypes.CDLL(None).{IPC_MAKERS[kind]} >= 0\n    return i % 3\n"
    )


@pytest.mark.parametrize(
    ("mode", "kind"), [("sync", "shm"), ("async", "shm"), ("async", "msg"), ("sync", "sem")]
)
def test_a_trace_the_sweep_cannot_undo_sends_the_rest_of_the_pack_to_a_new_one(
    mode: str, kind: str, backend: LocalCollimateBackend, same_as_alone: Callable[..., None]
) -> None:
    """The pack stops after the candidate that left the trace (its verdict
    written); the rest go on in a new pack, in a fresh guest."""
    candidates = [ipc_leaver(kind), FINDER, DRAWS]
    seeds = distinct(3)
    results = batch(mode, backend.base_url, candidates, SEEDED, seeds=seeds, pack=3)
    assert all(packed(r) for r in results)
    nonces = [r.raw["pack"]["nonce"] for r in results]
    assert nonces[0] != nonces[1] == nonces[2]
    assert results[0].reward == results[1].reward == 1.0
    same_as_alone(results[2], DRAWS, SEEDED, seeds[2])


@pytest.mark.parametrize("victim", ["os.getppid()", "os.getppid() - 1"])
def test_a_candidate_that_kills_the_pack_only_costs_it_its_speed(
    victim: str, backend: LocalCollimateBackend, same_as_alone: Callable[..., None]
) -> None:
    """Killing the spawner (its parent) or the grader (the spawner's
    parent) is refused (each candidate's process is in a Landlock domain of
    its own, see ``guest/separation.py``): the killer's call fails,
    which costs it its reward, and the pack goes on in the same exec. Every
    reward is the lone grade's."""
    killer = (
        f"import os, signal\ndef solve(i):\n    os.kill({victim}, signal.SIGKILL)\n"
        "    return i % 3\n"
    )
    candidates = [DRAWS, SLOW, killer, DRAWS, "def solve(i):\n    return i % 3\n"]
    seeds = distinct(5)
    results = batch("async", backend.base_url, candidates, SEEDED, seeds=seeds, pack=5)
    assert len({r.raw["pack"]["nonce"] for r in results}) == 1  # one exec: nothing died
    assert "PermissionError" in str(results[2].detail["failed"])
    for result, candidate, seed in zip(results, candidates, seeds, strict=True):
        same_as_alone(result, candidate, SEEDED, seed)
    assert results[2].reward == 0.0
    assert results[4].reward == 1.0 and not any(r.infra_error for r in results)


@pytest.mark.parametrize("victim", ["os.getppid()", "os.getppid() - 1"])
def test_a_candidate_that_kills_its_pack_first_costs_only_itself(
    victim: str, backend: LocalCollimateBackend, same_as_alone: Callable[..., None]
) -> None:
    """First in its pack, a candidate tries to kill the spawner (its
    parent) or the grader: refused, the others get their rewards from the
    same pack, and the next batch is packed as ever."""
    killer = (
        f"import os, signal\ndef solve(i):\n    os.kill({victim}, signal.SIGKILL)\n"
        "    return i % 3\n"
    )
    candidates = [killer, DRAWS, SLOW, DRAWS, RIGHT]
    seeds = distinct(5)
    results = batch("async", backend.base_url, candidates, SEEDED, seeds=seeds, pack=5)
    assert len({r.raw["pack"]["nonce"] for r in results}) == 1, [r.raw.get("pack") for r in results]
    for result, candidate, seed in zip(results, candidates, seeds, strict=True):
        same_as_alone(result, candidate, SEEDED, seed)
    assert results[0].reward == 0.0 and results[4].reward == 1.0
    assert not any(r.infra_error for r in results)
    again = batch("sync", backend.base_url, [DRAWS, RIGHT] * 3, SEEDED)  # (pack="auto")
    assert all(packed(r) for r in again) and again[1].reward == 1.0


class _GraderDies:
    """A real client whose first pack's answer is cut as if its grader had
    died after writing the verdicts of its first ``keep`` candidates (the
    guest's own recovery cannot hide this from the SDK)."""

    def __init__(self, inner: CollimateClient, keep: int) -> None:
        self.inner = inner
        self.keep = keep
        self.cut = False
        self.endpoint = inner.endpoint

    def health(self) -> dict[str, Any]:
        return self.inner.health()

    def exec_once(self, *a: Any, **kw: Any) -> dict[str, Any]:
        answer = self.inner.exec_once(*a, **kw)
        paths = [f["path"] for f in kw.get("files") or [] if "collimate_candidate_" in f["path"]]
        if self.cut or len(paths) < 2:
            return answer
        self.cut = True
        nonces = [p.rpartition("collimate_candidate_")[2].removesuffix(".py") for p in paths]
        dropped = nonces[self.keep :]
        lines = answer["stdout"].splitlines()
        kept = [ln for ln in lines if not any(n in ln for n in dropped) and "unpacked" not in ln]
        return {**answer, "stdout": "\n".join(kept) + "\n", "exit_code": -9}


@pytest.mark.parametrize("keep", [0, 2])
def test_when_a_packs_grader_dies_the_sdk_regrades_what_it_left(
    keep: int, backend: LocalCollimateBackend, same_as_alone: Callable[..., None]
) -> None:
    """The candidate the pack died on is graded alone; the others without a
    verdict go on in a new pack; every reward is the lone grade's."""
    candidates = [DRAWS, SLOW, DRAWS, RIGHT, DRAWS]
    seeds = distinct(5)
    with CollimateClient(backend.base_url, retries=0) as c:
        dying = _GraderDies(c, keep)
        results = grade_batch(dying, TEMPLATE, candidates, SEEDED, seeds=seeds, pack=5)  # type: ignore[arg-type]
    assert dying.cut
    assert [packed(r) for r in results] == [True] * keep + [False] + [True] * (4 - keep)
    first = {r.raw["pack"]["nonce"] for r in results[:keep]}
    later = {r.raw["pack"]["nonce"] for r in results[keep + 1 :]}
    assert len(later) == 1 and not first & later  # a new pack
    for result, candidate, seed in zip(results, candidates, seeds, strict=True):
        same_as_alone(result, candidate, SEEDED, seed)


def test_a_step_of_many_prompts_is_packed_across_them(
    backend: LocalCollimateBackend, same_as_alone: Callable[..., None]
) -> None:
    """One spec per candidate (three prompts, their candidates interleaved):
    one call, packs that span prompts, each result its lone grade's."""
    rows: list[tuple[str, RewardSpec]] = [
        (DRAWS, SEEDED),
        ("def solve(x):\n    return sum(c in 'aeiou' for c in x)\n", VOWELS),
        ("a, b = map(int, input().split())\nprint(a + b)\n", ECHO),
    ]
    step = [rows[i % 3] for i in range(12)]
    seeds = distinct(12)
    with CollimateClient(backend.base_url, retries=0) as c:
        results = grade_batch(
            c, TEMPLATE, [cand for cand, _ in step], [spec for _, spec in step], seeds=seeds
        )
    assert all(packed(r) for r in results)
    specs_of: dict[str, set[int]] = {}
    for result, (_, spec) in zip(results, step, strict=True):
        specs_of.setdefault(result.raw["pack"]["nonce"], set()).add(id(spec))
    assert len(specs_of) == 2 and any(len(s) > 1 for s in specs_of.values())
    for result, (cand, spec), seed in zip(results, step, seeds, strict=True):
        same_as_alone(result, cand, spec, seed)


def test_a_pack_refused_in_its_short_form_is_sent_again_in_full(
    backend: LocalCollimateBackend,
) -> None:
    """A target believed to preload the runtime but that does not: the
    pack's guest asks for the full program, and gets it, once."""
    sizes: list[int] = []
    with CollimateClient(backend.base_url, retries=0) as c:

        class Recording:
            endpoint = c.endpoint

            def health(self) -> dict[str, Any]:
                return c.health()

            def exec_once(self, *a: Any, **kw: Any) -> dict[str, Any]:
                sizes.append(len(kw["code"]))
                return c.exec_once(*a, **kw)

        rec = Recording()
        runtime_forms.remember(runtime_forms.key(rec, BARE, None), "preloaded")
        try:
            results = grade_batch(rec, BARE, [RIGHT] * 4, SEEDED, pack=4)  # type: ignore[arg-type]
        finally:
            runtime_forms.clear()
    assert [r.reward for r in results] == [1.0] * 4 and all(packed(r) for r in results)
    assert len(sizes) == 2 and sizes[0] < sizes[1]  # refused short, then sent whole


def test_a_pack_writes_its_verdicts_in_batches_and_in_order() -> None:
    """Every write to the exec's output wakes the backend that reads it: a
    pack holds its verdict lines and writes them together."""
    from collimate_rl.rewards.guest_runtime import _Frame

    read_end, write_end = os.pipe()
    frame = _Frame("M")
    os.close(frame.fd)
    frame.fd = write_end
    writes: list[bytes] = []
    frame._write = lambda fd, data: writes.append(bytes(data)) or os.write(fd, data)
    frame.hold("one")
    frame.hold("two", "N")
    assert writes == []
    frame.line("three")  # written now, after what was held
    frame.flush()  # nothing left: no write
    assert writes == [b"\nM one\n\nN two\n\nM three\n"]
    os.close(write_end)
    assert os.read(read_end, 1024) == writes[0]
    os.close(read_end)


def test_reading_a_pack_decodes_each_verdict_once_and_keeps_a_subclass_outcome(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pack's verdicts are parsed once; a reward kind that makes its own
    ``outcome`` still has it called."""
    decoded: list[str] = []
    decode = verdict_module._decode
    monkeypatch.setattr(
        verdict_module, "_decode", lambda text: decoded.append(text) or decode(text)
    )
    right = "def solve(i):\n    return i % 3\n"
    jobs = [Job(i, right, SEEDED, seed) for i, seed in enumerate(distinct(3))]
    prepared = prepare_pack(jobs, timeout_seconds=5, form="full")
    marker = "__COLLIMATE_VERDICT__"
    stdout = "".join(
        f"{marker}{ctx.nonce} hello\n{marker}{ctx.nonce} "
        f'{{"reward": {i / 2}, "passed": {i}, "total": 2, "seed": "{seed}", "ms": 1.5}}\n'
        for i, (ctx, seed) in enumerate(zip(prepared.contexts[:2], prepared.seeds, strict=False))
    )  # (the third has no verdict: it goes alone)
    grades, note = read_pack(prepared, stdout)
    assert len(decoded) == 2  # one verdict each, read once
    assert [(g.position, g.outcome.reward, g.seed_echo) for g in grades] == [
        (0, 0.0, prepared.seeds[0]),
        (1, 0.5, prepared.seeds[1]),
    ]
    assert grades[1].outcome.detail["passed"] == 1 and "seed" not in grades[1].outcome.detail
    assert note is None

    class Halved(UnitTestReward):
        def outcome(self, stdout: str, exit_code: int, ctx: GradeContext) -> Outcome:
            made = super().outcome(stdout, exit_code, ctx)
            return Outcome(made.reward / 2, made.verdict, made.detail)

    halved = Halved([{"input": [i], "output": i % 3} for i in range(8)])
    for job in jobs:
        job.spec = halved
    again = prepare_pack(jobs, timeout_seconds=5, form="full")
    stdout = stdout.replace(prepared.contexts[0].nonce, again.contexts[0].nonce)
    stdout = stdout.replace(prepared.contexts[1].nonce, again.contexts[1].nonce)
    assert [g.outcome.reward for g in read_pack(again, stdout)[0]] == [0.0, 0.25]


@pytest.mark.parametrize("victim", ["os.getppid()", "os.getppid() - 1"])
def test_a_candidate_that_stops_the_spawner_or_the_grader_costs_only_itself(
    victim: str, backend: LocalCollimateBackend, same_as_alone: Callable[..., None]
) -> None:
    """The grader and the spawner share the candidates' uid, but not their
    Landlock domain: a SIGSTOP to either is refused. The pack's exec runs
    to its end (no timeout, nothing re-packed), the stopper scores 0.0."""
    stopper = (
        "import os, signal\ndef solve(i):\n"
        f"    os.kill({victim}, signal.SIGSTOP)\n    return i % 3\n"
    )
    candidates = [DRAWS, SLOW, stopper, *[DRAWS] * 7]
    seeds = distinct(10)
    results = batch(
        "async", backend.base_url, candidates, SEEDED, seeds=seeds, pack=10, timeout_seconds=2
    )
    assert len({r.raw["pack"]["nonce"] for r in results}) == 1
    assert results[0].raw["exit_code"] == 0
    assert results[2].reward == 0.0 and "PermissionError" in str(results[2].detail["failed"])
    for result, candidate, seed in zip(results, candidates, seeds, strict=True):
        same_as_alone(result, candidate, SEEDED, seed)


def test_packs_are_graded_alone_where_the_guest_is_shared(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Process mode shares the host (the server's uid, the host's /tmp): a
    pack must not sweep it, so it says why and its candidates go alone."""
    with (
        LocalCollimateBackend(isolation="process") as shared,
        caplog.at_level(logging.WARNING, logger="collimate_rl.grading"),
    ):
        results = batch("sync", shared.base_url, [DRAWS] * 4, SEEDED, pack=4)
        again = batch("sync", shared.base_url, [DRAWS] * 2, SEEDED, pack=2)
    assert not any(packed(r) for r in results + again)
    assert all(r.verdict != "infra_error" for r in results + again)
    warnings = [r.message for r in caplog.records if "cannot grade packs" in r.message]
    assert len(warnings) == 1  # said once per target, then not tried again


def test_a_target_that_cannot_pack_goes_alone_by_itself_until_forgotten(
    backend: LocalCollimateBackend, caplog: pytest.LogCaptureFixture
) -> None:
    """The guest's ``cannot pack:`` note marks that target only (another
    server still packs), and the mark can be forgotten (it is tried again)."""
    with (
        LocalCollimateBackend(isolation="process") as shared,
        caplog.at_level(logging.WARNING, logger="collimate_rl.grading"),
    ):
        first = batch("sync", shared.base_url, [DRAWS] * 4, SEEDED, pack=4)
        elsewhere = batch("sync", backend.base_url, [DRAWS] * 4, SEEDED, pack=4)
        unpackable.clear()
        again = batch("sync", shared.base_url, [DRAWS] * 2, SEEDED, pack=2)
    assert not any(packed(r) for r in first + again) and all(packed(r) for r in elsewhere)
    assert sum("cannot grade packs" in r.message for r in caplog.records) == 2


def test_the_pack_argument_is_checked(backend: LocalCollimateBackend) -> None:
    url = backend.base_url
    for bad in (0, -2, True, "4", 2.0):
        with pytest.raises(ValueError, match="pack must be"):
            batch("sync", url, [DRAWS], SEEDED, pack=bad)

    class LastLine(RewardSpec):
        def build(self, candidate_path: str) -> str:
            return "print(1.0)"

    # a custom spec grades one candidate per program: alone, whatever pack says
    results = batch("sync", url, ["x = 1\n"] * 3, LastLine(), pack=3)
    assert [r.reward for r in results] == [1.0] * 3 and not any(packed(r) for r in results)


def test_pack_sizes_and_timeouts() -> None:
    jobs = [Job(i, "x = 1\n", SEEDED, None) for i in range(5)]
    assert [[j.index for j in u.jobs] for u in chunk(jobs, 2)] == [[0, 1], [2, 3], [4]]
    assert [len(u.jobs) for u in chunk(jobs, 1)] == [1] * 5
    assert chunk([], 4) == []
    # a pack's exec may take four candidate timeouts, within the wire's 3600 s
    assert [pack_timeout(30, n) for n in (1, 2, 4, 64)] == [30, 60, 120, 120]
    assert pack_timeout(1000, 64) == 3600


def test_candidates_compile_as_python_would_run_them(backend: LocalCollimateBackend) -> None:
    """The runtime's own ``from __future__ import annotations`` must not leak
    into the candidate's compilation: with it, an annotation naming nothing
    would load on a template that preloads the runtime and fail elsewhere."""
    candidate = "def solve(i: Undefined) -> int:\n    return i % 3\n"
    url = backend.base_url
    with CollimateClient(url, retries=0) as c:
        preloaded = grade(c, TEMPLATE, candidate, SEEDED)
        shipped = grade(c, BARE, candidate, SEEDED)
    packs = batch("sync", url, [candidate] * 2, SEEDED, pack=2)
    assert packed(packs[0]) and packed(packs[1])
    for result in (preloaded, shipped, *packs):
        assert result.reward == 0.0
        assert "NameError" in str(result.detail.get("load_error")), result.detail


class _ExecsOf:
    """Records, for every exec carrying ``content`` as a candidate, its time
    span and how many candidates it carried."""

    def __init__(self, content: str) -> None:
        self.content = content
        self.spans: list[tuple[float, float, int]] = []

    @hookimpl
    def collimate_rl_after_exec(self, event: ExecEvent) -> None:
        files = event.request.get("files") or []
        # (besides its candidates, an exec carries the sealed test data)
        shipped = [f for f in files if "collimate_candidate_" in f["path"]]
        if any(f["content"] == self.content for f in shipped) and event.elapsed_ms:
            end = event.started_at + event.elapsed_ms / 1000
            self.spans.append((event.started_at, end, len(shipped)))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_candidate_that_loops_does_not_hold_its_pack_mates(
    mode: str, backend: LocalCollimateBackend, same_as_alone: Callable[..., None]
) -> None:
    """Behind a candidate that uses its whole budget, the rest would take up
    to one budget each: they are re-packed as two packs, side by side (the
    two more loopers among them run at the same time, not one after the
    other)."""
    looper = "def solve(i):\n    while True:\n        pass\n"
    candidates = [DRAWS, looper, DRAWS, looper, looper]
    seeds = distinct(5)
    execs = _ExecsOf(looper)
    pm = get_plugin_manager()
    pm.register(execs, name="test-looper-execs")
    try:
        results = batch(
            mode,
            backend.base_url,
            candidates,
            SEEDED,
            seeds=seeds,
            pack=5,
            timeout_seconds=2,
            concurrency=4,
        )
    finally:
        pm.unregister(name="test-looper-execs")
    # the first pack stops behind the first looper; [DRAWS, looper] and [looper] follow
    assert [packed(r) for r in results] == [True, True, True, True, False]
    assert all(results[i].detail["timeout"] and results[i].reward == 0.0 for i in (1, 3, 4))
    same_as_alone(results[2], DRAWS, SEEDED, seeds[2])
    first, *after = sorted(execs.spans)
    assert first[2] == 5 and sorted(n for _, _, n in after) == [1, 2]
    (_, first_end, _), (second_start, _, _) = sorted(after)
    assert second_start < first_end  # side by side, not one after the other


@pytest.mark.parametrize("pack", [None, 2])
def test_big_reports_arrive_whole(pack: int | None, backend: LocalCollimateBackend) -> None:
    """16 results of 512 KiB each fill the pipe over a hundred times."""
    spec = UnitTestReward([{"input": [i], "output": "x"} for i in range(16)])
    big = "def solve(i):\n    return 'y' * (1 << 19)\n"
    results = batch("sync", backend.base_url, [big] * 2, spec, pack=pack, timeout_seconds=20)
    for result in results:
        assert result.reward == 0.0 and not result.detail["timeout"], result.detail
        assert {f["reason"] for f in result.detail["failed"]} == {"wrong_answer"}
