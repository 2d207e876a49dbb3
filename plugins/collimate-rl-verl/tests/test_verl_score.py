"""``compute_score`` and ``compute_score_async`` as verl calls them, against a
real local backend over TCP and a unix socket.

verl finds the function with ``get_custom_reward_fn`` (its own code, from
the wheel: see ``conftest.py``), which binds ``reward_kwargs``; its reward
loop then calls it once per sample with ``data_source=``, ``solution_str=``,
``ground_truth=``, ``extra_info=``: a coroutine function is awaited, a
plain one runs in the loop's default thread pool (``run_in_executor(None,
...)``, ``NaiveRewardManager.run_single`` in
``verl/experimental/reward_loop/reward_manager/naive.py``), all samples of
a batch at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

import collimate_rl.verl
from collimate_rl import CollimateError, get_plugin_manager, hookimpl
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.verl import compute_score, compute_score_async, compute_score_batch
from collimate_rl.verl.options import ENV_ON_INFRA_ERROR, options_from

KEYS = {"score", "acc", "passed", "total", "verdict", "infra_error", "error", "reason"}
# verl's code datasets (APPS, TACO, ...): a JSON string of inputs / outputs
STDIO = json.dumps({"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10\n"]})
CALL = json.dumps({"fn_name": "add", "inputs": [[1, 2], [5, 5]], "outputs": [3, 10]})
RIGHT = "<think>easy</think>\n```python\nprint(int(input()) * 2)\n```"
WRONG = "```python\nprint(int(input()) + 3)\n```"
RIGHT_CALL = "```python\nclass Solution:\n    def add(self, a, b):\n        return a + b\n```"


def samples() -> list[dict[str, Any]]:
    """One batch as verl's reward loop scores it: two prompts, two responses each."""
    rows = []
    for i, (truth, responses) in enumerate(((STDIO, (RIGHT, WRONG)), (CALL, (RIGHT_CALL, "")))):
        for response in responses:
            rows.append(
                {
                    "data_source": "codecontests",
                    "solution_str": response,
                    "ground_truth": truth,
                    "extra_info": {"index": i, "split": "train"},
                }
            )
    return rows


async def reward_loop(fn: Any, batch: list[dict[str, Any]]) -> list[Any]:
    """What verl's reward loop does with a custom compute_score, per sample."""
    loop = asyncio.get_running_loop()
    is_async = inspect.iscoroutinefunction(fn)

    async def run_single(row: dict[str, Any]) -> Any:
        kwargs = {
            "data_source": row["data_source"],
            "solution_str": row["solution_str"],
            "ground_truth": row["ground_truth"],
            "extra_info": {**row["extra_info"], "num_turns": None, "rollout_reward_scores": {}},
        }
        if is_async:
            return await fn(**kwargs)
        return await loop.run_in_executor(None, lambda: fn(**kwargs))

    return await asyncio.gather(*(run_single(row) for row in batch))


def test_the_loading_is_verls_own_code(verl_code: dict[str, Any]) -> None:
    assert verl_code["origin"] == "wheel"


@pytest.mark.parametrize("name", ["compute_score", "compute_score_async"])
def test_verl_loads_it_by_pkg_path_and_scores_a_batch(
    custom_reward_fn: Any, target: dict[str, str], name: str
) -> None:
    fn = custom_reward_fn("pkg://collimate_rl.verl", name, target)
    assert inspect.iscoroutinefunction(fn) == (name == "compute_score_async")
    results = asyncio.run(reward_loop(fn, samples()))
    assert all(set(r) == KEYS for r in results)
    assert [r["score"] for r in results] == [1.0, 0.0, 1.0, 0.0]
    assert [r["acc"] for r in results] == [True, False, True, False]
    assert [(r["passed"], r["total"]) for r in results] == [(2, 2), (0, 2), (2, 2), (0, 2)]
    assert not any(r["infra_error"] for r in results)


