"""C++ contest grading of a training step: SandboxFusion's own server driven
as verl drives it (one ``POST /run_code`` per test), against our local
backend's ``/run_code`` driven the same way, and against one documented
``grade_batch`` call with ``ContestReward`` (the judge route).

The workload: 8 prompts x 8 distinct C++ candidates x 10 tests,
Codeforces-style stdin/stdout programs (``#include <bits/stdc++.h>``) in
``cpp_judge_problems/``; the driver, its checks and targets are
``_stdio_judge.py``'s.

    python benchmarks/bench_cpp_judge.py [--rounds 2] [--threads 32]
        [--prompts 8] [--candidates 8] [--tests 10] [--quick]
"""

from __future__ import annotations

import sys
from pathlib import Path

from _stdio_judge import BATCH_WAY, BatchWay, Language, main

from collimate_rl import ContestReward

CPP = Language(
    name="cpp",
    title="C++",
    script=__file__,
    problems_dir=Path(__file__).resolve().parent / "cpp_judge_problems",
    comment="//",
    add_two=(
        "#include <bits/stdc++.h>\n"
        "int main() { long long a, b; std::cin >> a >> b; std::cout << a + b << '\\n'; }\n"
    ),
    batch_ways=(
        BatchWay(
            BATCH_WAY,
            "ours grade_batch (ContestReward)",
            lambda tests: ContestReward(
                [{"input": i, "output": o} for i, o in tests],
                language="cpp",
                time_limit=2,
                memory_limit_mb=256,
            ),
        ),
    ),
    tests=10,
    rounds=2,
)

if __name__ == "__main__":
    sys.exit(main(CPP, sys.argv[1:]))
