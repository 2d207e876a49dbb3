"""Fixtures of the slime plugin's tests: a stand-in for slime's ``Sample``,
a reproduction of slime's reward dispatch, rollouts of real coding tasks,
and local backends (in process, and as a process a test can kill).

slime is not on PyPI and the plugin never imports it. What the tests need of
it is copied here from slime's source, THUDM/slime at commit
624b824a898ab0ec1fcb4d373004c7f3852bf515 (2026-08-21):

* ``Sample`` (``slime/utils/types.py``): the data object, reduced to the
  fields a reward function meets; the plugin duck-types it;
* the reward dispatch of ``slime/rollout/sglang_rollout.py``
  (``generate_and_rm``, ``generate_and_rm_group``, the loop of
  ``generate_rollout_async`` with its dynamic filter) and of
  ``slime/rollout/rm_hub/__init__.py`` (``async_rm``, ``batched_async_rm``),
  with generation replaced by a test's coroutine;
* the dynamic filter's plumbing (``slime/rollout/filter_hub/base_types.py``:
  ``DynamicFilterOutput``, ``call_dynamic_filter``,
  ``should_drop_dynamic_filter_output``);
* the data source (``slime/utils/data.py``: ``read_file`` and ``Dataset``
  without a tokenizer or chat template; ``slime/rollout/data_source.py``:
  ``RolloutDataSource.get_samples``), which turns a prompt file's rows into
  groups of samples.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.slime.config import SETTINGS

# --- slime's data objects ---------------------------------------------------


@dataclass
class Sample:
    """slime's ``Sample``, reduced to what a reward function meets."""

    group_index: int | None = None
    index: int | None = None
    prompt: str | list[dict[str, str]] = ""
    response: str = ""
    response_length: int = 0
    label: Any = None  # the --label-key column, as the file holds it
    reward: float | dict[str, Any] | None = None
    loss_mask: list[int] | None = None
    remove_sample: bool = False

    class Status(Enum):
        PENDING = "pending"
        COMPLETED = "completed"
        TRUNCATED = "truncated"
        ABORTED = "aborted"
        FAILED = "failed"

    status: Status = Status.PENDING
    metadata: dict[str, Any] = field(default_factory=dict)
    custom_rm_path: str | None = None

    def get_reward_value(self, args: Any) -> float:
        return self.reward if not args.reward_key else self.reward[args.reward_key]  # type: ignore[index,return-value]


@dataclass
class DynamicFilterOutput:
    keep: bool
    reason: str | None = None
    keep_when_insufficient: bool = False


def should_drop_dynamic_filter_output(
    output: DynamicFilterOutput, *, remaining_batch_size: int, target_data_size: int
) -> bool:
    if output.keep:
        return False
    if output.keep_when_insufficient and remaining_batch_size <= target_data_size:  # noqa: SIM103
        return False
    return True


def call_dynamic_filter(fn: Any, *args: Any, **kwargs: Any) -> DynamicFilterOutput:
    if fn is None:
        return DynamicFilterOutput(keep=True)
    output = fn(*args, **kwargs)
    if not isinstance(output, DynamicFilterOutput):  # compatibility for legacy version
        output = DynamicFilterOutput(keep=output)
    return output


# --- slime's data source ------------------------------------------------------


def read_file(path: str) -> Iterator[dict[str, Any]]:
    """``slime.utils.data.read_file``: JSONL lines, or a parquet file's
    batches through ``pyarrow`` (``to_pylist``: struct columns as dicts with
    every key of the column, lists as lists)."""
    if path.endswith(".jsonl"):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line:
                    yield json.loads(line)
    elif path.endswith(".parquet"):
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches():
            yield from batch.to_pylist()
    else:
        raise ValueError(f"Unsupported file format: {path}.")


def dataset_samples(
    path: str,
    *,
    prompt_key: str = "text",
    label_key: str | None = None,
    metadata_key: str = "metadata",
) -> list[Sample]:
    """``slime.utils.data.Dataset(...).origin_samples`` with
    ``apply_chat_template=False`` and no multimodal keys: the prompt as the
    row holds it (a string, or a list of messages), the label column, the
    metadata column (``or {}``)."""
    samples = []
    for data in read_file(path):
        samples.append(
            Sample(
                prompt=data.get(prompt_key),
                label=data[label_key] if label_key is not None else None,
                metadata=data.get(metadata_key) or {},
            )
        )
    return samples


def get_samples(prompt_samples: list[Sample], n_samples_per_prompt: int) -> list[list[Sample]]:
    """``RolloutDataSource.get_samples``: each prompt's sample deep-copied
    ``n_samples_per_prompt`` times; ``group_index`` counts the run's groups
    and ``index`` its samples (neither is the dataset row)."""
    import copy

    groups, index = [], 0
    for group_index, prompt_sample in enumerate(prompt_samples):
        group = []
        for _ in range(n_samples_per_prompt):
            sample = copy.deepcopy(prompt_sample)
            sample.group_index = group_index
            sample.index = index
            index += 1
            group.append(sample)
        groups.append(group)
    return groups


