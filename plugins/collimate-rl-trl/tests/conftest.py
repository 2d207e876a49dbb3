"""Shared fixtures of the TRL plugin's tests: a real local backend (TCP and
unix socket) and TRL's own reward call.

``GRPOTrainer._calculate_rewards`` is what calls reward functions. Importing
TRL pulls torch, so the tests do not import it: they read the method's
source (and ``is_async_callable``, ``get_callable_name``,
``start_event_loop_in_daemon`` from ``trl/trainer/utils.py``) from TRL's
wheel (the installed one, else fetched once from PyPI and unpacked:
``collimate_rl.testing.wheels``) and run that code, with the trainer's
attributes and the few torch calls it makes stood in by plain Python.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import inspect
import logging
import math
import threading
from collections.abc import Callable, Iterator, Sized
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from collimate_rl.testing.fixtures import backend, target
from collimate_rl.testing.wheels import WheelUnavailable, wheel_source

# core's fixtures: the backend (loopback TCP and a unix socket), `target` (a test over each)
__all__ = ["backend", "target"]


# -- torch, as far as _calculate_rewards uses it ----------------------------


class _Column:
    def __init__(self, values: list[float]) -> None:
        self.values = values


class _Flags:
    def __init__(self, values: list[bool]) -> None:
        self.values = values

    def any(self) -> bool:
        return any(self.values)

    def nonzero(self, as_tuple: bool = False) -> tuple[list[int]]:
        return ([i for i, v in enumerate(self.values) if v],)


class _Mask:
    def __init__(self, rows: list[list[bool]]) -> None:
        self.rows = rows

    def all(self, dim: int) -> _Flags:
        assert dim == 1
        return _Flags([all(r) for r in self.rows])


class _Matrix:
    def __init__(self, n: int, m: int) -> None:
        self.rows = [[0.0] * m for _ in range(n)]

    def __setitem__(self, index: tuple[slice, int], column: _Column) -> None:
        for row, value in zip(self.rows, column.values, strict=True):
            row[index[1]] = value


_torch = SimpleNamespace(
    nan=math.nan,
    float32="float32",
    zeros=lambda n, m, device=None: _Matrix(n, m),
    tensor=lambda values, dtype=None, device=None: _Column([float(v) for v in values]),
    isnan=lambda m: _Mask([[math.isnan(v) for v in row] for row in m.rows]),
)


# -- TRL's code, from its wheel when installed ------------------------------


def _functions(path: Path, names: set[str]) -> dict[str, Any]:
    """The named top-level functions / class methods of ``path``, their
    decorators dropped, as code objects ready to exec."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            node.decorator_list = []
            found.setdefault(node.name, node)
    missing = names - set(found)
    assert not missing, f"{path} has no {missing}"
    return {name: ast.Module(body=[fn], type_ignores=[]) for name, fn in found.items()}


#: The TRL release whose reward call the tests run.
TRL_VERSION = "1.16.0"


def trl_source() -> Path:
    """TRL's package directory (installed, else its wheel; never imported)."""
    try:
        return wheel_source("trl", TRL_VERSION, "trl")
    except WheelUnavailable as exc:
        pytest.skip(f"TRL's code is needed and cannot be had here: {exc}")