def test_verl_loads_it_by_file_path(custom_reward_fn: Any, target: dict[str, str]) -> None:
    path = Path(collimate_rl.verl.__file__)
    fn = custom_reward_fn(str(path), "compute_score", target)
    result = fn(data_source="apps", solution_str=RIGHT, ground_truth=STDIO, extra_info=None)
    assert result["score"] == 1.0


def test_infra_failure_raises_by_default(tmp_path: Path) -> None:
    sock = tmp_path / "gone.sock"
    with LocalCollimateBackend(socket_path=sock, port=None):
        pass  # started, then stopped: nothing listens any more
    with pytest.raises(CollimateError):
        compute_score("apps", RIGHT, STDIO, unix_socket=str(sock))
    with pytest.raises(CollimateError):
        asyncio.run(compute_score_async("apps", RIGHT, STDIO, unix_socket=str(sock)))


def test_infra_failure_is_a_flagged_zero_when_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sock = tmp_path / "gone.sock"
    with LocalCollimateBackend(socket_path=sock, port=None):
        pass
    flagged = compute_score("apps", RIGHT, STDIO, unix_socket=str(sock), on_infra_error="zero")
    assert set(flagged) == KEYS
    assert (flagged["score"], flagged["infra_error"], flagged["verdict"]) == (
        0.0,
        True,
        "infra_error",
    )
    assert flagged["error"]
    assert flagged["reason"] == f"infra_error: {flagged['error']}"
    monkeypatch.setenv(ENV_ON_INFRA_ERROR, "zero")
    again = asyncio.run(compute_score_async("apps", RIGHT, STDIO, unix_socket=str(sock)))
    assert again["infra_error"] is True


def test_batch_reward_manager_convention(target: dict[str, str]) -> None:
    rows = samples()
    results = compute_score_batch(
        data_sources=[r["data_source"] for r in rows],
        solution_strs=[r["solution_str"] for r in rows],
        ground_truths=[r["ground_truth"] for r in rows],
        extra_infos=[r["extra_info"] for r in rows],
        **target,
    )
    assert [r["score"] for r in results] == [1.0, 0.0, 1.0, 0.0]


def test_concurrent_calls_from_threads_are_packed(backend: LocalCollimateBackend) -> None:
    """verl's thread pool calls one sample at a time, on one shared client;
    core coalesces them into packs (each result says which pack graded it,
    seen here through the ``collimate_rl_after_grade`` hook), and every
    caller gets its own result."""
    packs: list[int] = []

    class Observer:
        @hookimpl
        def collimate_rl_after_grade(self, result: Any, candidate: str, index: int) -> None:
            packs.append(result.raw.get("pack", {}).get("size", 1))

    pm = get_plugin_manager()
    pm.register(Observer(), name="verl-test-packs")
    try:
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            futures = [
                pool.submit(compute_score, "apps", RIGHT, STDIO, None, base_url=backend.base_url)
                for _ in range(32)
            ]
            results = [f.result() for f in futures]
    finally:
        pm.unregister(name="verl-test-packs")
    assert [r["score"] for r in results] == [1.0] * 32
    assert len(packs) == 32 and max(packs) > 1, packs


def test_concurrent_async_calls_on_one_loop_are_packed(backend: LocalCollimateBackend) -> None:
    packs: list[int] = []

    class Observer:
        @hookimpl
        def collimate_rl_after_grade(self, result: Any, candidate: str, index: int) -> None:
            packs.append(result.raw.get("pack", {}).get("size", 1))

    async def batch() -> list[dict[str, Any]]:
        calls = [
            compute_score_async("apps", RIGHT, STDIO, None, base_url=backend.base_url)
            for _ in range(32)
        ]
        return list(await asyncio.gather(*calls))

    pm = get_plugin_manager()
    pm.register(Observer(), name="verl-test-async-packs")
    try:
        results = asyncio.run(batch())
    finally:
        pm.unregister(name="verl-test-async-packs")
    assert [r["score"] for r in results] == [1.0] * 32
    assert len(packs) == 32 and max(packs) > 1, packs


