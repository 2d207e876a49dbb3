"""Core's reward kinds, registered through the ``collimate_rl_reward_kinds``
hook like any third-party kind (listed in the built-in plugin modules).

Each factory takes ``(ground_truth, entry)``; ``ground_truth`` is already
decoded (see :mod:`.registry` for the accepted shapes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..plugins.events import RewardFactory
from ..plugins.markers import hookimpl
from .kinds import PropertyReward, StdioReward, UnitTestReward
from .spec import RewardSpec


def _opt(gt: Mapping[str, Any], *names: str) -> dict[str, Any]:
    return {n: gt[n] for n in names if gt.get(n) is not None}


def unit_test_kind(gt: Any, entry: str) -> RewardSpec:
    """A list of tests, ``{"tests": [...]}``, or ``{"fn_name", "inputs", "outputs"}``."""
    if isinstance(gt, (list, tuple)):
        return UnitTestReward(list(gt), entry=entry)
    if not isinstance(gt, Mapping):
        raise ValueError(f"unit_test ground truth must be a list or an object, got {gt!r:.80}")
    name = str(gt.get("entry") or gt.get("fn_name") or entry)
    if "tests" in gt:
        tests = gt["tests"]
    else:
        inputs, outputs = gt.get("inputs"), gt.get("outputs")
        if not isinstance(inputs, list) or not isinstance(outputs, list):
            raise ValueError("unit_test ground truth needs 'tests' or 'inputs' + 'outputs' lists")
        if len(inputs) != len(outputs):
            raise ValueError(f"{len(inputs)} inputs but {len(outputs)} outputs")
        # APPS/TACO call-based rows wrap a single return value in a list.
        tests = [
            {"input": i, "output": o[0] if isinstance(o, list) and len(o) == 1 else o}
            for i, o in zip(inputs, outputs, strict=True)
        ]
    return UnitTestReward(tests, entry=name, **_opt(gt, "tol", "test_timeout"))


def property_kind(gt: Any, entry: str) -> RewardSpec:
    """``{"reference", "generator", "k"?, "entry"?}``."""
    if not isinstance(gt, Mapping):
        raise ValueError("property ground truth must be an object with reference and generator")
    return PropertyReward(
        gt["reference"],
        gt["generator"],
        k=int(gt.get("k", 16)),
        entry=str(gt.get("entry") or entry),
        **_opt(gt, "tol", "test_timeout"),
    )


def stdio_kind(gt: Any, entry: str) -> RewardSpec:
    """``{"tests": [{"input", "output"}]}``, ``{"inputs": [...], "outputs": [...]}``
    or a bare list of such tests."""
    if isinstance(gt, (list, tuple)):
        return StdioReward(list(gt))
    if not isinstance(gt, Mapping):
        raise ValueError("stdio ground truth must be an object or a list of tests")
    if "tests" in gt:
        tests = gt["tests"]
    else:
        inputs, outputs = gt.get("inputs"), gt.get("outputs")
        if not isinstance(inputs, list) or not isinstance(outputs, list):
            raise ValueError("stdio ground truth needs 'tests' or 'inputs' + 'outputs' lists")
        if len(inputs) != len(outputs):
            raise ValueError(f"{len(inputs)} inputs but {len(outputs)} outputs")
        tests = [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)]
    return StdioReward(tests, **_opt(gt, "float_tol", "test_timeout"))


@hookimpl
def collimate_rl_reward_kinds() -> Mapping[str, RewardFactory]:
    return {
        "unit_test": unit_test_kind,
        "property": property_kind,
        "stdio": stdio_kind,
    }
