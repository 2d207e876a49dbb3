"""Python stdin/stdout grading of a training step, the shape of the
verifiable coding problems RL sets use: SandboxFusion's own server driven as
verl drives it (one ``POST /run_code`` per test), against our local
backend's ``/run_code`` driven the same way, and against one documented
``grade_batch`` call with the spec a verl user of our adapter gets for that
ground truth (``reward_spec_from_ground_truth({"inputs": [...], "outputs":
[...]})``: a ``StdioReward``), and with ``ContestReward(language="python")``
(the judge route).

The workload: 8 prompts x 8 distinct Python 3 candidates x 15 tests, the
same eight problems, wrong models and notes as the C++ benchmark, written as
Python stdin programs in ``python_judge_problems/``; the driver, its checks
and targets are ``_stdio_judge.py``'s.

    python benchmarks/bench_python_judge.py [--rounds 3] [--threads 32]
        [--prompts 8] [--candidates 8] [--tests 15] [--quick]
"""

from __future__ import annotations

import sys
from pathlib import Path

from _stdio_judge import BATCH_WAY, BatchWay, Language, main

from collimate_rl import ContestReward, RewardSpec, reward_spec_from_ground_truth


def stdio_spec(tests: list[tuple[str, str]]) -> RewardSpec:
    """What verl's adapter makes of the row's ground truth (APPS-style)."""
    return reward_spec_from_ground_truth(
        {"inputs": [i for i, _ in tests], "outputs": [o for _, o in tests]}
    )


def contest_spec(tests: list[tuple[str, str]]) -> RewardSpec:
    return ContestReward(
        [{"input": i, "output": o} for i, o in tests],
        language="python",
        time_limit=2,
        memory_limit_mb=256,
    )


PYTHON = Language(
    name="python",
    title="Python",
    script=__file__,
    problems_dir=Path(__file__).resolve().parent / "python_judge_problems",
    comment="#",
    add_two="a, b = map(int, input().split())\nprint(a + b)\n",
    batch_ways=(
        BatchWay(BATCH_WAY, "ours grade_batch (StdioReward from the ground truth)", stdio_spec),
        BatchWay(
            "ours grade_batch ContestReward",
            'ours grade_batch (ContestReward(language="python"))',
            contest_spec,
        ),
    ),
    tests=15,
    rounds=3,
)

if __name__ == "__main__":
    sys.exit(main(PYTHON, sys.argv[1:]))
