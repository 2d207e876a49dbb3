"""What one rollout is graded against, read from SkyRL's ``extras``.

SkyRL passes an env the dataset row minus its prompt, so the row's own
fields arrive as they are in the dataset:

* ``reward_spec.ground_truth``: in any shape a registered reward kind
  accepts (MBPP, HumanEval, KodCode, APPS/TACO, LiveCodeBench, open-r1, or
  a JSON string of one), read by core's ``reward_spec_from_ground_truth``;
* ``reward_spec.entry``: the function the tests call (default ``solve``);
* ``data_source``: carried into the step's metadata;
* the CRN group key (below).

Every rollout of one prompt must meet the same test cases under
``seed_mode: crn``, and other prompts other ones. The key of a prompt's
group is the first of these found, at the top level of the row and then
in its ``extra_info``:

* ``crn_seed``: the seed itself (64 hex characters);
* ``crn_key``, ``uid``: a key, used as is (a string) or as its JSON;
* ``index``: a row position, unique only within its dataset and split, so
  it is keyed together with ``data_source`` and ``extra_info.split``;
* none of them: the ground truth and entry (all rollouts of a prompt carry
  the same ones).

The seed is ``seed_from_key(key, salt=base_seed)``, the derivation of
``collimate grade``, so a rerun meets the same cases.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from collimate_rl import RewardSpec, reward_spec_from_ground_truth
from collimate_rl.dataset_grading.rows import canonical_json
from collimate_rl.seeds import DET_SEED, is_valid_seed, seed_from_key

from .settings import EnvSettings

__all__ = ["GROUP_FIELDS", "RowTask", "group_key", "read_task", "seed_for"]

#: Where a prompt's CRN group key is looked for, in this order.
GROUP_FIELDS: Final = ("crn_seed", "crn_key", "uid", "index")
DEFAULT_ENTRY: Final = "solve"


@dataclass(frozen=True)
class RowTask:
    """One rollout's grading task (plain values and a spec: it pickles)."""

    spec: RewardSpec
    entry: str
    data_source: str | None
    seed: str | None  #: None under ``vanilla``: the backend draws one
    group: str  #: where the seed came from, e.g. ``uid``, ``extra_info.index``


@functools.lru_cache(maxsize=4096)
def _spec(ground_truth_json: str, entry: str) -> RewardSpec:
    # 8 or 16 rollouts of a prompt carry the same ground truth: parse it once.
    return reward_spec_from_ground_truth(json.loads(ground_truth_json), entry)


def _spec_for(ground_truth: Any, entry: str) -> RewardSpec:
    try:
        key = canonical_json(ground_truth)
    except (TypeError, ValueError):  # not JSON (a RewardSpec, a custom object): no cache
        return reward_spec_from_ground_truth(ground_truth, entry)
    return _spec(key, entry)


def group_key(extras: Mapping[str, Any]) -> tuple[str, str, bool]:
    """``(where, key, is_seed)``: the CRN group of this row (see the module doc)."""
    extra_info = extras.get("extra_info")
    places: list[tuple[str, Mapping[str, Any]]] = [("", extras)]
    if isinstance(extra_info, Mapping):
        places.append(("extra_info.", extra_info))
    for name in GROUP_FIELDS:
        for prefix, place in places:
            value = place.get(name)
            if value is None:
                continue
            where = prefix + name
            if name == "crn_seed":
                if not is_valid_seed(value):
                    raise ValueError(f"extras {where} must be 64 hex characters, got {value!r:.80}")
                return where, str(value).lower(), True
            if name == "index":
                split = extra_info.get("split") if isinstance(extra_info, Mapping) else None
                return where, canonical_json([extras.get("data_source"), split, value]), False
            return where, value if isinstance(value, str) else canonical_json(value), False
    reward_spec = extras.get("reward_spec") or {}
    truth = [reward_spec.get("ground_truth"), reward_spec.get("entry")]
    try:
        return "reward_spec", canonical_json(truth), False
    except (TypeError, ValueError):
        return "reward_spec", repr(truth), False


def seed_for(settings: EnvSettings, extras: Mapping[str, Any]) -> tuple[str | None, str]:
    """``(seed, group)`` of a rollout under ``settings.seed_mode``."""
    if settings.seed_mode == "vanilla":
        return None, "vanilla"
    if settings.seed_mode == "deterministic":
        return settings.base_seed or DET_SEED, "deterministic"
    where, key, is_seed = group_key(extras)
    return (key if is_seed else seed_from_key(key, settings.base_seed or "")), where


def read_task(settings: EnvSettings, extras: Mapping[str, Any]) -> RowTask:
    """The task of one rollout; a row that cannot be graded raises ``ValueError``
    naming the field."""
    if not isinstance(extras, Mapping):
        raise ValueError(f"extras must be a mapping (the dataset row), got {type(extras).__name__}")
    reward_spec = extras.get("reward_spec")
    if not isinstance(reward_spec, Mapping) or reward_spec.get("ground_truth") is None:
        raise ValueError(
            "extras has no reward_spec.ground_truth: a collimate_code row needs "
            '"reward_spec": {"ground_truth": ...} (the tests, in any supported dataset format)'
        )
    entry = reward_spec.get("entry") or DEFAULT_ENTRY
    if not isinstance(entry, str):
        raise ValueError(f"extras reward_spec.entry must be a string, got {type(entry).__name__}")
    try:
        spec = _spec_for(reward_spec["ground_truth"], entry)
    except ValueError as exc:
        raise ValueError(f"extras reward_spec.ground_truth: {exc}") from exc
    source = extras.get("data_source")
    seed, group = seed_for(settings, extras)
    return RowTask(
        spec=spec,
        entry=entry,
        data_source=None if source is None else str(source),
        seed=seed,
        group=group,
    )
