"""grade / grade_batch and their async twins against the REAL local backend.

Every test runs both ways (``mode`` = ``sync`` / ``async``): the async path
uses ``AsyncCollimateClient`` on one event loop. Faults the real server
cannot produce on demand (a 500 for one particular candidate) come from a
proxy transport that forwards everything else to the real server.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import threading
from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from collimate_rl import (
    DET_SEED,
    AsyncCollimateClient,
    CollimateClient,
    CollimateError,
    GradeResult,
    PropertyReward,
    RewardSpec,
    StdioReward,
    UnitTestReward,
    grade,
    grade_async,
    grade_batch,
    grade_batch_async,
    group_seeds,
    is_valid_seed,
)
from collimate_rl.grading import runtime_forms
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.plugins import get_plugin_manager, hookimpl
from collimate_rl.testing.fixtures import module_backend

TEMPLATE = "py"
# a python template whose warm interpreter does not preload the grader runtime
# (the built-in ones do), to exercise the forms that ship it
BARE = "bare"
ADD = UnitTestReward(
    [
        {"input": [1, 2], "output": 3},
        {"input": [2, 2], "output": 4},
        {"input": [-1, 1], "output": 0},
        {"input": [10, 5], "output": 15},
    ]
)
VOWELS = PropertyReward(
    reference="    return sum(c in 'aeiouAEIOU' for c in x)",
    generator="''.join(random.choice('abcdEIOUxyz') for _ in range(8))",
    k=16,
)
HALF_VOWELS = "def solve(x):\n    return sum(c in 'aeiou' for c in x)\n"
RIGHT_VOWELS = "def solve(x):\n    return sum(c in 'aeiouAEIOU' for c in x)\n"
INFRA_MARK = "#INJECT-INFRA-FAILURE"


backend, client = module_backend([{"id": BARE, "kind": "python"}])


class Grader:
    """One face for both paths, so every test runs sync and async."""

    def __init__(self, mode: str, base_url: str, transport: Any = None) -> None:
        self.mode = mode
        self.base_url = base_url
        self.transport = transport

    def _sync_client(self) -> CollimateClient:
        return CollimateClient(self.base_url, retries=0, httpx_transport=self.transport)

    def grade(self, candidate: str, spec: RewardSpec, **kw: Any) -> GradeResult:
        if self.mode == "sync":
            with self._sync_client() as c:
                return grade(c, TEMPLATE, candidate, spec, **kw)

        async def run() -> GradeResult:
            async with AsyncCollimateClient(
                self.base_url, retries=0, httpx_transport=self.transport
            ) as c:
                return await grade_async(c, TEMPLATE, candidate, spec, **kw)

        return asyncio.run(run())

    def batch(self, candidates: Sequence[str], spec: RewardSpec, **kw: Any) -> list[GradeResult]:
        if self.mode == "sync":
            with self._sync_client() as c:
                return grade_batch(c, TEMPLATE, candidates, spec, **kw)

        async def run() -> list[GradeResult]:
            async with AsyncCollimateClient(
                self.base_url, retries=0, httpx_transport=self.transport
            ) as c:
                return await grade_batch_async(c, TEMPLATE, candidates, spec, **kw)

        return asyncio.run(run())


@pytest.fixture(params=["sync", "async"])
def grader(request: pytest.FixtureRequest, backend: LocalCollimateBackend) -> Grader:
    return Grader(request.param, backend.base_url)


def _faulty(request: httpx.Request) -> bool:
    body = json.loads(request.content or b"{}")
    return any(INFRA_MARK in f.get("content", "") for f in body.get("files") or [])


_FAULT = {"error": "injected: the node lost the clone", "error_code": "internal"}


def _forwarding_sync(base_url: str) -> httpx.MockTransport:
    upstream = httpx.Client(base_url=base_url, timeout=60)

    def handle(request: httpx.Request) -> httpx.Response:
        if _faulty(request):
            return httpx.Response(500, json=_FAULT)
        r = upstream.send(
            upstream.build_request(
                request.method,
                request.url.path,
                content=request.content,
                headers={"content-type": "application/json"},
            )
        )
        return httpx.Response(r.status_code, content=r.content, headers=r.headers)

    return httpx.MockTransport(handle)


def _forwarding_async(base_url: str) -> httpx.MockTransport:
    async def handle(request: httpx.Request) -> httpx.Response:
        if _faulty(request):
            return httpx.Response(500, json=_FAULT)
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as upstream:
            r = await upstream.request(
                request.method,
                request.url.path,
                content=request.content,
                headers={"content-type": "application/json"},
            )
        return httpx.Response(r.status_code, content=r.content, headers=r.headers)

    return httpx.MockTransport(handle)


@pytest.fixture(params=["sync", "async"])
def faulty_grader(request: pytest.FixtureRequest, backend: LocalCollimateBackend) -> Grader:
    make = _forwarding_sync if request.param == "sync" else _forwarding_async
    return Grader(request.param, backend.base_url, make(backend.base_url))


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- rewards ---------------------------------------------------------------------


def test_unit_test_rewards_all_partial_none_multi_arg(grader: Grader) -> None:
    results = grader.batch(
        [
            "def solve(a, b):\n    return a + b\n",
            "def solve(a, b):\n    return a + b if a > 0 else 99\n",
            "def solve(a, b):\n    return 'nope'\n",
        ],
        ADD,
    )
    assert [r.reward for r in results] == [1.0, 0.75, 0.0]
    assert [r.verdict for r in results] == ["passed", "failed", "failed"]
    assert results[1].detail["passed"] == 3 and results[1].detail["total"] == 4
    assert [f["index"] for f in results[1].detail["failed"]] == [2]
    assert results[1].detail["failed_indices"] == [2]
    assert results[1].detail["failed"][0]["reason"] == "wrong_answer"
    assert not any(r.infra_error for r in results)
    assert [r.index for r in results] == [0, 1, 2]


def test_kwargs_single_list_argument_and_float_tolerance(grader: Grader) -> None:
    spec = UnitTestReward(
        [
            {"input": [[3, 1, 2]], "output": [1, 2, 3]},
            {"input": [[1.0, 2.0]], "kwargs": {"scale": 0.1}, "output": [0.1, 0.2]},
        ]
    )
    cand = "def solve(xs, scale=None):\n    return sorted(x * scale if scale else x for x in xs)\n"
    assert grader.grade(cand, spec).reward == 1.0


def test_pinned_seed_reproduces_vanilla_varies_deterministic_is_fixed(grader: Grader) -> None:
    pinned = [grader.grade(HALF_VOWELS, VOWELS, seed="ab" * 32) for _ in range(2)]
    assert pinned[0].reward == pinned[1].reward == 0.0625  # == collimate-rl 0.5.0's score
    assert pinned[0].detail == pinned[1].detail
    assert all(r.seed == "ab" * 32 for r in pinned)

    det = grader.batch([HALF_VOWELS] * 3, VOWELS, seeds=group_seeds(3, "deterministic"))
    assert len({json.dumps(r.detail, sort_keys=True) for r in det}) == 1
    assert all(r.seed == DET_SEED for r in det)

    vanilla = grader.batch([HALF_VOWELS] * 3, VOWELS, seeds=group_seeds(3, "vanilla"))
    assert len({r.seed for r in vanilla}) == 3 and all(is_valid_seed(r.seed) for r in vanilla)
    # the failing inputs are listed in the detail: fresh seeds draw fresh inputs
    assert len({json.dumps(r.detail, sort_keys=True) for r in vanilla}) == 3


def test_results_that_are_not_plain_data_are_judged_by_repr(grader: Grader) -> None:
    """A reference returning a Fraction: the candidate's Fraction cannot
    travel as data, so its repr is compared; a float still compares by value."""
    spec = PropertyReward(
        reference="def ref(x):\n    from fractions import Fraction\n    return Fraction(len(x), 2)",
        generator="''.join(random.choice('ab') for _ in range(random.randint(1, 9)))",
        k=8,
    )
    right = "from fractions import Fraction\ndef solve(x):\n    return Fraction(len(x), 2)\n"
    as_float = "def solve(x):\n    return len(x) / 2\n"
    wrong = "from fractions import Fraction\ndef solve(x):\n    return Fraction(len(x), 3)\n"
    assert grader.grade(right, spec).reward == 1.0
    assert grader.grade(as_float, spec).reward == 1.0
    res = grader.grade(wrong, spec)
    assert res.reward == 0.0 and res.detail["failed"][0]["reason"] == "wrong_answer"


def test_the_candidate_draws_from_the_exec_seed(grader: Grader) -> None:
    """The candidate's own process starts from the exec's seeded ``random``
    state (a forked child would otherwise reseed itself from the OS)."""
    seed = "ef" * 32
    expected = random.Random(int(seed, 16)).random()
    spec = UnitTestReward([{"input": [0, 0], "output": expected}], tol=0.0)
    cand = "import random\ndef solve(a, b):\n    return random.random()\n"
    assert grader.grade(cand, spec, seed=seed).reward == 1.0


def test_crn_group_shares_inputs_so_rewards_rank_candidates(grader: Grader) -> None:
    seeds = group_seeds(4, "crn")
    results = grader.batch(
        [RIGHT_VOWELS, HALF_VOWELS, RIGHT_VOWELS, HALF_VOWELS], VOWELS, seeds=seeds
    )
    assert results[0].reward == results[2].reward == 1.0
    assert results[1].reward == results[3].reward < 1.0
    assert {r.seed for r in results} == {seeds[0]}


def test_the_seed_is_echoed(grader: Grader) -> None:
    fixed = grader.grade(RIGHT_VOWELS, VOWELS, seed="cd" * 32)
    assert fixed.seed == "cd" * 32 and fixed.seed_ack in ("verified", "off", "no-ack")
    drawn = grader.grade(RIGHT_VOWELS, VOWELS)
    assert is_valid_seed(drawn.seed) and drawn.seed != "cd" * 32
    assert drawn.raw["seed"] == drawn.seed


def test_stdio_reward(grader: Grader) -> None:
    spec = StdioReward(
        [
            {"input": "1 2\n", "output": "3\n"},
            {"input": "10 -4\n", "output": "6"},
            {"input": "1 3\n", "output": "0.3333333"},
        ]
    )
    cand = "a, b = map(int, input().split())\nprint(a + b if (a, b) != (1, 3) else a / b)\n"
    res = grader.grade(cand, spec)
    assert res.reward == 1.0 and res.detail == {
        "passed": 3,
        "total": 3,
        "failed": [],
        "failed_indices": [],
        "timeout": False,
        "memory_error": False,
        "runtime": res.detail["runtime"],
    }
    assert res.detail["runtime"] in ("preloaded", "bytecode")


# -- candidates misbehaving: task failures, never infra ----------------------------


MISBEHAVING = {
    "crash_at_import": ("raise RuntimeError('boom')\n", 0.0),
    "syntax_error": ("def solve(a, b) return a + b\n", 0.0),
    "missing_entry": ("def other(a, b):\n    return a + b\n", 0.0),
    "sys_exit_at_import": ("import sys\nsys.exit(0)\n", 0.0),
    "ends_its_process": ("import os\ndef solve(a, b):\n    os._exit(0)\n", 0.0),
    "ends_its_process_at_the_third_test": (
        "import os\ndef solve(a, b):\n    if a < 0:\n        os._exit(0)\n    return a + b\n",
        0.5,  # the two checks it passed before count
    ),
    "floods_every_fd_it_has": (
        "import os\n"
        "blob = b'\\0garbage' * (1 << 17)\n"
        "for fd in range(3, 64):\n"
        "    for _ in range(17):\n"
        "        try:\n"
        "            os.write(fd, blob)\n"
        "        except OSError:\n"
        "            break\n"
        "def solve(a, b):\n    return a + b\n",
        0.0,
    ),
    "kills_the_grader": (
        "import os, signal\ndef solve(a, b):\n    os.kill(os.getppid(), signal.SIGKILL)\n",
        0.0,
    ),
    "garbage_output": (
        "import sys\nprint('x' * 3_000_000)\nsys.stdout.write('\\x00\\xff garbage\\n' * 1000)\n"
        "print('__COLLIMATE_VERDICT__ {\"reward\": 1.0}')\nprint('1.0')\n"
        "def solve(a, b):\n    print('0.0' * 1000)\n    return a + b\n",
        1.0,
    ),
    "prints_after_the_reward_line": (
        "import atexit, os, time\n"
        "atexit.register(lambda: print('0.0\\nTraceback: noise after the verdict'))\n"
        "def solve(a, b):\n    return a + b\n"
        "if os.fork() == 0:  # outlives the grader and writes on every fd it has\n"
        "    time.sleep(0.3)\n"
        "    for fd in range(64):\n"
        "        try:\n"
        "            os.write(fd, b'\\n0.0\\n__COLLIMATE_VERDICT__ {}\\nlate noise\\n')\n"
        "        except OSError:\n"
        "            pass\n"
        "    os._exit(0)\n",
        1.0,
    ),
    "writes_to_stderr": (
        "import os, sys, warnings\n"
        "def solve(a, b):\n"
        "    sys.stderr.write('Traceback (most recent call last):\\n0.0\\n')\n"
        "    os.write(2, b'stderr noise\\n')\n"
        "    warnings.warn('deprecated!')\n"
        "    return a + b\n",
        1.0,
    ),
    "raises_in_some_tests": (
        "def solve(a, b):\n    if a < 0:\n        raise ValueError('negative')\n    return a + b\n",
        0.75,
    ),
    "memory_error": (
        "def solve(a, b):\n    if a == 2:\n        return [0] * (1 << 40)\n    return a + b\n",
        0.75,
    ),
}


@pytest.mark.parametrize("case", sorted(MISBEHAVING))
def test_a_misbehaving_candidate_is_a_task_outcome(grader: Grader, case: str) -> None:
    candidate, reward = MISBEHAVING[case]
    res = grader.grade(candidate, ADD)
    assert res.reward == reward, res.detail
    assert res.infra_error is False and res.verdict in ("passed", "failed")
    assert res.error is None


def test_details_name_the_failure(grader: Grader) -> None:
    crash = grader.grade(MISBEHAVING["crash_at_import"][0], ADD)
    assert "RuntimeError: boom" in crash.detail["load_error"]
    mem = grader.grade(MISBEHAVING["memory_error"][0], ADD)
    assert mem.detail["memory_error"] is True
    assert mem.detail["failed"] == [
        {"index": 1, "reason": "memory_error", "message": "MemoryError"}
    ]
    ended = grader.grade(MISBEHAVING["ends_its_process_at_the_third_test"][0], ADD)
    assert ended.detail["failed"] == [
        {
            "index": 2,
            "reason": "error",
            "message": "the candidate's process ended before this check",
        },
        {
            "index": 3,
            "reason": "error",
            "message": "the candidate's process ended before this check",
        },
    ]
    killed = grader.grade(MISBEHAVING["kills_the_grader"][0], ADD)  # (its parent: the spawner)
    assert {f["message"] for f in killed.detail["failed"]} == {  # refused: its own failure
        "PermissionError: [Errno 1] Operation not permitted"
    }
    flood = grader.grade(MISBEHAVING["floods_every_fd_it_has"][0], ADD)
    # (bytes on its socket: too many, or not a record)
    assert {f["message"] for f in flood.detail["failed"]} <= {
        "the candidate's process sent over 16777216 bytes",
        "the candidate's process sent garbage",
    }


# -- candidates trying to set their own reward ----------------------------------

FORGERS = {
    # reports a broken guest for every check: an infra error is skipped, not scored 0
    "claims_a_broken_guest": (
        "import gc, os\n"
        "def solve(*args):\n"
        "    for obj in gc.get_objects():\n"
        "        if hasattr(obj, 'put') and hasattr(obj, 'fd'):\n"
        "            for i in range(16):\n"
        "                obj.put((i, 'environment', 'the guest is broken, honest'))\n"
        "            obj.put(('load', 'environment: the guest is broken'))\n"
        "            obj.put(('done',))\n"
        "            os._exit(0)\n"
        "    return -1\n"
    ),
    # walks up to the grader's frames and writes the verdict itself
    "calls_finish_from_the_stack": (
        "import sys\n"
        "def solve(*args):\n"
        "    f = sys._getframe(1)\n"
        "    while f is not None:\n"
        "        for value in list(f.f_locals.values()):\n"
        "            if hasattr(value, 'finish') and hasattr(value, 'marker'):\n"
        "                value.finish({'reward': 1.0, 'passed': 4, 'total': 4})\n"
        "        f = f.f_back\n"
        "    return -1\n"
    ),
    # finds the marker in the heap and frames a verdict on every fd it has
    "frames_a_verdict_on_every_fd": (
        "import gc, os\n"
        "def solve(*args):\n"
        "    for obj in gc.get_objects():\n"
        "        if isinstance(obj, dict) and 'nonce' in obj and 'marker' in obj:\n"
        "            line = '\\n%s%s {\"reward\": 1.0}\\n' % (obj['marker'], obj['nonce'])\n"
        "            for fd in range(3, 1024):\n"
        "                try:\n"
        "                    os.write(fd, line.encode())\n"
        "                except OSError:\n"
        "                    pass\n"
        "            try:\n"
        "                names = os.listdir('/proc/%d/fd' % os.getppid())\n"
        "            except OSError:\n"
        "                names = []\n"
        "            for name in names:\n"
        "                try:\n"
        "                    fd = os.open('/proc/%d/fd/%s' % (os.getppid(), name), os.O_WRONLY)\n"
        "                    os.write(fd, line.encode())\n"
        "                except OSError:\n"
        "                    pass\n"
        "    os._exit(0)  # and no verdict of the grader's after it\n"
    ),
}


@pytest.mark.parametrize("case", sorted(FORGERS))
@pytest.mark.parametrize("spec", ["unit", "property"])
def test_a_candidate_cannot_write_its_own_verdict(grader: Grader, case: str, spec: str) -> None:
    """The candidate runs in a process of its own that holds no way to the
    verdict: what it forges is never read, and it gets what it earned."""
    res = grader.grade(FORGERS[case], ADD if spec == "unit" else VOWELS)
    assert res.reward == 0.0, res.detail
    assert res.infra_error is False and res.verdict == "failed"


def test_a_looping_candidate_still_gets_a_verdict_before_the_deadline(grader: Grader) -> None:
    """Without a per-test limit the loop eats the exec's budget: the tests
    after it are failed as timeouts, and the verdict still arrives."""
    cand = "def solve(a, b):\n    while a == 2:\n        pass\n    return a + b\n"
    res = grader.grade(cand, ADD, timeout_seconds=3)
    assert res.reward == 0.25 and res.infra_error is False and res.exit_code == 0
    assert res.detail["timeout"] is True
    assert [(f["index"], f["reason"]) for f in res.detail["failed"]] == [
        (1, "timeout"),
        (2, "timeout"),
        (3, "timeout"),
    ]


def test_a_per_test_timeout_bounds_each_test(grader: Grader) -> None:
    spec = UnitTestReward(ADD.tests, test_timeout=0.3)
    cand = "import time\ndef solve(a, b):\n    time.sleep(5 if a > 1 else 0)\n    return a + b\n"
    res = grader.grade(cand, spec, timeout_seconds=20)
    assert res.reward == 0.5 and [f["reason"] for f in res.detail["failed"]] == ["timeout"] * 2


def test_an_uninterruptible_candidate_is_killed_and_the_verdict_still_comes(
    grader: Grader,
) -> None:
    # one long C call (sum over a range) never returns to the signal handler
    # of the candidate's process; the grader, in a process of its own, kills
    # it when the budget runs out and still writes its verdict
    cand = "def solve(a, b):\n    return sum(range(10 ** 13))\n"
    res = grader.grade(cand, ADD, timeout_seconds=2)
    assert res.reward == 0.0 and res.infra_error is False and res.verdict == "failed"
    assert res.exit_code == 0 and res.detail["timeout"] is True
    assert [f["reason"] for f in res.detail["failed"]] == ["timeout"] * 4


# -- infrastructure failures: flagged, never a silent 0.0 ----------------------------


def test_a_dead_backend_is_never_a_zero_reward() -> None:
    dead = Grader("sync", f"http://127.0.0.1:{_dead_port()}")
    with pytest.raises(CollimateError):
        dead.grade(RIGHT_VOWELS, VOWELS)
    with pytest.raises(CollimateError):
        dead.batch([RIGHT_VOWELS] * 3, VOWELS)
    zeros = dead.batch([RIGHT_VOWELS] * 3, VOWELS, on_infra_error="zero", seeds=["ab" * 32] * 3)
    assert [(r.reward, r.infra_error, r.verdict, r.index) for r in zeros] == [
        (0.0, True, "infra_error", i) for i in range(3)
    ]
    assert all(r.seed == "ab" * 32 and r.error for r in zeros)
    assert dead.batch([RIGHT_VOWELS] * 3, VOWELS, on_infra_error="skip") == []


def test_a_dead_backend_async() -> None:
    dead = Grader("async", f"http://127.0.0.1:{_dead_port()}")
    with pytest.raises(CollimateError):
        dead.batch([RIGHT_VOWELS] * 2, VOWELS)
    zeros = dead.batch([RIGHT_VOWELS] * 2, VOWELS, on_infra_error="zero")
    assert [r.infra_error for r in zeros] == [True, True]


def _mixed() -> list[str]:
    good = "def solve(a, b):\n    return a + b\n"
    return [good, good + INFRA_MARK, good, good + INFRA_MARK, good]


def test_raise_zero_skip_keep_or_drop_alignment(faulty_grader: Grader) -> None:
    with pytest.raises(CollimateError, match="injected"):
        faulty_grader.batch(_mixed(), ADD)
    zero = faulty_grader.batch(_mixed(), ADD, on_infra_error="zero")
    assert [(r.reward, r.infra_error) for r in zero] == [
        (1.0, False),
        (0.0, True),
        (1.0, False),
        (0.0, True),
        (1.0, False),
    ]
    assert [r.verdict for r in zero] == ["passed", "infra_error", "passed", "infra_error", "passed"]
    skip = faulty_grader.batch(_mixed(), ADD, on_infra_error="skip")
    assert [r.index for r in skip] == [0, 2, 4] and all(r.reward == 1.0 for r in skip)


def test_a_grader_that_never_started_is_infra(
    grader: Grader, backend: LocalCollimateBackend
) -> None:
    # the shell template runs `code` with sh: the python grader cannot start
    with CollimateClient(backend.base_url) as c:
        with pytest.raises(CollimateError, match="never started"):
            grade(c, "sh", RIGHT_VOWELS, VOWELS)
        res = grade_batch(c, "sh", [RIGHT_VOWELS], VOWELS, on_infra_error="zero")
    assert res[0].infra_error and res[0].reward == 0.0 and res[0].verdict == "infra_error"
    assert res[0].raw["exit_code"] != 0 and "never started" in (res[0].error or "")


def test_a_broken_reference_is_not_blamed_on_the_candidate(grader: Grader) -> None:
    broken = PropertyReward(reference="    return x.nope()", generator="7", k=2)
    with pytest.raises(CollimateError, match="AttributeError"):
        grader.grade(RIGHT_VOWELS, broken)


# -- concurrency, callbacks, hooks ------------------------------------------------


class _Counting:
    """A real client, counting execs in flight (to check the bound)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.now = 0
        self.peak = 0
        self.lock = threading.Lock()

    def _enter(self) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def _leave(self) -> None:
        with self.lock:
            self.now -= 1

    def exec_once(self, *a: Any, **kw: Any) -> Any:
        self._enter()
        try:
            return self.inner.exec_once(*a, **kw)
        finally:
            self._leave()

    async def exec_once_async(self, *a: Any, **kw: Any) -> Any:
        self._enter()
        try:
            return await self.inner.exec_once(*a, **kw)
        finally:
            self._leave()


