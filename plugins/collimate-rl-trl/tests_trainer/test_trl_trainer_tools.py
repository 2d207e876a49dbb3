"""TRL's own ``GRPOTrainer`` runs a training step whose rollouts call our
tools (see ``conftest.py`` for what is real and what is scripted):
``environment_factory=CodeEnvironment`` (one interpreter per rollout, state
kept across a rollout's calls, rollouts isolated, ``get_reward`` graded,
an infrastructure failure left out) and ``tools=[python]``."""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers
import trl
from datasets import Dataset
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from transformers.utils import get_json_schema
from trl import GRPOConfig, GRPOTrainer

from collimate_rl import CollimateError, connect
from collimate_rl.trl import CodeEnvironment, CollimateReward, python_tool

MBPP = {"test_list": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]}
RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
#: code carrying this marker makes the fault-injecting client fail the exec
FAULT = "# FAULT: the sandbox is lost here"


def call(name: str, **arguments: str) -> str:
    """One tool call as Qwen2.5 writes it."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def final(code: str) -> str:
    return f"Final answer:\n```python\n{code}```"


#: Each rollout's assistant turns (rollout = task + generation number); a
#: rollout's first call names it, which is how later turns find their script.
ENV_SCRIPTS: dict[str, list[str]] = {
    "A0": [
        call("python", code="# rollout A0\nimport math\nx = 41"),
        call("python", code="print(x + 1, math.factorial(3))"),
        call("submit", code=RIGHT),
        final(RIGHT),
    ],
    "A1": [
        call("python", code="# rollout A1\nprint('x' in dir())"),
        call("submit", code=WRONG),
        final(WRONG),
    ],
    "B0": [
        call("python", code="# rollout B0\ny = 1"),
        call("python", code=f"{FAULT}\nprint(y)"),
        call("submit", code=RIGHT),
        final(RIGHT),
    ],
    "B1": [
        call("python", code="# rollout B1\nprint(2 + 2)"),
        call("submit", code=RIGHT),
        final(RIGHT),
    ],
}

PLAIN_SCRIPTS: dict[str, list[str]] = {
    "A0": [
        call("python", code="# rollout A0\nx = 5\nprint(x * 2)"),
        call("python", code="x"),
        final(RIGHT),
    ],
    "A1": [call("python", code="# rollout A1\nprint(7)"), final(WRONG)],
    "B0": [call("python", code="# rollout B0\nprint(3)"), final(RIGHT)],
    "B1": [call("python", code="# rollout B1\nprint(4)"), final(RIGHT)],
}


def rows() -> list[dict[str, Any]]:
    return [
        {
            "prompt": [{"role": "user", "content": f"Task {task}: write add(a, b)."}],
            "ground_truth": MBPP,
            "task_id": task,
        }
        for task in ("A", "B")
    ]


# -- a tokenizer and a model, made here ---------------------------------------


def _tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE (lossless on any text) with Qwen's special tokens and
    TRL's own Qwen2.5 chat template, trained on a few conversations."""
    template = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    corpus = [turn for script in ENV_SCRIPTS.values() for turn in script]
    corpus += [json.dumps(get_json_schema(python_tool()))] * 3
    bpe.train_from_iterator(
        corpus * 4,
        trainers.BpeTrainer(
            vocab_size=800,
            special_tokens=special,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
    )
    tokenizer.chat_template = template
    return tokenizer


def _model(tokenizer: PreTrainedTokenizerFast) -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return Qwen2ForCausalLM(config)


# -- fault injection: a client that loses the sandbox on a marked cell --------


#: base64 in an exec's command: how core's kernel hands a cell to the sandbox
_UPLOADED = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")


class FaultyClient:
    """The real blocking client, but the exec that runs a cell carrying
    :data:`FAULT` fails as a lost sandbox would (fault injection)."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.faults = 0

    def session_exec(self, session_id: str, **kwargs: Any) -> Any:
        # (a kernel's cell travels base64-encoded in a command or, once the
        # kernel is reached by code execs, in Python code)
        sent = f"{kwargs.get('command', '')} {kwargs.get('code', '')}"
        for chunk in _UPLOADED.findall(sent):
            try:
                decoded = base64.b64decode(chunk + "=" * (-len(chunk) % 4))
            except binascii.Error:
                continue
            if FAULT.encode() in decoded:
                self.faults += 1
                raise CollimateError(f"injected: sandbox {session_id} lost")
        return self._real.session_exec(session_id, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


# -- the trainer, with scripted generation -------------------------------------


class ScriptedTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose sampling is scripted: each rollout writes its
    script's next assistant turn. Records what TRL handed the reward
    functions (``_calculate_rewards`` is TRL's own, called through)."""

    scripts: dict[str, list[str]] = {}

    def _generate_single_turn(  # type: ignore[override]
        self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False
    ):
        out = []
        for position, ids in enumerate(prompt_ids):
            text = self.processing_class.decode(ids)
            task = re.search(r"Task (\w):", text).group(1)  # type: ignore[union-attr]
            named = re.search(r"# rollout (\w\d)", text)
            rollout = named.group(1) if named else f"{task}{position % self.num_generations}"
            turn = text.count("<|im_start|>assistant") - 1
            reply = self.scripts[rollout][turn] + "<|im_end|>"
            out.append(self.processing_class.encode(reply, add_special_tokens=False))
        return out, None

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self.seen = {
            "rollouts": [_rollout_name(c) for c in completions],
            "completions": completions,
            "environments": list(self.environments or []),
            "rewards": rewards.tolist(),
            "names": list(self.reward_func_names),
        }
        return rewards


def _rollout_name(completion: list[dict[str, Any]]) -> str:
    for message in completion:
        for tool_call in message.get("tool_calls") or []:
            found = re.search(r"# rollout (\w\d)", json.dumps(tool_call))
            if found:
                return found.group(1)
    raise AssertionError(f"no rollout marker in {completion!r:.300}")


def _config(tmp_path: Path) -> GRPOConfig:
    return GRPOConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        report_to="none",
        max_steps=1,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=2048,
        shuffle_dataset=False,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return _tokenizer()


@pytest.fixture
def run(
    tmp_path: Path, tokenizer: PreTrainedTokenizerFast
) -> Iterator[Callable[..., ScriptedTrainer]]:
    made: list[ScriptedTrainer] = []

    def train(scripts: dict[str, list[str]], **kwargs: Any) -> ScriptedTrainer:
        ScriptedTrainer.scripts = scripts
        trainer = ScriptedTrainer(
            model=_model(tokenizer),
            args=_config(tmp_path),
            train_dataset=Dataset.from_list(rows()),
            processing_class=tokenizer,
            **kwargs,
        )
        made.append(trainer)
        trainer.train()
        return trainer

    yield train
    for trainer in made:
        for env in getattr(trainer, "_environment_pool", {}).get(None, []):
            env._close()


def _tool_results(completion: list[dict[str, Any]]) -> list[Any]:
    return [m["content"] for m in completion if m["role"] == "tool"]


def test_the_versions_are_the_ones_asked_for() -> None:
    assert trl.__version__ == "1.16.0"
    assert transformers.__version__.startswith("5.")
    assert torch.__version__.startswith("2.13.0") and torch.version.cuda is None  # the CPU build


def test_environment_factory_one_interpreter_per_rollout_graded_and_infra_left_out(
    run: Callable[..., ScriptedTrainer], backend: Any
) -> None:
    client = FaultyClient(connect(base_url=backend.base_url))

    def factory() -> CodeEnvironment:
        return CodeEnvironment(client=client)

    reward = CollimateReward(client=None, base_url=backend.base_url)
    trainer = run(ENV_SCRIPTS, reward_funcs=[reward], environment_factory=factory)
    seen = trainer.seen

    # TRL made the tools from the class: python and submit, schemas from the docstrings
    assert sorted(t.__name__ for t in trainer.tools) == ["python", "submit"]
    assert seen["names"] == ["collimate", "CodeEnvironment"]

    by_name = dict(zip(seen["rollouts"], range(4), strict=True))
    assert sorted(by_name) == ["A0", "A1", "B0", "B1"]
    envs = seen["environments"]
    assert len({id(e) for e in envs}) == 4  # one environment per rollout

    results = {name: _tool_results(seen["completions"][i]) for name, i in by_name.items()}
    # state kept across one rollout's calls: A0's second cell sees its first's names
    assert results["A0"][:2] == ["(no output)", "42 6"]
    # rollouts isolated: A1 never sees A0's x
    assert results["A1"][0] == "False"
    # the infrastructure failure shown to the model as TRL shows a tool error
    assert results["B0"][0] == "(no output)"
    assert "injected: sandbox" in json.dumps(results["B0"][1]) and "error" in json.dumps(
        results["B0"][1]
    )
    assert client.faults == 1
    assert results["B1"][0] == "4"

    rewards = {name: seen["rewards"][i] for name, i in by_name.items()}
    # columns: CollimateReward on the final message, then get_reward on the submission
    assert rewards["A0"] == [1.0, 1.0]
    assert rewards["A1"] == [0.0, 0.0]
    assert rewards["B1"] == [1.0, 1.0]
    assert all(math.isnan(r) for r in rewards["B0"])  # left out by both, never 0.0
    assert envs[by_name["B0"]].infra_error and envs[by_name["A0"]].infra_error is None
    assert envs[by_name["A0"]].reason.startswith("passed")
    # every rollout's interpreter closed once it was graded
    assert all(env._tool is None for env in envs)

    logged = trainer.state.log_history[0]
    assert math.isfinite(logged["loss"])
    assert logged["tools/failure_frequency"] == pytest.approx(1 / 10)


def test_plain_tools_a_fresh_interpreter_per_call(
    run: Callable[..., ScriptedTrainer], backend: Any
) -> None:
    tool = python_tool(base_url=backend.base_url)
    reward = CollimateReward(base_url=backend.base_url)
    trainer = run(PLAIN_SCRIPTS, reward_funcs=[reward], tools=[tool])
    seen = trainer.seen
    by_name = dict(zip(seen["rollouts"], range(4), strict=True))
    a0 = _tool_results(seen["completions"][by_name["A0"]])
    assert a0[0] == "10" and "NameError" in a0[1]  # nothing kept between calls
    assert [seen["rewards"][by_name[n]] for n in ("A0", "A1", "B0", "B1")] == [
        [1.0],
        [0.0],
        [1.0],
        [1.0],
    ]
    assert trainer.state.log_history[0]["tools/failure_frequency"] == 0.0