# --- slime's reward dispatch --------------------------------------------------


def load_function(path: str) -> Any:
    module_path, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module_path), attr)


async def async_rm(args: Any, sample: Sample, **kwargs: Any) -> Any:
    rm_function = load_function(sample.custom_rm_path or args.custom_rm_path)
    return await rm_function(args, sample, **kwargs)


async def batched_async_rm(args: Any, samples: list[Sample], **kwargs: Any) -> list[Any]:
    rm_function = load_function(args.custom_rm_path)
    rewards: list[Any] = await rm_function(args, samples, **kwargs)
    return rewards


Generate = Callable[[Any, Sample], Awaitable["Sample | list[Sample]"]]


async def generate_and_rm(args: Any, sample: Sample, generate: Generate) -> Any:
    if sample.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED):
        return sample
    produced = await generate(args, sample)
    if args.group_rm:
        return produced
    if isinstance(produced, list):
        samples = produced
        if any(s.status == Sample.Status.ABORTED for s in samples):
            return samples
        need = [s for s in samples if s.reward is None]
        rewards = await batched_async_rm(args, need)
        for s, reward in zip(need, rewards, strict=False):
            s.reward = reward
        return samples
    if produced.status == Sample.Status.ABORTED:
        return produced
    if produced.reward is None:
        produced.reward = await async_rm(args, produced)
    return produced


async def generate_and_rm_group(args: Any, group: list[Sample], generate: Generate) -> list[Any]:
    tasks = [asyncio.create_task(generate_and_rm(args, s, generate)) for s in group]
    done = await asyncio.gather(*tasks)
    if args.group_rm:
        rewards = await batched_async_rm(args, done)
        for s, reward in zip(done, rewards, strict=False):
            s.reward = reward
    return list(done)


@dataclass
class Rollout:
    """What ``generate_rollout_async`` kept and dropped (by group index)."""

    kept: list[list[Any]]
    dropped: list[list[Any]]
    drop_reasons: dict[str, int]


async def rollout(args: Any, groups: list[list[Sample]], generate: Generate) -> Rollout:
    """slime's rollout loop over ``groups``: every group a task on this
    loop, each finished group through the dynamic filter. A group's error
    stops the rollout (slime's ``task.result()``); the other groups'
    tasks are cancelled then, as slime's process would end them."""
    dynamic_filter = (
        load_function(args.dynamic_sampling_filter_path)
        if args.dynamic_sampling_filter_path
        else None
    )
    tasks = [asyncio.create_task(generate_and_rm_group(args, g, generate)) for g in groups]
    pending = set(tasks)
    kept: list[list[Any]] = []
    dropped: list[list[Any]] = []
    reasons: dict[str, int] = defaultdict(int)
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                group = task.result()
                output = call_dynamic_filter(dynamic_filter, args, group)
                if should_drop_dynamic_filter_output(
                    output, remaining_batch_size=len(groups), target_data_size=len(groups)
                ):
                    if output.reason:
                        reasons[output.reason] += 1
                    dropped.append(group)
                    continue
                kept.append(group)
    finally:
        for task in pending:
            task.cancel()
        # Every group's outcome is collected (an error of a group that was
        # not looked at must not be logged as "never retrieved").
        await asyncio.gather(*tasks, return_exceptions=True)
    return Rollout(kept, dropped, dict(reasons))


def slime_args(**settings: Any) -> argparse.Namespace:
    """slime's ``args`` as a reward function sees them (the ones it reads)."""
    base: dict[str, Any] = {
        "custom_rm_path": "collimate_rl.slime.reward_func",
        "group_rm": False,
        "reward_key": None,
        "dynamic_sampling_filter_path": None,
        "n_samples_per_prompt": 8,
    }
    base.update(settings)
    return argparse.Namespace(**base)


@pytest.fixture
def slime() -> SimpleNamespace:
    """slime's objects and dispatch, as reproduced above."""
    return SimpleNamespace(
        Sample=Sample,
        DynamicFilterOutput=DynamicFilterOutput,
        call_dynamic_filter=call_dynamic_filter,
        should_drop=should_drop_dynamic_filter_output,
        load_function=load_function,
        async_rm=async_rm,
        batched_async_rm=batched_async_rm,
        generate_and_rm=generate_and_rm,
        generate_and_rm_group=generate_and_rm_group,
        rollout=rollout,
        args=slime_args,
        read_file=read_file,
        dataset_samples=dataset_samples,
        get_samples=get_samples,
    )