def _classes(path: Path, names: set[str]) -> dict[str, Any]:
    """The named top-level classes of ``path``, as code objects ready to exec."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in names}
    assert set(found) == names, f"{path} has no {names - set(found)}"
    return {name: ast.Module(body=[cls], type_ignores=[]) for name, cls in found.items()}


def _load_trl(root: Path) -> dict[str, Any]:
    namespace: dict[str, Any] = {
        "asyncio": asyncio,
        "functools": functools,
        "inspect": inspect,
        "threading": threading,
        "torch": _torch,
        "nn": SimpleNamespace(Module=type("Module", (), {})),
        "gather": lambda x: x,
        "logger": logging.getLogger("trl-under-test"),
        "profiling_context": lambda _trainer, _name: contextlib.nullcontext(),
        "is_conversational": lambda _example: False,
        "apply_chat_template": None,
        "Callable": Callable,
        # RepeatSampler's base and annotations (it draws from torch only when shuffling)
        "Sampler": object,
        "Sized": Sized,
    }
    from typing import Optional  # the annotations of trl/trainer/utils.py name it

    namespace["Optional"] = Optional
    utils = _functions(
        root / "trainer" / "utils.py",
        {"is_async_callable", "get_callable_name", "start_event_loop_in_daemon", "identity"},
    )
    sampler = _classes(root / "trainer" / "utils.py", {"RepeatSampler"})
    grpo = _functions(root / "trainer" / "grpo_trainer.py", {"_calculate_rewards"})
    for module in (*utils.values(), *sampler.values(), *grpo.values()):
        exec(compile(module, str(root), "exec"), namespace)
    namespace["origin"] = "wheel"
    return namespace


class TrainerStandIn:
    """What ``_calculate_rewards`` reads of ``self``, set up as
    ``GRPOTrainer.__init__`` sets it (names by ``get_callable_name``, one
    daemon event loop when any reward function is async)."""

    def __init__(self, trl: dict[str, Any], reward_funcs: list[Any]) -> None:
        self._trl = trl
        self.reward_funcs = reward_funcs
        self.reward_func_names = [trl["get_callable_name"](f) for f in reward_funcs]
        self.reward_processing_classes = [None] * len(reward_funcs)
        self.state = SimpleNamespace(global_step=7)
        self.environments = None
        self.accelerator = SimpleNamespace(device="cpu")
        self.metrics: dict[str, list[float]] = {}
        self.extra_logs: dict[str, list[Any]] = {}
        self.async_loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        if any(trl["is_async_callable"](f) for f in reward_funcs):
            self._thread, self.async_loop, ready = trl["start_event_loop_in_daemon"](
                name="GRPOTrainer-AsyncLoop"
            )
            ready.wait()

    def _log_metric(self, name: str, value: float) -> None:
        self.metrics.setdefault(name, []).append(value)

    def _log_completion_extra(self, column: str, values: list[Any]) -> None:
        self.extra_logs.setdefault(column, []).extend(values)

    def batch(self, dataset: Any, num_generations: int) -> tuple[list[dict[str, Any]], list[Any]]:
        """One generation batch of a ``datasets.Dataset``, as GRPOTrainer
        makes it: TRL's ``RepeatSampler`` (unshuffled here) yields each row
        index ``num_generations`` times in a row, the dataloader fetches
        ``dataset[i]`` and TRL's ``identity`` collator keeps the rows as they
        are; ``_generate_and_score_completions`` then reads
        ``prompts = [x["prompt"] for x in inputs]``."""
        sampler = self._trl["RepeatSampler"](
            dataset, mini_repeat_count=num_generations, batch_size=len(dataset), shuffle=False
        )
        inputs = self._trl["identity"]([dataset[i] for i in sampler])
        return inputs, [x["prompt"] for x in inputs]

    def calculate_rewards(
        self, inputs: list[dict[str, Any]], prompts: list[Any], completions: list[Any]
    ) -> list[list[float]]:
        """One row per completion, one column per reward function (NaN: None)."""
        ids = [[ord(c) % 50 for c in str(x)[:8]] for x in completions]
        matrix = self._trl["_calculate_rewards"](self, inputs, prompts, completions, ids)
        return [list(row) for row in matrix.rows]

    def close(self) -> None:
        if self.async_loop is not None and self._thread is not None:
            self.async_loop.call_soon_threadsafe(self.async_loop.stop)
            self._thread.join(timeout=5)
            self.async_loop.close()


@pytest.fixture(scope="session")
def trl_code() -> dict[str, Any]:
    """TRL's own reward-call code, from its wheel."""
    return _load_trl(trl_source())


@pytest.fixture
def make_trainer(trl_code: dict[str, Any]) -> Iterator[Callable[[list[Any]], TrainerStandIn]]:
    made: list[TrainerStandIn] = []

    def make(reward_funcs: list[Any]) -> TrainerStandIn:
        trainer = TrainerStandIn(trl_code, reward_funcs)
        made.append(trainer)
        return trainer

    yield make
    for trainer in made:
        trainer.close()
