"""What a grade needs from one slime ``Sample``: its spec, its code, its seed.

slime's ``Sample`` is a dataclass of slime's own (``slime.utils.types``);
this module never imports it and reads only plain attributes:
``label`` (the ground truth), ``response`` (the model's text),
``metadata`` (a dict), ``prompt``, ``index`` and ``group_index``.

* The ground truth is ``sample.label``, in any shape a registered reward
  kind accepts (core's ``reward_spec_from_ground_truth``: unit tests, MBPP
  asserts, APPS ``input_output``, LiveCodeBench tests, ...), or a JSON
  string of one (slime's ``--label-key`` column is often a string).
* The code is :func:`~collimate_rl.extract_code` of ``sample.response``
  for the spec's entry point: reasoning in ``<think>`` is dropped and the
  last fenced block defining the entry wins. Nothing else of the sample
  reaches the sandbox, and the ground truth reaches only the grader.
* The CRN seed is shared by a prompt's group. Its key is the first of
  ``metadata["crn_seed"]`` (a seed, used as is), ``metadata["crn_key"]``,
  ``metadata["uid"]``, ``sample.group_index`` (slime numbers each prompt
  group of a run), and the prompt itself.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

from collimate_rl import RewardSpec, extract_code, reward_spec_from_ground_truth
from collimate_rl.seeds import DET_SEED, is_valid_seed, seed_from_key

from .config import SlimeConfig

__all__ = ["code_of", "crn_key", "describe", "metadata_of", "seed_of", "spec_of"]

#: Specs kept for reuse (a GRPO group shares one label; building a spec
#: parses and checks the whole ground truth).
_SPEC_CACHE_SIZE: Final = 4096


def describe(sample: Any) -> str:
    """How an error message names a sample."""
    parts = [
        f"{name}={getattr(sample, name)}"
        for name in ("index", "group_index")
        if getattr(sample, name, None) is not None
    ]
    return f"sample ({', '.join(parts)})" if parts else "sample"


def metadata_of(sample: Any) -> Mapping[str, Any]:
    """``sample.metadata`` when it is a mapping (slime's default is ``{}``)."""
    meta = getattr(sample, "metadata", None)
    return meta if isinstance(meta, Mapping) else {}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


class _SpecCache:
    """Specs by (ground truth, entry), least recently used dropped first;
    shared by every event loop and thread of the process."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._specs: OrderedDict[tuple[str, str], RewardSpec] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, label: Any, entry: str) -> RewardSpec:
        key = (label if isinstance(label, str) else _canonical(label), entry)
        with self._lock:
            spec = self._specs.get(key)
            if spec is not None:
                self._specs.move_to_end(key)
                return spec
        spec = reward_spec_from_ground_truth(label, entry)
        with self._lock:
            self._specs[key] = spec
            while len(self._specs) > self._size:
                self._specs.popitem(last=False)
        return spec

    def clear(self) -> None:
        with self._lock:
            self._specs.clear()


_specs = _SpecCache(_SPEC_CACHE_SIZE)


def spec_of(sample: Any, config: SlimeConfig) -> RewardSpec:
    """The reward spec of ``sample.label``; ``ValueError`` names the sample."""
    label = getattr(sample, "label", None)
    if label is None:
        raise ValueError(
            f"{describe(sample)} has no label: slime fills sample.label from the dataset's "
            "--label-key column, which must hold the ground truth (tests) to grade against"
        )
    if isinstance(label, RewardSpec):
        return label
    try:
        return _specs.get(label, config.entry)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{describe(sample)}: sample.label is not a ground truth: {exc}") from exc


def code_of(sample: Any, spec: RewardSpec, config: SlimeConfig) -> str:
    """The program to grade: the code in ``sample.response`` (the fenced
    block that defines the spec's entry point, else ``collimate_entry``)."""
    response = getattr(sample, "response", "")
    if response is None:
        response = ""
    if not isinstance(response, str):
        raise TypeError(
            f"{describe(sample)}: sample.response must be a string, got {type(response).__name__}"
        )
    entry = getattr(spec, "entry", None)
    return extract_code(response, entry if isinstance(entry, str) else config.entry)


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