@pytest.fixture
def slime_filter_types(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """slime's ``filter_hub.base_types`` as a loaded module (slime's rollout
    imports it before it calls any filter)."""
    module = ModuleType("slime.rollout.filter_hub.base_types")
    module.DynamicFilterOutput = DynamicFilterOutput  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


# --- the settings start clean ---------------------------------------------------

_ENV = (
    *(name.upper() for name in SETTINGS),
    "COLLIMATE_SERVE_SOCKET",
    "COLLIMATE_SERVE_URL",
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


# --- coding tasks with known rewards ----------------------------------------------

_UNIT = json.dumps([{"input": [1], "output": 2}, {"input": [3], "output": 6}])
_MBPP = {"test_list": ["assert add(1, 2) == 3", "assert add(-2, 2) == 0"]}
_APPS = {
    "input_output": json.dumps({"fn_name": "times", "inputs": [[2], [5]], "outputs": [[4], [10]]})
}
_LCB = json.dumps(
    [
        {"input": "2\n", "output": "4", "testtype": "stdin"},
        {"input": "7\n", "output": "14", "testtype": "stdin"},
    ]
)

#: (label, [(code, reward)]) per dataset shape: right, half right, wrong.
TASKS: list[tuple[Any, list[tuple[str, float]]]] = [
    (
        _UNIT,
        [
            ("def solve(x):\n    return 2 * x\n", 1.0),
            ("def solve(x):\n    return 2 if x == 1 else 0\n", 0.5),
            ("def solve(x):\n    return -1\n", 0.0),
        ],
    ),
    (
        _MBPP,
        [
            ("def add(a, b):\n    return a + b\n", 1.0),
            ("def add(a, b):\n    return 3\n", 0.5),
            ("def add(a, b):\n    return None\n", 0.0),
        ],
    ),
    (
        _APPS,
        [
            ("def times(x):\n    return 2 * x\n", 1.0),
            ("def times(x):\n    return 4\n", 0.5),
            ("def times(x):\n    return 0\n", 0.0),
        ],
    ),
    (
        _LCB,
        [
            ("print(2 * int(input()))\n", 1.0),
            ("input()\nprint(4)\n", 0.5),
            ("print('no')\n", 0.0),
        ],
    ),
]

SLOW_CODE = "import time\n\ndef solve(x):\n    time.sleep(60)\n    return 2 * x\n"


def as_completion(code: str) -> str:
    """A model's answer: reasoning, then the code in a fence."""
    return f"<think>\nmaybe `def wrong(): pass`\n</think>\nHere it is:\n```python\n{code}```\n"


def make_groups(
    n_groups: int, group_size: int, *, slow: set[int] | None = None
) -> list[list[Sample]]:
    """``n_groups`` prompts of ``group_size`` completed samples; a group in
    ``slow`` holds candidates that run for a minute. ``metadata["expected"]``
    is each sample's reward."""
    groups = []
    index = 0
    for g in range(n_groups):
        label, answers = TASKS[g % len(TASKS)]
        group = []
        for k in range(group_size):
            code, expected = answers[k % len(answers)]
            if slow and g in slow:
                label, code, expected = _UNIT, SLOW_CODE, 1.0
            group.append(
                Sample(
                    group_index=g,
                    index=index,
                    prompt=f"prompt {g}: write the function",
                    response=as_completion(code),
                    label=label if isinstance(label, str) else json.dumps(label),
                    status=Sample.Status.PENDING,
                    metadata={"expected": expected},
                )
            )
            index += 1
        groups.append(group)
    return groups


@pytest.fixture
def groups() -> Callable[..., list[list[Sample]]]:
    return make_groups


# --- backends ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def backend() -> Iterator[LocalCollimateBackend]:
    """An in-process local backend on a loopback port and a unix socket."""
    folder = tempfile.mkdtemp(prefix="slime-", dir="/tmp")
    try:
        with LocalCollimateBackend(socket_path=os.path.join(folder, "serve.sock")) as served:
            yield served
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["tcp", "unix"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def base_url_setting(served: Any, transport: str) -> str:
    """``collimate_base_url`` for ``served`` over ``transport``."""
    return served.base_url if transport == "tcp" else f"unix:{served.socket_path}"


class BackendProcess:
    """``python -m collimate_rl.local_backend`` as a process (and its
    process group) that a test can kill mid-batch."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="slime-", dir="/tmp")
        self.socket_path = os.path.join(self.folder, "serve.sock")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "collimate_rl.local_backend",
                "--port",
                "0",
                "--socket",
                self.socket_path,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        banner = ""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            banner += line
            if "isolation:" in line:
                break
        else:
            self.kill()
            raise RuntimeError(f"the local backend did not start: {banner}")
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", banner)
        assert found, banner
        self.base_url = found.group(1)
        # Keep draining its stderr so that it never blocks on a full pipe.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def kill(self) -> None:
        """SIGKILL the server and every process it started."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def backend_process() -> Iterator[BackendProcess]:
    served = BackendProcess()
    try:
        yield served
    finally:
        served.close()
