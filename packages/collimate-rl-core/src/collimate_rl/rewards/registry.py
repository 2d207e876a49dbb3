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
``{"fn_name": f, "inputs": [...], "outputs": [...]}``      ``unit_test``
``{"inputs": [str], "outputs": [str]}``                    ``stdio``
``{"input_output": "<json of either of the above>"}``      (unwrapped)
========================================================  =============

A JSON string of any of these is decoded first; a ``RewardSpec`` passes
through unchanged.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping
from typing import Any

import pluggy

from ..plugins.events import RewardFactory
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
    from ..plugins import get_plugin_manager, reward_kinds

    manager = pm if pm is not None else get_plugin_manager()
    stamp = frozenset(id(plugin) for plugin in manager.get_plugins())
    cached = _cache.get(manager)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    kinds = reward_kinds(manager)
    _cache[manager] = (stamp, kinds)
    return kinds


def _decode(ground_truth: Any) -> Any:
    if isinstance(ground_truth, (bytes, bytearray)):
        ground_truth = ground_truth.decode("utf-8")
    if isinstance(ground_truth, str):
        try:
            return json.loads(ground_truth)
        except ValueError as exc:
            raise ValueError(
                f"ground_truth is a string but not JSON ({exc}); expected unit tests, "
                f"a property spec or an object with a 'kind'"
            ) from exc
    return ground_truth


def infer_kind(ground_truth: Any) -> str:
    """The kind a ground truth without ``"kind"`` describes (see the table)."""
    if isinstance(ground_truth, (list, tuple)):
        return "unit_test"
    if isinstance(ground_truth, Mapping):
        if "reference" in ground_truth and "generator" in ground_truth:
            return "property"
        if "tests" in ground_truth:
            return "unit_test"
        if "inputs" in ground_truth and "outputs" in ground_truth:
            return "unit_test" if ground_truth.get("fn_name") else "stdio"
    raise ValueError(
        "ground_truth must be a list of unit tests, an object with 'reference' and "
        "'generator' (property), {'inputs', 'outputs'} (stdio, or unit tests with "
        f"'fn_name'), or name its 'kind'; got {type(ground_truth).__name__}: "
        f"{ground_truth!r:.120}"
    )


def reward_spec_from_ground_truth(
    ground_truth: Any, entry: str = "solve", *, pm: pluggy.PluginManager | None = None
) -> RewardSpec:
    """The :class:`RewardSpec` a dataset row's ground truth describes."""
    if isinstance(ground_truth, RewardSpec):
        return ground_truth
    gt = _decode(ground_truth)
    if isinstance(gt, Mapping) and isinstance(gt.get("input_output"), (str, Mapping)):
        inner = _decode(gt["input_output"])
        if isinstance(inner, Mapping):
            gt = {**{k: v for k, v in gt.items() if k != "input_output"}, **inner}
    if isinstance(gt, Mapping) and gt.get("kind") is not None:
        kind = str(gt["kind"])
    else:
        kind = infer_kind(gt)
    kinds = reward_kind_registry(pm)
    factory = kinds.get(kind)
    if factory is None:
        raise ValueError(
            f"unknown reward kind {kind!r}; registered kinds: {', '.join(sorted(kinds))} "
            f"(a plugin adds kinds through the collimate_rl_reward_kinds hook)"
        )
    spec = factory(gt, entry)
    if not isinstance(spec, RewardSpec):
        raise TypeError(
            f"the factory of reward kind {kind!r} returned {type(spec).__name__}, not a RewardSpec"
        )
    return spec
