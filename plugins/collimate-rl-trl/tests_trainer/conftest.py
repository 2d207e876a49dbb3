"""TRL's real ``GRPOTrainer`` (with torch) driving the plugin's tools.

These tests need TRL, transformers and a CPU torch installed, which no
other environment of the workspace has: they run in the hatch environment
``trl-trainer`` (``hatch run trl-trainer:test``), which sets
``COLLIMATE_TRL_TRAINER_TESTS=1``. Elsewhere (``hatch test`` walks every
plugin's folders) this folder is not collected at all, rather than
reported as skipped tests; with the variable set and TRL missing, they fail.

Nothing comes from the Hugging Face Hub: the model is a tiny random Qwen2
built from a config, the tokenizer a byte-level BPE trained here on a few
conversations, carrying TRL's own Qwen2.5 chat template (so TRL's own
response parser reads the tool calls). Generation is scripted (a subclass
replaces ``_generate_single_turn``, the one method that runs the model to
sample); everything around it is TRL's: the environment pool and
``reset``, the tool schemas, parsing the tool calls, the tool-call loop,
the reward call with ``environments=``, ``get_reward``, the advantages and
one optimizer step.
"""

from __future__ import annotations

import os

from collimate_rl.testing.fixtures import backend, target

__all__ = ["backend", "target"]

if os.environ.get("COLLIMATE_TRL_TRAINER_TESTS") != "1":
    collect_ignore_glob = ["test_*.py"]
