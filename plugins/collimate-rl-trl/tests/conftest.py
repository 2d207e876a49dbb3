"""Shared fixtures of the TRL plugin's tests: a real local backend (TCP and
unix socket) and TRL's own reward call.

``GRPOTrainer._calculate_rewards`` is what calls reward functions. Importing
TRL pulls torch, so the tests do not import it: they read the method's
source (and ``is_async_callable``, ``get_callable_name``,
``start_event_loop_in_daemon`` from ``trl/trainer/utils.py``) from the
installed wheel (``hatch run trl:test`` installs it with ``--no-deps``) and
run that code, with the trainer's attributes and the few torch calls it
makes stood in by plain Python. Without the wheel they run a copy of the
same call, written from TRL 1.16's source (``trl/trainer/grpo_trainer.py``,
``_calculate_rewards``): the keywords, the repeated columns, the async
functions gathered on a loop of their own, ``None`` as NaN.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import importlib.util
import inspect
import logging
import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from collimate_rl.local_backend import LocalCollimateBackend


@pytest.fixture(scope="session")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCollimateBackend]:
    sock = tmp_path_factory.mktemp("trl") / "backend.sock"
    with LocalCollimateBackend(socket_path=sock) as b:
        yield b


@pytest.fixture(params=["tcp", "unix"])
def target(request: pytest.FixtureRequest, backend: LocalCollimateBackend) -> dict[str, str]:
    """Keywords naming the backend, over TCP or over its unix socket."""
    if request.param == "tcp":
        return {"base_url": backend.base_url}
    return {"unix_socket": str(backend.socket_path)}


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


def trl_source() -> Path | None:
    """TRL's package directory, found without importing it (None: not installed)."""
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


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
    }
    from typing import Optional  # the annotations of utils.py name it

    namespace["Optional"] = Optional
    utils = _functions(
        root / "trainer" / "utils.py",
        {"is_async_callable", "get_callable_name", "start_event_loop_in_daemon"},
    )
    grpo = _functions(root / "trainer" / "grpo_trainer.py", {"_calculate_rewards"})
    for module in (*utils.values(), *grpo.values()):
        exec(compile(module, str(root), "exec"), namespace)
    namespace["origin"] = "wheel"
    return namespace


def _replica() -> dict[str, Any]:
    """TRL 1.16's reward call, copied from its source (used without the wheel)."""

    def is_async_callable(func: Any) -> bool:
        while isinstance(func, functools.partial):
            func = func.func
        return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(func.__call__)

    def get_callable_name(func: Any) -> str:
        while isinstance(func, functools.partial):
            func = func.func
        return getattr(func, "__name__", type(func).__name__)

    def start_event_loop_in_daemon(name: str | None = None) -> Any:
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            ready.set()
            loop.run_forever()

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        return thread, loop, ready

    def _calculate_rewards(self: Any, inputs: Any, prompts: Any, completions: Any, ids: Any) -> Any:
        rewards = _torch.zeros(len(prompts), len(self.reward_funcs))
        keys = [k for k in inputs[0] if k not in ["prompt", "completion", "completion_ids"]]
        kw: dict[str, Any] = {k: [ex[k] for ex in inputs] for k in keys}
        kw["trainer_state"] = self.state
        kw["log_extra"] = self._log_completion_extra
        kw["log_metric"] = self._log_metric
        pending = []
        for i, (func, name) in enumerate(
            zip(self.reward_funcs, self.reward_func_names, strict=True)
        ):
            if is_async_callable(func):
                pending.append((i, func, name))
            else:
                out = func(prompts=prompts, completions=completions, completion_ids=ids, **kw)
                rewards[:, i] = _torch.tensor([math.nan if r is None else r for r in out])

        async def gathered() -> Any:
            async def one(i: int, func: Any) -> Any:
                out = await func(prompts=prompts, completions=completions, completion_ids=ids, **kw)
                return i, [math.nan if r is None else r for r in out]

            return await asyncio.gather(*(one(i, f) for i, f, _ in pending))

        if pending:
            done = asyncio.run_coroutine_threadsafe(gathered(), self.async_loop).result()
            for i, out in done:
                rewards[:, i] = _torch.tensor(out)
        return rewards

    return {
        "is_async_callable": is_async_callable,
        "get_callable_name": get_callable_name,
        "start_event_loop_in_daemon": start_event_loop_in_daemon,
        "_calculate_rewards": _calculate_rewards,
        "origin": "copy",
    }


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
    """TRL's reward-call code: from the installed wheel, else the copy."""
    root = trl_source()
    return _load_trl(root) if root is not None else _replica()


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