def test_concurrency_is_bounded_sync(client: CollimateClient) -> None:
    counting = _Counting(client)
    results = grade_batch(
        counting,
        TEMPLATE,
        [RIGHT_VOWELS] * 12,
        VOWELS,  # type: ignore[arg-type]
        concurrency=3,
    )
    assert [r.reward for r in results] == [1.0] * 12
    assert 1 <= counting.peak <= 3


def test_concurrency_is_bounded_async(backend: LocalCollimateBackend) -> None:
    async def run() -> tuple[list[GradeResult], int]:
        async with AsyncCollimateClient(backend.base_url) as ac:
            counting = _Counting(ac)
            counting.exec_once = counting.exec_once_async  # type: ignore[method-assign]
            res = await grade_batch_async(
                counting,
                TEMPLATE,
                [RIGHT_VOWELS] * 12,
                VOWELS,  # type: ignore[arg-type]
                concurrency=3,
            )
            return res, counting.peak

    results, peak = asyncio.run(run())
    assert [r.reward for r in results] == [1.0] * 12 and 1 <= peak <= 3


def test_concurrent_grades_in_one_warm_session_stay_isolated(
    grader: Grader, client: CollimateClient
) -> None:
    spec = UnitTestReward([{"input": [0], "output": 0}, {"input": [1], "output": 1}])
    candidates = [f"def solve(x):\n    return x + {i}\n" for i in range(12)]
    session = client.create_session(TEMPLATE)["session_id"]
    try:
        results = grader.batch(candidates, spec, session_id=session, concurrency=6)
        leftovers = client.session_exec(
            session, command="ls /tmp | grep -c collimate_candidate || true"
        )["stdout"]
    finally:
        client.delete_session(session)
    assert [r.reward for r in results] == [1.0] + [0.0] * 11
    assert leftovers.strip() == "0"  # every grader removed its candidate file


