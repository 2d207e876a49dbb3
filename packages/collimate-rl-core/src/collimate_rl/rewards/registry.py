"""``reward_spec_from_ground_truth``: dataset ground truth -> a RewardSpec.

Kinds live in a registry that plugins fill through the
``collimate_rl_reward_kinds`` hook; the built-in kinds are registered through
that same hook (:mod:`.builtin_kinds`), so a third-party kind is resolved
exactly like ``unit_test``. A ground truth names its kind under ``"kind"``;
without one, the kind is inferred from the shape (the earlier release's
shapes, plus the APPS/TACO ``input_output`` form):

========================================================  =============
shape                                                      kind
========================================================  =============
``[{"input": args, "output": expected}, ...]``             ``unit_test``
``{"tests": [...], "entry"?: name}``                       ``unit_test``
``{"reference": body, "generator": expr, "k"?: n}``        ``property``
``{"fn_name": f, "inputs": [...], "outputs": [...]}``      ``call``
``{"inputs": [str], "outputs": [str]}``                    ``stdio``
``{"input_output": "<json of either of the above>"}``      (unwrapped)
HumanEval's raw ``test`` source (with ``entry``)           ``assert``
KodCode's raw ``test`` source                              ``pytest``
assert statements as one source string                     ``assert``
``["assert f(1) == 2", ...]``, ``{"test_list": [...]}``    ``assert``
``{"test_cases": ["assert ...", ...]}`` (AceCoder)         ``assert``
``{"test": "def check(candidate): ...", "entry_point"}``   ``assert``
``{"test": "from solution import f ..."}`` (KodCode)       ``pytest``
``[{"input", "output", "testtype": "functional"}]``        ``call``
``[{"input", "output", "testtype": "stdin"}]``             ``stdin_stdout``
``{"language", "test_cases": [{"input", "output"}]}``      ``stdin_stdout``
``{"official_tests", "generated_checker", ...}`` (open-r1)  ``stdin_stdout``
``{"tests": "<test program>", "language": "cpp", ...}``     ``program``
========================================================  =============

A JSON string of any of these is decoded first; a ``RewardSpec`` passes
through unchanged. Values come as dataset libraries give them: keys whose
value is ``None`` count as absent (Arrow fills a struct column's missing keys
with ``None``), numpy arrays and tuples as lists (:mod:`.normalize`).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping
from typing import Any

import pluggy

from ..plugins.events import RewardFactory
from .appended_tests import program_language
from .dataset_rows import dataset_ground_truth
from .extract import prompt_code
from .normalize import normalize_value
from .source_truths import ACCEPTED_SHAPES, ground_truth_from_source
from .spec import RewardSpec

__all__ = ["infer_kind", "reward_kind_registry", "reward_spec_from_ground_truth"]

# Per manager (held weakly: a key by id() could be reused by a later manager
# at the same address and hand it a stale registry), for the set of plugins
# registered when it was built (live plugins have distinct ids).
_cache: weakref.WeakKeyDictionary[
    pluggy.PluginManager, tuple[frozenset[int], dict[str, RewardFactory]]
] = weakref.WeakKeyDictionary()


def reward_kind_registry(pm: pluggy.PluginManager | None = None) -> dict[str, RewardFactory]:
    """Every registered reward kind, merged across plugins (a name claimed
    twice raises, naming both plugins). Cached per manager and plugin set."""
    from ..plugins.manager import get_plugin_manager
    from ..plugins.registry import reward_kinds

    manager = pm if pm is not None else get_plugin_manager()
    stamp = frozenset(id(plugin) for plugin in manager.get_plugins())
    cached = _cache.get(manager)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    kinds = reward_kinds(manager)
    _cache[manager] = (stamp, kinds)
    return kinds


def _decode(ground_truth: Any) -> Any:
    """A ground truth as plain data: a JSON string decoded, a recognised
    source string (:mod:`.source_truths`) as its object, dataset-library
    values made plain (:func:`.normalize.normalize_value`)."""
    ground_truth = normalize_value(ground_truth)
    if isinstance(ground_truth, (bytes, bytearray)):
        ground_truth = ground_truth.decode("utf-8")
    if isinstance(ground_truth, str):
        try:
            decoded = json.loads(ground_truth)
        except ValueError as exc:
            from_source = ground_truth_from_source(ground_truth)
            if from_source is None:
                raise ValueError(
                    f"ground_truth is a string but not JSON ({exc}), nor test source "
                    f"this grader recognises; a string ground truth may be {ACCEPTED_SHAPES}; "
                    f"got {ground_truth!r:.120}"
                ) from exc
            return from_source
        return normalize_value(decoded)
    return ground_truth


def _testtype_kind(tests: Any) -> str | None:
    """LiveCodeBench / DeepCoder tests name their type: ``functional`` is
    call-based, ``stdin`` is a program on stdin."""
    if isinstance(tests, str):
        try:
            tests = json.loads(tests)
        except ValueError:
            return None
    if isinstance(tests, (list, tuple)) and tests and isinstance(tests[0], Mapping):
        kind = tests[0].get("testtype")
        if kind == "functional":
            return "call"
        if kind in ("stdin", "stdin_stdout"):
            return "stdin_stdout"
    return None


def _all_str(value: Any) -> bool:
    return (
        isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, str) for v in value)
    )


def infer_kind(ground_truth: Any) -> str:
    """The kind a ground truth without ``"kind"`` describes (see the table)."""
    gt = ground_truth
    if isinstance(gt, (list, tuple)):
        if _all_str(gt):
            return "assert"
        return _testtype_kind(gt) or "unit_test"
    if isinstance(gt, Mapping):
        if "reference" in gt and "generator" in gt:
            return "property"
        if isinstance(gt.get("tests"), str) and program_language(gt.get("language")):
            return "program"  # MultiPL-E, HumanEval-X, MBXP
        if "test_list" in gt:
            return "assert"
        if "test_cases" in gt:
            if _all_str(gt["test_cases"]):
                return "assert"
            return "stdin_stdout"
        if "official_tests" in gt:  # open-r1's Codeforces rows
            return "stdin_stdout"
        if isinstance(gt.get("test"), str):
            return "assert" if "def check" in gt["test"] else "pytest"
        if isinstance(gt.get("check"), str):
            return "assert"
        for key in ("tests", "public_test_cases", "private_test_cases"):
            if key in gt:
                if key == "tests" and _all_str(gt[key]):
                    return "assert"
                found = _testtype_kind(gt[key])
                if found is not None:
                    return found
                if key == "tests":
                    return "unit_test"
        if "inputs" in gt and "outputs" in gt:
            return "call" if gt.get("fn_name") else "stdio"
    raise ValueError(
        "ground_truth must be a list of unit tests or assert statements, an object with "
        "'reference' and 'generator' (property), MBPP/AceCoder asserts ('test_list', "
        "'test_cases'), a HumanEval 'test' with check(), a KodCode pytest 'test', APPS "
        "'inputs'/'outputs' (with 'fn_name': call-based), LiveCodeBench tests with "
        "'testtype', open-r1 'test_cases', or name its 'kind'; got "
        f"{type(ground_truth).__name__}: {ground_truth!r:.120}"
    )


def reward_spec_from_ground_truth(
    ground_truth: Any,
    entry: str = "solve",
    *,
    prompt: Any = None,
    pm: pluggy.PluginManager | None = None,
) -> RewardSpec:
    """The :class:`RewardSpec` a dataset row's ground truth describes.

    The ground truth may come as ``datasets`` loads it (keys filled with
    ``None`` by Arrow's struct unification are absent; numpy arrays are
    lists). ``prompt`` is the row's prompt (text or a conversation); when
    its code defines ``entry`` (HumanEval, MultiPL-E), the grader runs it
    before assert and check tests, so the helper functions and imports the
    tests use are the dataset's, whatever the candidate redefines.
    """
    if isinstance(ground_truth, RewardSpec):
        return ground_truth
    gt = _decode(ground_truth)
    if isinstance(gt, Mapping) and isinstance(gt.get("input_output"), (str, Mapping)):
        inner = _decode(gt["input_output"])
        if isinstance(inner, Mapping):
            gt = {**{k: v for k, v in gt.items() if k != "input_output"}, **inner}
    if isinstance(gt, Mapping) and gt.get("kind") is None:
        # a whole MultiPL-E / HumanEval-X / MBXP / CodeContests row as the ground truth
        gt = dataset_ground_truth(gt) or gt
    if isinstance(gt, Mapping) and gt.get("kind") is not None:
        kind = str(gt["kind"])
    else:
        kind = infer_kind(gt)
    code = prompt_code(prompt, entry) if prompt is not None else None
    if code is not None and kind == "assert":
        gt = {"tests": list(gt)} if isinstance(gt, list) else dict(gt)
        if prompt_code(gt.get("prompt"), entry) is None:  # (a row's own code prompt stays)
            gt["prompt"] = code
    kinds = reward_kind_registry(pm)
    factory = kinds.get(kind)
    if factory is None:
        raise ValueError(
            f"unknown reward kind {kind!r}; registered kinds: {', '.join(sorted(kinds))} "
            f"(a plugin adds kinds through the collimate_rl_reward_kinds hook)"
        )
    try:
        spec = factory(gt, entry)
    except KeyError as exc:  # a kind's required key is missing: say which
        raise ValueError(
            f"{kind} ground truth lacks the key {exc.args[0]!r} (got keys: "
            f"{', '.join(map(repr, gt)) if isinstance(gt, Mapping) else type(gt).__name__})"
        ) from None
    if not isinstance(spec, RewardSpec):
        raise TypeError(
            f"the factory of reward kind {kind!r} returned {type(spec).__name__}, not a RewardSpec"
        )
    return spec
