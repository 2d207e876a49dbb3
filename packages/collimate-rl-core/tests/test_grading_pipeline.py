"""The grading pipeline goes one way: the entry points (``grading``,
``batch``) over plan -> run -> read, no module importing one that imports
it back, each importable alone."""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import collimate_rl

ROOT = Path(collimate_rl.__file__).parent
STEPS = sorted(p.stem for p in (ROOT / "pipeline").glob("*.py") if p.stem != "__init__")
OURS = ["grading", "batch", "packing", *(f"pipeline.{step}" for step in STEPS)]


def _runtime_imports(module: str) -> set[str]:
    """The modules of OURS that ``module`` imports when it runs (at import
    time or in a function; not under ``if TYPE_CHECKING:``)."""
    path = ROOT / (module.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.rpartition(".")[0]
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = package.split(".") if package else []
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
        target = ".".join([*base, *(node.module.split(".") if node.module else [])])
        for alias in node.names:
            for name in (f"{target}.{alias.name}".strip("."), target):
                if name in OURS:
                    found.add(name)
                    break
    return found - {module}


GRAPH = {m: _runtime_imports(m) for m in OURS}


def test_the_graph_is_read_right() -> None:
    assert "pipeline.plan" in GRAPH["pipeline.run"]
    assert "pipeline.run" in GRAPH["pipeline.coalesce"]
    assert "batch" in GRAPH["grading"]


def test_no_module_of_the_pipeline_imports_one_that_imports_it_back() -> None:
    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(GRAPH[start])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(GRAPH[m])
        return seen

    cycles = [m for m in OURS if m in reach(m)]
    assert cycles == [], {m: sorted(GRAPH[m]) for m in cycles}
    assert "grading" not in GRAPH["batch"]  # the entry points: grading over batch, not both ways


@pytest.mark.parametrize(
    ("step", "below"),
    [
        ("pipeline.plan", {"pipeline.targets", "pipeline.result"}),
        (
            "pipeline.read",
            {"pipeline.execs", "pipeline.plan", "pipeline.result", "pipeline.targets"},
        ),
        ("pipeline.result", set()),
    ],
)
def test_each_step_imports_only_the_steps_below_it(step: str, below: set[str]) -> None:
    assert GRAPH[step] <= below, GRAPH[step] - below


@pytest.mark.parametrize("module", OURS)
def test_each_module_imports_alone(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import collimate_rl.{module}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_public_import_paths_still_work() -> None:
    from collimate_rl import (
        GradeResult,
        grade,
        grade_async,
        grade_batch,
        grade_batch_async,
        grading,
        rewards,
    )

    assert grading.grade_batch is rewards.grade_batch is grade_batch
    assert grading.grade_batch_async is grade_batch_async
    assert grading.GradeResult is rewards.GradeResult is GradeResult
    assert rewards.grade is grade and rewards.grade_async is grade_async


def test_a_batch_goes_through_each_entry_point_once() -> None:
    """Followed through ``grade_batch_async`` (one thread: its loop), control
    enters the module it is written in (``pipeline/_async/grading.py``) once, the
    call itself, and never ``batch``, ``grading`` (their public homes) or
    ``packing``: the pipeline does not come back up into its entry points."""
    from collimate_rl import AsyncCollimateClient, UnitTestReward, grade_batch_async
    from collimate_rl.local_backend import LocalCollimateBackend

    watched = {
        str(ROOT / f"{m}.py"): m for m in ("pipeline/_async/grading", "batch", "grading", "packing")
    }
    entries: dict[str, int] = dict.fromkeys(watched.values(), 0)
    seen: list[Any] = []  # (frames kept alive: a resumed coroutine is no new entry)

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call" or any(frame is f for f in seen):
            return
        module = watched.get(frame.f_code.co_filename)
        caller = frame.f_back.f_code.co_filename if frame.f_back is not None else ""
        if module is not None and caller != frame.f_code.co_filename:
            seen.append(frame)
            entries[module] += 1

    spec = UnitTestReward([{"input": [i], "output": i} for i in range(3)])
    cands = ["def solve(i):\n    return i\n"] * 6

    async def run() -> list[float]:
        async with AsyncCollimateClient(backend.base_url, retries=0) as c:
            sys.setprofile(profile)
            try:
                results = await grade_batch_async(c, "py", cands, spec)
            finally:
                sys.setprofile(None)
            return [r.reward for r in results]

    with LocalCollimateBackend() as backend:
        assert asyncio.run(run()) == [1.0] * 6
    assert entries == {"pipeline/_async/grading": 1, "batch": 0, "grading": 0, "packing": 0}
