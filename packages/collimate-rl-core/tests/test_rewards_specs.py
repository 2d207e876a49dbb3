"""Reward specs without a backend: validation, dispatch, extraction, verdict
reading, and the grader program run by a local interpreter (build/parse)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from collimate_rl import (
    CallReward,
    PropertyReward,
    RewardSpec,
    StdioReward,
    UnitTestReward,
    extract_code,
    reward_spec_from_ground_truth,
)
from collimate_rl.plugins import hookimpl, new_plugin_manager
from collimate_rl.rewards import GuestReward, Outcome
from collimate_rl.rewards.program import (
    py_literal,
    runtime_source,
    source_only_program,
)
from collimate_rl.rewards.spec import candidate_context, delivered_text
from collimate_rl.rewards.verdict import clamp_reward, parse_reward_text, read_frames

SRC = Path(__file__).resolve().parents[1] / "src"
VOWELS = PropertyReward(
    reference="    return sum(c in 'aeiouAEIOU' for c in x)",
    generator="''.join(random.choice('abcdEIOUxyz') for _ in range(8))",
    k=16,
)
RIGHT_VOWELS = "def solve(x):\n    return sum(c in 'aeiouAEIOU' for c in x)\n"


def run_locally(
    spec: GuestReward,
    candidate: str,
    *,
    seed: str = "ab" * 32,
    timeout: float = 10.0,
    python: str = sys.executable,
    form: str = "full",
    preload: bool = False,
) -> tuple[Outcome, str]:
    """Run the grader as a guest would (seeded ``random``, the candidate
    delivered as a file) with a local interpreter. ``form="source"`` runs the
    plain-source program; ``preload`` imports the runtime module first, as a
    template preloading it would."""
    ctx = candidate_context(candidate, secrets.token_hex(8), timeout)
    with open(ctx.candidate_path, "w", encoding="utf-8") as fh:
        fh.write(delivered_text(candidate))
    extra = spec.program_files(ctx)
    for entry in extra:  # the sealed test data, as an exec's files deliver it
        with open(entry["path"], "w", encoding="utf-8") as fh:
            fh.write(entry["content"])
    script = f"{ctx.candidate_path}.program.py"
    try:
        if form == "source":
            program = source_only_program(_config_of(spec, ctx))
        else:
            program = spec.program(replace(ctx, form=form))  # type: ignore[arg-type]
        prefix = "import collimate_rl.rewards.guest_runtime\n" if preload else ""
        code = f"{prefix}import random\nrandom.seed(int({seed!r}, 16))\n" + program
        env = dict(os.environ, PYTHONPATH=str(SRC)) if preload else None
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(code)  # (too long for one argv string)
        proc = subprocess.run(
            [python, script],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout + 30,
            check=False,
            env=env,
        )
        out = proc.stdout.decode("utf-8", "replace")
        return spec.outcome(out, proc.returncode, ctx), out
    finally:
        for path in [ctx.candidate_path, script, *(e["path"] for e in extra)]:
            if os.path.exists(path):
                os.unlink(path)


def _config_of(spec: GuestReward, ctx: Any) -> dict[str, Any]:
    """The config a program carries (read back from the full program)."""
    program = spec.program(ctx)
    literal = program.split("\n", 1)[0].removeprefix("C = ")
    config: dict[str, Any] = eval(literal)  # our own literal
    return config


# -- unit test shapes --------------------------------------------------------


def test_unit_tests_accept_the_documented_shapes() -> None:
    spec = UnitTestReward(
        [
            {"input": [1, 2], "output": 3},
            {"args": [1, 2], "expected": 3},
            {"input": 5, "output": 5},
            {"input": [[1, 2]], "output": [1, 2]},
            {"input": [], "kwargs": {"b": 2}, "expected_output": 2},
        ]
    )
    assert spec.guest_config()["tests"] == [
        ([1, 2], {}, 3),
        ([1, 2], {}, 3),
        ([5], {}, 5),
        ([[1, 2]], {}, [1, 2]),
        ([], {"b": 2}, 2),
    ]
    assert spec.entry == "solve" and spec.interpreter == "python3"


@pytest.mark.parametrize(
    ("tests", "match"),
    [
        ("[]", "must be a list"),
        ([{"input": [1]}], "no expected value"),
        ([3], "must be an object"),
        ([{"input": [object()], "output": 1}], "not JSON-like"),
        ([{"input": [1], "kwargs": [1], "output": 1}], "kwargs"),
    ],
)
def test_unit_tests_reject_malformed_data_at_construction(tests: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        UnitTestReward(tests)


def test_property_and_stdio_validate_at_construction() -> None:
    with pytest.raises(ValueError, match="reference does not compile"):
        PropertyReward(reference="    return (", generator="1")
    with pytest.raises(ValueError, match="generator"):
        PropertyReward(reference="    return x", generator="")
    with pytest.raises(ValueError, match="k must be"):
        PropertyReward(reference="    return x", generator="1", k=-1)
    with pytest.raises(ValueError, match="strings"):
        StdioReward([{"input": 1, "output": "1"}])
    with pytest.raises(ValueError, match="test_timeout"):
        UnitTestReward([], test_timeout=0)


# -- extract_code ------------------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("def solve(x): return x", "def solve(x): return x"),
        ("  \n  def solve(x): return x  \n", "def solve(x): return x"),
        ("text\n```python\ndef solve(x): return 1\n```\nmore", "def solve(x): return 1"),
        ("```\ndef solve(x): return 3\n```", "def solve(x): return 3"),
        ("```py\ndef solve(x): return 4\n```", "def solve(x): return 4"),
        ("```python\ndef solve(x): return 5", "def solve(x): return 5"),  # truncated
        (
            "```python\nprint(1)\n```\n```python\ndef solve(x): return 2\n```\n"
            "```python\nassert solve(1) == 2\n```",
            "def solve(x): return 2",
        ),
        (
            "```python\ndef solve(x): return 1\n```\nFixed:\n"
            "```python\ndef solve(x): return 2\n```",
            "def solve(x): return 2",
        ),
        (
            "```cpp\nint solve(){}\n```\n```python\ndef helper(): pass\n```",
            "def helper(): pass",
        ),
        (
            "<think>```python\ndef solve(x): return 0\n```</think>"
            "```python\ndef solve(x): return 9\n```",
            "def solve(x): return 9",
        ),
        ("~~~python\ndef solve(x): return 6\n~~~", "def solve(x): return 6"),
        (
            "- item\n  ```python\n  def solve(x):\n      return 7\n  ```",
            "def solve(x):\n    return 7",
        ),
    ],
)
def test_extract_code(completion: str, expected: str) -> None:
    assert extract_code(completion) == expected


def test_extract_code_honours_entry() -> None:
    text = "```python\ndef solve(x): return 1\n```\n```python\ndef f(x): return 2\n```"
    assert extract_code(text, entry="f") == "def f(x): return 2"


# -- ground truth dispatch -----------------------------------------------------


@pytest.mark.parametrize(
    ("gt", "kind"),
    [
        ([{"input": [1, 2], "output": 3}], UnitTestReward),
        (json.dumps([{"input": [1, 2], "output": 3}]), UnitTestReward),
        ({"tests": [{"input": [1], "output": 1}]}, UnitTestReward),
        ({"reference": "    return x", "generator": "1", "k": 4}, PropertyReward),
        ({"kind": "property", "reference": "    return x", "generator": "1"}, PropertyReward),
        ({"kind": "stdio", "tests": [{"input": "1\n", "output": "1\n"}]}, StdioReward),
        ({"inputs": ["1 2\n"], "outputs": ["3\n"]}, StdioReward),
        ({"fn_name": "add", "inputs": [[1, 2]], "outputs": [[3]]}, CallReward),
        ({"input_output": json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]})}, StdioReward),
        ([], UnitTestReward),
    ],
)
def test_reward_spec_from_ground_truth_shapes(gt: Any, kind: type) -> None:
    assert type(reward_spec_from_ground_truth(gt)) is kind


def test_ground_truth_entry_and_options() -> None:
    spec = reward_spec_from_ground_truth({"fn_name": "add", "inputs": [[1, 2]], "outputs": [[3]]})
    assert isinstance(spec, CallReward)  # APPS: either the wrapped or the bare value passes
    assert spec.entry == "add" and spec.guest_config()["tests"] == [([1, 2], [[3], 3])]
    prop = reward_spec_from_ground_truth({"reference": "    return x", "generator": "1"}, "f")
    assert isinstance(prop, PropertyReward) and prop.entry == "f" and prop.k == 16
    assert reward_spec_from_ground_truth(VOWELS) is VOWELS


@pytest.mark.parametrize(
    ("gt", "match"),
    [
        ("garbage", "not JSON"),
        (None, "ground_truth must be"),
        (5, "ground_truth must be"),
        ({"tests_typo": []}, "ground_truth must be"),
        ({"kind": "nope"}, "unknown reward kind 'nope'.*property"),
    ],
)
def test_ground_truth_errors_are_clear(gt: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        reward_spec_from_ground_truth(gt)


class _Always(RewardSpec):
    def __init__(self, value: float) -> None:
        self.value = value

    def build(self, candidate_path: str) -> str:
        return f"print({self.value})"


class _KindsPlugin:
    @hookimpl
    def collimate_rl_reward_kinds(self) -> Mapping[str, Any]:
        return {"always": lambda gt, entry: _Always(float(gt.get("value", 1.0)))}


def test_a_plugin_kind_is_resolved_through_the_registry() -> None:
    pm = new_plugin_manager(load_entrypoints=False)
    pm.register(_KindsPlugin(), name="test-kinds")
    spec = reward_spec_from_ground_truth({"kind": "always", "value": 0.5}, pm=pm)
    assert isinstance(spec, _Always) and spec.value == 0.5
    # built-ins come through the same hook, in the same registry
    assert type(reward_spec_from_ground_truth([], pm=pm)) is UnitTestReward


def test_a_plugin_cannot_silently_override_a_builtin_kind() -> None:
    class Clash:
        @hookimpl
        def collimate_rl_reward_kinds(self) -> Mapping[str, Any]:
            return {"property": lambda gt, entry: _Always(1.0)}

    pm = new_plugin_manager(load_entrypoints=False)
    pm.register(Clash(), name="clash")
    with pytest.raises(Exception, match="property"):
        reward_spec_from_ground_truth({"kind": "property"}, pm=pm)


# -- verdict reading -------------------------------------------------------------


@pytest.mark.parametrize(
    ("out", "reward"),
    [
        ("0.5\n", 0.5),
        ("0.3\n\n\n", 0.3),
        ("  0.25  ", 0.25),
        ("garbage", 0.0),
        ("", 0.0),
        ("1.5", 1.0),
        ("-1", 0.0),
        ("nan", 0.0),  # never a free pass
        ("COLLIMATE_REWARD=0.75\nwarning: noise after the reward line\n", 0.75),
        ("COLLIMATE_REWARD=0.1\nCOLLIMATE_REWARD=0.9\nnoise", 0.9),
    ],
)
def test_custom_spec_parse(out: str, reward: float) -> None:
    assert _Always(0).parse(out) == reward
    assert parse_reward_text(out) == reward


def test_clamp_reward() -> None:
    assert clamp_reward("0.5") == 0.5
    assert clamp_reward(None) == 0.0
    assert clamp_reward(float("inf")) == 1.0


def test_frames_need_the_right_nonce_and_the_last_one_wins() -> None:
    out = (
        "__COLLIMATE_VERDICT__abc hello\n"
        '__COLLIMATE_VERDICT__abc {"reward": 0.25}\n'
        '__COLLIMATE_VERDICT__forged {"reward": 1.0}\n'
        '__COLLIMATE_VERDICT__abc {"reward": 0.5}\n'
        "__COLLIMATE_VERDICT__abc not a dict\n"
        "noise\n"
    )
    frames = read_frames(out, "abc")
    assert frames.started and frames.verdict == {"reward": 0.5}
    assert not read_frames("nothing here", "abc").started


def test_the_guest_writes_json_the_sdk_reads() -> None:
    from collimate_rl.rewards.guest_runtime import _verdict_json, to_json

    data: dict[Any, Any] = {
        "reward": 0.5,
        "s": 'quote" back\\ nl\n tab\t nul\x00 é \u2603',
        "n": [1, -2, 3.25, None, True, False, (4, 5)],
        "odd": float("inf"),
        "obj": object,
    }
    # by hand (a guest without json), and by json where the guest has it
    for text in (to_json(data), _verdict_json(data), _verdict_json({**data, 1: "int key"})):
        back = json.loads(text)
        assert back["s"] == data["s"] and back["n"] == [1, -2, 3.25, None, True, False, [4, 5]]
        assert back["odd"] == float("inf") and back["obj"] == repr(object)
        assert "\n" not in text  # one frame line
    assert json.loads(_verdict_json({(1, 2): "tuple key"})) == {"(1, 2)": "tuple key"}


def test_py_literal_round_trips_json_like_data() -> None:
    data = {"a": [1, 2.5, None, True, "x'\"\n"], "b": (1,), "c": float("inf")}
    assert eval(py_literal(data)) == data
    assert py_literal(float("nan")) == "float('nan')"
    # a flat dict of plain values takes the quick road, and lands on the same
    flat = {"nonce": "ab", "size": 3, "ok": True, "none": None, "raw": b"\x00'"}
    assert eval(py_literal(flat)) == flat
    assert eval(py_literal({"x": float("inf"), "y": [float("-inf")]})) == {
        "x": float("inf"),
        "y": [float("-inf")],
    }
    with pytest.raises(TypeError):
        py_literal({"a": object()})


def test_each_kind_ships_only_its_own_code() -> None:
    prop, unit, stdio = (runtime_source(k) for k in ("property", "unit", "stdio"))
    assert "_grade_property" in prop and "_grade_stdio" not in prop
    assert "_grade_unit" in unit and "same_tokens" not in unit
    assert "same_tokens" in stdio and "_grade_unit" not in stdio
    for src in (prop, unit, stdio):
        assert "__future__" not in src and '"""' not in src
        compile(src, "<runtime>", "exec")