def test_process_pool_workers_use_their_own_clients(backend: LocalCollimateBackend) -> None:
    """verl's prime manager scores in a ProcessPoolExecutor."""
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as pool:
        futures = [
            pool.submit(compute_score, "apps", RIGHT, STDIO, None, base_url=backend.base_url)
            for _ in range(4)
        ]
        scores = [f.result()["score"] for f in futures]
    assert scores == [1.0] * 4


def test_bad_ground_truth_names_the_data_source_and_the_row() -> None:
    with pytest.raises(ValueError, match=r"of a 'gsm8k' row \(its extra_info has no index"):
        compute_score("gsm8k", "42", "42")
    info = {"index": 17, "split": "train"}
    with pytest.raises(
        ValueError, match=r"of the 'gsm8k' row extra_info\['index'\]=17 of split 'train' is not"
    ):
        compute_score("gsm8k", "42", "42", info)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"on_infra_error": "skip"}, "on_infra_error"),
        ({"seed_mode": "x"}, "seed_mode"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"template": ""}, "template"),
    ],
)
def test_bad_options_are_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        options_from(kwargs)


def test_verls_own_keywords_are_left_alone() -> None:
    options = options_from({"reward_router_address": "x", "sandbox_fusion_url": "y"})
    assert options.on_infra_error == "raise"


def test_crn_seed_is_shared_by_a_prompt_group(target: dict[str, str]) -> None:
    truth = {
        "kind": "property",
        "reference": "    return x",
        "generator": "random.random()",
        "k": 3,
    }
    a = compute_score("synthetic", "def solve(x):\n    return x", truth, **target)
    b = compute_score("synthetic", "def solve(x):\n    return x", truth, **target)
    assert a["score"] == b["score"] == 1.0


def test_array_valued_ground_truth_from_parquet(target: dict[str, str]) -> None:
    """What pandas hands verl for a list column of a parquet row: numpy arrays."""
    np = pytest.importorskip("numpy")
    truth = {"inputs": np.array(["2\n", "5\n"]), "outputs": np.array(["4\n", "10\n"])}
    assert compute_score("taco", RIGHT, truth, **target)["score"] == 1.0


def test_cpp_rows_are_judged_too(target: dict[str, str]) -> None:
    """verl's stock compute_score always sends Python; ours judges an
    open-r1 row in C++ (and a Codeforces row) by the row's language."""
    from collimate_rl.testing.programs import CPP, need

    need("cpp")
    cases = [{"input": f"{i} {2 * i}\n", "output": f"{3 * i}\n"} for i in range(4)]
    open_r1 = json.dumps({"language": "cpp", "test_cases": cases})
    codeforces = {"official_tests": cases, "language": "cpp", "time_limit": 1.0,
                  "memory_limit": 256, "input_mode": "stdio"}  # fmt: skip
    right = "```cpp\n" + CPP["right"] + "\n```"
    for truth in (open_r1, codeforces):
        assert compute_score("open-r1/codeforces", right, truth, **target)["score"] == 1.0
        wrong = compute_score("open-r1/codeforces", CPP["wrong"], truth, **target)
        assert wrong["score"] == 0.25  # 0 + 0 == 0 * 0


@pytest.mark.every_row
@pytest.mark.parametrize("dataset", ["multipl-e", "humaneval-x", "mbxp"])
def test_test_program_rows_as_ground_truth(target: dict[str, str], dataset: str) -> None:
    """A MultiPL-E, HumanEval-X or MBXP row as verl's ``ground_truth`` (the
    whole row, JSON): judged in the row's language, whatever verl's
    ``data_source``."""
    from collimate_rl.testing.programs import need, program_rows

    for case in (c for c in program_rows() if c["dataset"] == dataset):
        need(case["language"])
        truth = json.dumps(case["row"])
        right = compute_score(dataset, case["right"], truth, **target)
        wrong = compute_score(dataset, case["wrong"], truth, **target)
        assert (right["score"], wrong["score"]) == (1.0, 0.0), (case["row"], right, wrong)
