"""slime's per-sample reward dispatch against the same samples graded one at
a time (not a test).

slime awaits ``--custom-rm-path collimate_rl.slime.reward_func`` once per
sample as each generation finishes, all on one event loop; core coalesces
those concurrent calls into packs. This measures, on one loop against our
local backend (a process of its own), for N samples (8 per prompt, prompts
in four dataset shapes: unit tests, MBPP asserts, APPS calls, LiveCodeBench
stdin; right, half right and wrong answers):

* ``gathered``: the N per-sample ``reward_func`` calls gathered (slime's
  dispatch);
* ``group-rm``: ``group_reward_func`` once per prompt, gathered (slime's
  ``--group-rm``);
* ``sequential``: the same N samples, one awaited ``reward_func`` after the
  other.

Every way must give the same rewards (checked). Per size it prints the
median seconds, samples/s, the ratio to sequential, and the longest the
event loop went without running a 5 ms ticker during the gathered run
(what a stall of the loop would show as).

    python benchmarks/bench_slime.py [--rounds 3] [--sizes 64,256]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from _results import add_out_option, write_results
from _sides import ours_backend

from collimate_rl.slime import group_reward_func, reward_func

UNIT = json.dumps([{"input": [1], "output": 2}, {"input": [3], "output": 6}])
MBPP = json.dumps({"test_list": ["assert add(1, 2) == 3", "assert add(-2, 2) == 0"]})
APPS = json.dumps(
    {"input_output": json.dumps({"fn_name": "times", "inputs": [[2], [5]], "outputs": [[4], [10]]})}
)
LCB = json.dumps(
    [
        {"input": "2\n", "output": "4", "testtype": "stdin"},
        {"input": "7\n", "output": "14", "testtype": "stdin"},
    ]
)
TASKS: list[tuple[str, list[tuple[str, float]]]] = [
    (
        UNIT,
        [
            ("def solve(x):\n    return 2 * x\n", 1.0),
            ("def solve(x):\n    return 2 if x == 1 else 0\n", 0.5),
            ("def solve(x):\n    return -1\n", 0.0),
        ],
    ),
    (
        MBPP,
        [
            ("def add(a, b):\n    return a + b\n", 1.0),
            ("def add(a, b):\n    return 3\n", 0.5),
            ("def add(a, b):\n    return None\n", 0.0),
        ],
    ),
    (
        APPS,
        [
            ("def times(x):\n    return 2 * x\n", 1.0),
            ("def times(x):\n    return 4\n", 0.5),
            ("def times(x):\n    return 0\n", 0.0),
        ],
    ),
    (
        LCB,
        [("print(2 * int(input()))\n", 1.0), ("input()\nprint(4)\n", 0.5), ("print('no')\n", 0.0)],
    ),
]


@dataclass
class Sample:
    """The fields of slime's ``Sample`` a reward function reads."""

    group_index: int
    index: int
    prompt: str
    response: str
    label: str
    metadata: dict[str, Any] = field(default_factory=dict)
    reward: Any = None
    remove_sample: bool = False
    status: str = "completed"