# -- the grader program, run by a local interpreter ----------------------------


def test_build_and_parse_standalone() -> None:
    """``build(path)`` + ``parse(stdout)`` work without grade() (seed API)."""
    spec = UnitTestReward([{"input": [1, 2], "output": 3}])
    path = f"/tmp/collimate-test-{secrets.token_hex(6)}.py"
    with open(path, "w") as fh:
        fh.write("def solve(a, b):\n    return a + b\n")
    try:
        proc = subprocess.run(  # (the program on stdin: too long for one argv string)
            [sys.executable, "-"],
            input=spec.build(path),
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        if os.path.exists(path):
            os.unlink(path)
    assert spec.parse(proc.stdout + "trailing noise\n") == 1.0


def test_unit_rewards_locally() -> None:
    spec = UnitTestReward(
        [
            {"input": [1, 2], "output": 3},
            {"input": [2, 2], "output": 4},
            {"input": [0, 5], "output": 5},
        ]
    )
    assert run_locally(spec, "def solve(a, b): return a + b")[0].reward == 1.0
    partial, _ = run_locally(spec, "def solve(a, b): return 3 if a == 1 else a - b")
    assert partial.reward == pytest.approx(1 / 3)
    assert partial.detail["passed"] == 1 and partial.detail["total"] == 3
    assert [f["index"] for f in partial.detail["failed"]] == [1, 2]
    assert partial.detail["failed_indices"] == [1, 2]
    assert run_locally(spec, "def solve(a, b): return None")[0].reward == 0.0


def test_property_reward_draws_reproduce_the_earlier_release() -> None:
    # collimate-rl==0.5.0 scored this candidate 0.0625 with seed "ab"*32.
    wrong = "def solve(x):\n    return sum(c in 'aeiou' for c in x)\n"
    assert run_locally(VOWELS, wrong)[0].reward == 0.0625
    assert run_locally(VOWELS, RIGHT_VOWELS)[0].reward == 1.0


def test_a_candidate_using_random_cannot_shift_its_inputs() -> None:
    noisy = (
        "import random\nrandom.seed(12345)\n"
        "def solve(x):\n    random.random()\n    return sum(c in 'aeiou' for c in x)\n"
    )
    assert (
        run_locally(VOWELS, noisy)[0].detail
        == run_locally(VOWELS, noisy.replace("random.seed(12345)", "random.seed(999)"))[0].detail
    )


def test_an_always_equal_object_scores_nothing() -> None:
    hack = "class E:\n    def __eq__(self, o): return True\ndef solve(*a): return E()\n"
    outcome, _ = run_locally(UnitTestReward([{"input": [1], "output": 1}]), hack)
    assert outcome.reward == 0.0 and outcome.verdict == "failed"


def test_stdio_reward_locally() -> None:
    spec = StdioReward(
        [
            {"input": "1 2\n", "output": "3\n"},
            {"input": "5 5", "output": "10"},
            {"input": "1 3", "output": "0.333333"},
        ]
    )
    sol = (
        "import sys\na, b = map(int, sys.stdin.read().split())\n"
        "print(a + b if (a, b) != (1, 3) else 1 / 3)\n"
    )
    assert run_locally(spec, sol)[0].reward == 1.0
    via_fd = (
        "import os\na, b = map(int, open(0).read().split())\nos.write(1, b'%d  \\n\\n' % (a + b))\n"
    )
    outcome, _ = run_locally(spec, via_fd)
    assert outcome.reward == pytest.approx(2 / 3)
    assert outcome.detail["failed"][0]["index"] == 2


def test_program_forms_and_how_the_runtime_was_loaded() -> None:
    for form, preload, how in [
        ("full", False, "bytecode"),
        ("lean", False, "bytecode"),
        ("full", True, "preloaded"),
        ("preloaded", True, "preloaded"),
        ("source", False, "source"),
    ]:
        outcome, _ = run_locally(VOWELS, RIGHT_VOWELS, form=form, preload=preload)
        assert outcome.reward == 1.0, (form, outcome)
        assert outcome.detail.get("runtime", "source") == how, (form, outcome.detail)
    sizes = {
        f: len(VOWELS.program(replace(candidate_context("x", "n", 30), form=f)))
        for f in ("full", "lean", "preloaded")
    }
    assert sizes["preloaded"] < 2000 < sizes["lean"] < sizes["full"]


def test_a_form_the_guest_cannot_use_asks_for_the_full_program() -> None:
    from collimate_rl.rewards.verdict import asked_for_full

    for form in ("preloaded", "lean"):
        if form == "lean":
            other = next(iter(_other_pythons()), None)
            if other is None:
                continue
            _, out = run_locally(VOWELS, RIGHT_VOWELS, form=form, python=other)
        else:
            _, out = run_locally(VOWELS, RIGHT_VOWELS, form=form)  # nothing preloaded
        nonce = out.split("__COLLIMATE_VERDICT__", 1)[1].split(" ", 1)[0]
        assert asked_for_full(out, nonce), out


def test_the_grader_parts_join_without_shadowing() -> None:
    """Joined, the parts share one namespace: a name two parts define would
    silently replace the other's."""
    import ast

    from collimate_rl.guest import grader

    seen: dict[str, str] = {}
    folder = Path(grader.__file__).parent.parent
    for part in grader.PARTS:
        tree = ast.parse((folder / f"{part}.py").read_text(encoding="utf-8"))
        for node in tree.body:
            names = [getattr(node, "name", None)]
            if isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            for name in names:
                if name is None or name == "TYPE_CHECKING":
                    continue
                assert name not in seen, f"{name} is defined by {seen[name]} and {part}"
                seen[name] = part
    # and the joined program defines every one of them
    joined = runtime_source(None, packed=True)
    assert all(f"def {n}(" in joined or f"class {n}" in joined or f"{n} =" in joined for n in seen)


def test_the_source_fallback_runs_on_another_python_version() -> None:
    """Bytecode only loads under the interpreter that wrote it: any other
    version compiles the shipped source instead."""
    other = next(iter(_other_pythons()), None)
    if other is None:
        pytest.skip(reason="no second working CPython version on this machine")
    outcome, _ = run_locally(VOWELS, RIGHT_VOWELS, python=other)
    assert outcome.reward == 1.0, outcome
    assert outcome.detail["runtime"] == "source"


def _other_pythons() -> list[str]:
    """Interpreters of another minor version that actually run here."""
    from collimate_rl.testing.procs import working_pythons

    return [exe for version, exe in working_pythons().items() if version != sys.version_info[:2]]


def test_programs_and_verdicts_are_built_and_read_safely_from_many_threads() -> None:
    """CPython 3.11's ``ast`` breaks when two threads use it at once, and a
    threaded grade_batch builds its first programs and reads every verdict
    concurrently: both go through a lock."""
    import threading

    from collimate_rl.rewards import program

    with program._BUILD_LOCK:  # (the built set and its cache go together)
        program._runtime_source.cache_clear()
        program._BLOCKS.clear()
    failed = [{"index": i, "reason": "wrong_answer", "message": "x" * 50} for i in range(10)]
    verdict_line = "__COLLIMATE_VERDICT__n " + json.dumps({"reward": 0.5, "failed": failed}) + "\n"
    errors: list[BaseException] = []
    start = threading.Barrier(16)

    def work(i: int) -> None:
        try:
            start.wait()
            kind = ("unit", "property", "stdio")[i % 3]
            program.guest_program({"kind": kind, "marker": "m", "nonce": str(i)}, form="lean")
            for _ in range(50):
                assert read_frames(verdict_line, "n").verdict is not None
        except BaseException as exc:
            errors.append(exc)

    import gc
    import time

    def yield_gil(phase: str, info: dict[str, int]) -> None:
        time.sleep(0)  # a collection inside ast's C code now lets another thread in

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    thresholds = gc.get_threshold()
    gc.set_threshold(50)
    gc.callbacks.append(yield_gil)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.callbacks.remove(yield_gil)
        gc.set_threshold(*thresholds)
    assert errors == []


def test_a_standard_module_the_guest_cannot_read_is_an_environment_fault(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the candidate's process (the worker) claims about an import that
    failed; the grader believes it only when it sees the same (next test)."""
    from collimate_rl.guest.grader import candidate as worker

    missing = ModuleNotFoundError("No module named 'heapq'", name="heapq")
    assert worker._w_fault(missing)[0] == "error"  # this machine reads its stdlib
    monkeypatch.setattr(worker.os, "access", lambda path, mode: False)  # a guest that cannot
    reason, message = worker._w_fault(missing)
    assert reason == "environment" and "heapq" in message
    assert worker._w_fault(ModuleNotFoundError("x", name="numpy"))[0] == "error"
    assert worker._w_fault(ImportError("x", name="heapq"))[0] == "error"


def test_a_broken_guest_is_believed_only_when_the_grader_sees_it_too() -> None:
    from collimate_rl.rewards.guest_runtime import _Budget, _Results

    def claimed() -> _Results:
        results = _Results()
        results.load = "environment: no stdlib"
        results.checks = {0: ("environment", "no stdlib"), 1: ("ok", 2)}
        return results

    budget = _Budget({"budget": 5}, 0.0)
    healthy = claimed()
    healthy.vouch(budget)  # this machine reads its stdlib: a false claim
    assert healthy.load == "error: no stdlib"
    assert healthy.checks == {0: ("error", "no stdlib"), 1: ("ok", 2)}
    budget._access = lambda path, mode: False  # a guest that truly cannot
    broken = claimed()
    broken.vouch(budget)
    assert broken.load == "environment: no stdlib"
    assert broken.checks[0] == ("environment", "no stdlib")


def test_a_missing_platform_module_stays_the_candidates_fault() -> None:
    spec = UnitTestReward([{"input": [1], "output": 1}])
    outcome, _ = run_locally(spec, "import msvcrt\ndef solve(x):\n    return x\n")
    assert outcome.verdict == "failed" and "msvcrt" in outcome.detail["load_error"]
    faked = "def solve(x):\n    raise ModuleNotFoundError('fake', name='heapq')\n"
    outcome, _ = run_locally(spec, faked)  # a candidate cannot fake an infra error
    assert outcome.verdict == "failed" and outcome.detail["failed"][0]["reason"] == "error"


def test_a_new_plugin_manager_never_gets_an_old_ones_registry() -> None:
    """The registry cache is per manager object: one built later at the
    same address (ids are reused) with as many plugins builds its own."""
    from collimate_rl.rewards.registry import reward_kind_registry

    for _ in range(20):  # freed managers' addresses come back quickly
        first = new_plugin_manager(load_entrypoints=False)
        first.register(_KindsPlugin(), name="test-kinds")
        assert "always" in reward_kind_registry(first)
        del first
        second = new_plugin_manager(load_entrypoints=False)

        class Other:
            @hookimpl
            def collimate_rl_reward_kinds(self) -> Mapping[str, Any]:
                return {"other": lambda gt, entry: _Always(0.0)}

        second.register(Other(), name="other")
        kinds = reward_kind_registry(second)
        assert "other" in kinds and "always" not in kinds