def test_on_result_progress_and_after_grade_hook(
    grader: Grader, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[int, float]] = []

    class Observer:
        def __init__(self) -> None:
            self.calls: list[tuple[int, str, float]] = []

        @hookimpl
        def collimate_rl_after_grade(self, result: Any, candidate: str, index: int) -> None:
            self.calls.append((index, candidate, result.reward))

    obs = Observer()
    pm = get_plugin_manager()
    pm.register(obs, name="test-after-grade")
    try:
        cands = [RIGHT_VOWELS, HALF_VOWELS, RIGHT_VOWELS]
        results = grader.batch(
            cands,
            VOWELS,
            seeds=["ab" * 32] * 3,
            progress=True,
            on_result=lambda i, r: seen.append((i, r.reward)),
        )
        single = grader.grade(RIGHT_VOWELS, VOWELS)
    finally:
        pm.unregister(name="test-after-grade")
    assert sorted(seen) == [(0, 1.0), (1, 0.0625), (2, 1.0)]
    assert sorted(obs.calls[:3]) == [
        (0, RIGHT_VOWELS, 1.0),
        (1, HALF_VOWELS, 0.0625),
        (2, RIGHT_VOWELS, 1.0),
    ]
    assert obs.calls[3] == (0, RIGHT_VOWELS, single.reward)
    assert [r.reward for r in results] == [1.0, 0.0625, 1.0]
    assert "grading" in capsys.readouterr().out  # the Rich bar was drawn


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"on_infra_error": "ignore"}, "on_infra_error"),
        ({"concurrency": 0}, "concurrency"),
        ({"seeds": ["ab" * 32]}, "1 seeds for 2 candidates"),
        ({"seeds": ["zz", None]}, "64 hex"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
    ],
)
def test_bad_batch_arguments_fail_before_any_exec(
    grader: Grader, kwargs: dict[str, Any], error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        grader.batch([RIGHT_VOWELS] * 2, VOWELS, **kwargs)


def test_one_spec_per_candidate_grades_many_prompts_in_one_call(grader: Grader) -> None:
    specs: list[RewardSpec] = [ADD, VOWELS, ADD, VOWELS]
    cands = [
        "def solve(a, b):\n    return a + b\n",
        RIGHT_VOWELS,
        "def solve(a, b):\n    return 0\n",
        HALF_VOWELS,
    ]
    results = grader.batch(cands, specs, seeds=["ab" * 32] * 4)
    assert [r.reward for r in results] == [1.0, 1.0, 0.25, 0.0625]
    assert [r.index for r in results] == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("spec", "error", "match"),
    [
        ([VOWELS], ValueError, "1 specs for 2 candidates"),
        ([VOWELS, "unit"], TypeError, "must be a RewardSpec"),
        ("unit", TypeError, "one per candidate"),
    ],
)
def test_bad_specs_fail_before_any_exec(
    grader: Grader, spec: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        grader.batch([RIGHT_VOWELS] * 2, spec)


def test_empty_batch(grader: Grader) -> None:
    assert grader.batch([], VOWELS) == []


def _custom_seed_protocol_spec() -> RewardSpec:
    class LastLine(RewardSpec):
        """A custom spec in the earlier release's style (build + parse only)."""

        def build(self, candidate_path: str) -> str:
            return (
                "ns = {}\n"
                f"exec(open({candidate_path!r}).read(), ns)\n"
                "print('COLLIMATE_REWARD=%s' % (1.0 if ns['solve'](2) == 4 else 0.0))\n"
                "print('warning: noise after the reward line')\n"
            )

    return LastLine()


def test_a_custom_spec_with_the_seed_protocol_still_works(grader: Grader) -> None:
    spec = _custom_seed_protocol_spec()
    assert grader.grade("def solve(x):\n    return x * 2\n", spec).reward == 1.0
    assert grader.grade("def solve(x):\n    return x\n", spec).reward == 0.0


class _Recording:
    """A real client that remembers the size of every grader it sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sizes: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def exec_once(self, *a: Any, **kw: Any) -> Any:
        self.sizes.append(len(kw["code"]))
        return self.inner.exec_once(*a, **kw)

    async def exec_once_async(self, *a: Any, **kw: Any) -> Any:
        self.sizes.append(len(kw["code"]))
        return await self.inner.exec_once(*a, **kw)


def test_the_sdk_learns_to_send_less_and_resends_in_full_when_refused(
    client: CollimateClient,
) -> None:
    runtime_forms.clear()
    rec = _Recording(client)
    first = grade(rec, BARE, RIGHT_VOWELS, VOWELS)  # type: ignore[arg-type]
    second = grade(rec, BARE, RIGHT_VOWELS, VOWELS)  # type: ignore[arg-type]
    assert first.reward == second.reward == 1.0
    assert first.detail["runtime"] == "bytecode" and second.detail["runtime"] == "bytecode"
    assert rec.sizes[1] < rec.sizes[0] - 5000  # no source the second time
    # a target that stops accepting the small form asks for the full one
    key = runtime_forms.key(rec, BARE, None)
    runtime_forms.remember(key, "preloaded")
    third = grade(rec, BARE, RIGHT_VOWELS, VOWELS)  # type: ignore[arg-type]
    assert third.reward == 1.0 and not third.infra_error
    assert len(rec.sizes) == 4 and rec.sizes[3] == rec.sizes[0]  # one resend, in full
    runtime_forms.clear()


def test_a_template_with_the_runtime_preloaded_gets_config_and_candidate_only(
    client: CollimateClient,
) -> None:
    runtime_forms.clear()
    rec = _Recording(client)
    first = grade(rec, TEMPLATE, RIGHT_VOWELS, VOWELS)  # type: ignore[arg-type]
    second = grade(rec, TEMPLATE, HALF_VOWELS, VOWELS)  # type: ignore[arg-type]
    assert first.reward == 1.0 and 0.0 <= second.reward < 1.0
    assert first.detail["runtime"] == second.detail["runtime"] == "preloaded"
    assert rec.sizes[1] < 4000 < rec.sizes[0]  # the second one: no runtime at all
    runtime_forms.clear()


def test_the_async_path_learns_and_resends_too(backend: LocalCollimateBackend) -> None:
    runtime_forms.clear()

    async def run() -> tuple[list[GradeResult], list[int]]:
        async with AsyncCollimateClient(backend.base_url) as ac:
            rec = _Recording(ac)
            rec.exec_once = rec.exec_once_async  # type: ignore[method-assign]
            out = [await grade_async(rec, BARE, RIGHT_VOWELS, VOWELS)]  # type: ignore[arg-type]
            runtime_forms.remember(runtime_forms.key(rec, BARE, None), "preloaded")
            # (each alone: a pack would send one exec for the three)
            out += await grade_batch_async(rec, BARE, [RIGHT_VOWELS] * 3, VOWELS, pack=1)  # type: ignore[arg-type]
            out.append(await grade_async(rec, BARE, RIGHT_VOWELS, VOWELS))  # type: ignore[arg-type]
            return out, rec.sizes

    results, sizes = asyncio.run(run())
    assert [r.reward for r in results] == [1.0] * 5
    # 1 full, 3 refused small ones, 3 resent in full, then small again
    assert sorted(sizes[1:4]) == [min(sizes)] * 3 and sizes[4:7] == [sizes[0]] * 3
    assert sizes[7] < sizes[0] - 5000
    runtime_forms.clear()


def test_a_standard_import_is_never_a_silent_task_failure(grader: Grader) -> None:
    """A candidate importing the standard library either grades normally or,
    when the guest cannot read its standard library, is flagged as infra."""
    cand = "import heapq, bisect\ndef solve(a, b):\n    return heapq.nsmallest(1, [a + b])[0]\n"
    results = grader.batch([cand], ADD, on_infra_error="zero")
    assert results[0].reward == 1.0 or (
        results[0].infra_error and "heapq" in (results[0].error or "")
    ), results[0]