def make_groups(n: int, per_prompt: int = 8) -> list[list[Sample]]:
    groups = []
    for g in range(n // per_prompt):
        label, answers = TASKS[g % len(TASKS)]
        groups.append(
            [
                Sample(
                    group_index=g,
                    index=g * per_prompt + k,
                    prompt=f"prompt {g}",
                    response=f"<think>...</think>\n```python\n{answers[k % 3][0]}```\n",
                    label=label,
                    metadata={"expected": answers[k % 3][1]},
                )
                for k in range(per_prompt)
            ]
        )
    return groups


async def gathered(args: Any, groups: list[list[Sample]]) -> list[Any]:
    return list(await asyncio.gather(*(reward_func(args, s) for g in groups for s in g)))


async def group_rm(args: Any, groups: list[list[Sample]]) -> list[Any]:
    per_group = await asyncio.gather(*(group_reward_func(args, g) for g in groups))
    return [r for rewards in per_group for r in rewards]


async def sequential(args: Any, groups: list[list[Sample]]) -> list[Any]:
    return [await reward_func(args, s) for g in groups for s in g]


WAYS: dict[str, Callable[[Any, list[list[Sample]]], Awaitable[list[Any]]]] = {
    "gathered": gathered,
    "group-rm": group_rm,
    "sequential": sequential,
}


async def _ticker(longest: list[float]) -> None:
    loop = asyncio.get_running_loop()
    while True:
        before = loop.time()
        await asyncio.sleep(0.005)
        longest[0] = max(longest[0], loop.time() - before - 0.005)


async def measure(args: Any, size: int, rounds: int) -> dict[str, Any]:
    groups = make_groups(size)
    expected = [s.metadata["expected"] for g in groups for s in g]
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    stall = [0.0]
    for _ in range(rounds):
        for way, run in WAYS.items():
            ticker = asyncio.create_task(_ticker(stall)) if way == "gathered" else None
            started = time.perf_counter()
            rewards = await run(args, groups)
            times[way].append(time.perf_counter() - started)
            if ticker is not None:
                ticker.cancel()
            if rewards != expected:
                raise AssertionError(f"{way}: rewards differ from the expected ones")
    return {"times": {w: statistics.median(t) for w, t in times.items()}, "stall": stall[0]}


async def run_all(url: str, sizes: list[int], rounds: int) -> list[tuple[int, dict[str, Any]]]:
    args = argparse.Namespace(collimate_base_url=url, reward_key=None)
    await gathered(args, make_groups(64))  # build the grader programs, open connections
    return [(size, await measure(args, size, rounds)) for size in sizes]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="64,256")
    add_out_option(parser)
    args, _ = parser.parse_known_args(argv)  # (run_all.py passes its args to every script)
    sizes = [int(s) for s in args.sizes.split(",")]
    with ours_backend() as url:
        results = asyncio.run(run_all(url, sizes, args.rounds))
    print(f"slime reward dispatch, one event loop, median of {args.rounds} rounds")
    print(f"{'samples':>7}  {'way':<10} {'seconds':>8} {'samples/s':>10} {'vs sequential':>14}")
    for size, found in results:
        times = found["times"]
        for way, seconds in times.items():
            ratio = times["sequential"] / seconds
            print(f"{size:>7}  {way:<10} {seconds:>8.2f} {size / seconds:>10.1f} {ratio:>13.1f}x")
        print(f"{'':>7}  longest loop stall while gathered: {found['stall'] * 1000:.0f} ms")
    _write(args, sizes, results)
    return 0


#: The ways as the charts name them.
LABELS = {
    "gathered": "reward_func, gathered on one loop",
    "group-rm": "group_reward_func (--group-rm)",
    "sequential": "one sample after another",
}


def _write(
    args: argparse.Namespace, sizes: list[int], results: list[tuple[int, dict[str, Any]]]
) -> None:
    """The results JSON and its chart: samples/s against the number of samples."""
    rates = {way: [size / found["times"][way] for size, found in results] for way in WAYS}
    figures = {
        "sizes": sizes,
        "median_seconds": {
            LABELS[way]: [found["times"][way] for _, found in results] for way in WAYS
        },
        "samples_per_s": {LABELS[way]: r for way, r in rates.items()},
        "longest_loop_stall_ms": [found["stall"] * 1000 for _, found in results],
    }
    charts: list[dict[str, object]] = [
        {
            "name": "sizes",
            "kind": "line" if len(sizes) > 1 else "bar",
            "title": f"slime reward dispatch (median of {args.rounds} rounds)",
            **(
                {"x_values": sizes, "log_x": True}
                if len(sizes) > 1
                else {"categories": [f"{sizes[0]} samples"]}
            ),
            "series": [{"name": LABELS[way], "values": r} for way, r in rates.items()],
            "y_label": "samples graded per second, higher is better",
            "x_label": "samples in the step",
        }
    ]
    write_results(__file__, args, figures, charts)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
