"""Shared fixtures of the verl plugin's tests: a real local backend (TCP and
unix socket) and verl's own code, read from its wheel.

Importing ``verl`` runs ``verl/__init__.py``, which imports torch and ray.
The modules the tests need are plain Python, so they are loaded without
their package ``__init__``:

* ``verl/utils/reward_score/sandbox_fusion/`` (imports only ``requests``),
  loaded as a package of its own;
* ``load_module`` / ``load_extern_object`` (``verl/utils/import_utils.py``)
  and ``get_custom_reward_fn`` / ``_call_with_kwargs`` /
  ``_call_with_kwargs_async`` (``verl/trainer/ppo/reward.py``): how verl
  finds ``reward.custom_reward_function`` and binds its ``reward_kwargs``,
  taken out of those modules as functions and run as they are.

The wheel is the installed one, else fetched once from PyPI and unpacked
(``collimate_rl.testing.wheels``).
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import importlib.util
import inspect
import os
import sys
import warnings
from functools import cache, partial, wraps
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

import pytest

from collimate_rl.testing.fixtures import backend, target
from collimate_rl.testing.wheels import WheelUnavailable, wheel_source

# core's fixtures: the backend (loopback TCP and a unix socket), `target` (a test over each)
__all__ = ["backend", "target"]


#: The verl release whose code the tests run.
VERL_VERSION = "0.9.1"


@pytest.fixture(scope="session")
def verl_dir() -> Path:
    """verl's package directory (installed, else its wheel; never imported)."""
    try:
        return wheel_source("verl", VERL_VERSION, "verl")
    except WheelUnavailable as exc:
        pytest.skip(f"verl's code is needed and cannot be had here: {exc}")


@pytest.fixture(scope="session")
def verl_sandbox_fusion(verl_dir: Path) -> ModuleType:
    """verl's own ``verl.utils.reward_score.sandbox_fusion`` package."""
    if importlib.util.find_spec("requests") is None:
        pytest.skip("requests (which verl's sandbox_fusion client posts with) is not installed")
    name = "verl_sandbox_fusion_under_test"
    folder = verl_dir / "utils" / "reward_score" / "sandbox_fusion"
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _functions(path: Path, names: set[str], namespace: dict[str, Any]) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    found = [n for n in tree.body if isinstance(n, kinds) and n.name in names]
    assert {n.name for n in found} == names, f"{path} lacks {names - {n.name for n in found}}"
    for node in found:
        exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), namespace)


def _verl_loading(verl_dir: Path) -> dict[str, Any]:
    """verl's ``get_custom_reward_fn`` (with the loader it uses), as functions."""
    namespace: dict[str, Any] = {
        "importlib": importlib,
        "inspect": inspect,
        "os": os,
        "warnings": warnings,
        "cache": cache,
        "wraps": wraps,
        "partial": partial,
        "Optional": Optional,
        "Any": Any,
        "PKG_PATH_PREFIX": "pkg://",
        "FILE_PATH_PREFIX": "file://",
    }
    _functions(
        verl_dir / "utils" / "import_utils.py", {"load_module", "load_extern_object"}, namespace
    )
    # get_custom_reward_fn imports load_extern_object from verl.utils.import_utils
    # (which would run verl/__init__): hand it the function read above instead
    shim = ModuleType("verl.utils.import_utils")
    shim.load_extern_object = namespace["load_extern_object"]  # type: ignore[attr-defined]
    namespace["__verl_import_utils__"] = shim
    _functions(
        verl_dir / "trainer" / "ppo" / "reward.py",
        {"get_custom_reward_fn", "_call_with_kwargs", "_call_with_kwargs_async"},
        namespace,
    )
    return namespace


class Config(dict):  # type: ignore[type-arg]
    """The slice of verl's OmegaConf config these functions read
    (``config.reward.get("custom_reward_function")``)."""

    def __getattr__(self, name: str) -> Any:
        return self[name]


@pytest.fixture(scope="session")
def verl_code(verl_dir: Path) -> dict[str, Any]:
    """verl's reward-function loading, from its wheel."""
    loading = _verl_loading(verl_dir)
    loading["origin"] = "wheel"
    return loading


@pytest.fixture
def custom_reward_fn(verl_code: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    """``get_custom_reward_fn(config)`` as verl calls it, for a path, a name
    and reward_kwargs."""
    verl_loading = verl_code
    shim = verl_loading["__verl_import_utils__"]
    monkeypatch.setitem(sys.modules, "verl.utils.import_utils", shim)
    verl_pkg = ModuleType("verl")
    verl_pkg.__path__ = []  # a bare package: its __init__ (torch, ray) never runs
    utils_pkg = ModuleType("verl.utils")
    utils_pkg.__path__ = []
    monkeypatch.setitem(sys.modules, "verl", verl_pkg)
    monkeypatch.setitem(sys.modules, "verl.utils", utils_pkg)

    def load(path: str, name: str, reward_kwargs: dict[str, Any] | None = None) -> Any:
        section = {"path": path, "name": name, "reward_kwargs": reward_kwargs or {}}
        config = Config(reward=Config(custom_reward_function=section))
        return verl_loading["get_custom_reward_fn"](config)

    return load


# -- verl's row path: parquet -> RLHFDataset -> collate -> reward loop ---------


def _methods(path: Path, cls: str, names: set[str], namespace: dict[str, Any]) -> None:
    """Exec the named methods of class ``cls`` of ``path`` as plain functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    found = [m for m in node.body if isinstance(m, kinds) and m.name in names]
    assert {m.name for m in found} == names, f"{path}:{cls} lacks {names - {m.name for m in found}}"
    for method in found:
        method.decorator_list = []
        method.name = f"{cls}.{method.name}"
        exec(compile(ast.Module(body=[method], type_ignores=[]), str(path), "exec"), namespace)


class Vector:
    """One row of a torch tensor, as far as verl's reward code uses it."""

    def __init__(self, values: Any) -> None:
        self.values = list(values)

    @property
    def shape(self) -> tuple[int]:
        return (len(self.values),)

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return Vector(self.values[index])
        return self.values[index]

    def sum(self) -> int:
        return int(sum(self.values))


class Batch:
    """verl's ``DataProto`` as its reward loop reads it: ``batch`` (tensors,
    one :class:`Vector` per sample here), ``non_tensor_batch`` (numpy object
    arrays); a slice is a ``DataProto``, an index a ``DataProtoItem``."""

    def __init__(self, batch: dict[str, list[Any]], non_tensor_batch: dict[str, Any]) -> None:
        self.batch = batch
        self.non_tensor_batch = non_tensor_batch

    def __len__(self) -> int:
        return len(next(iter(self.batch.values())))

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return Batch(
                {k: v[index] for k, v in self.batch.items()},
                {k: v[index] for k, v in self.non_tensor_batch.items()},
            )
        from types import SimpleNamespace

        return SimpleNamespace(
            batch={k: v[index] for k, v in self.batch.items()},
            non_tensor_batch={k: v[index] for k, v in self.non_tensor_batch.items()},
        )


def _verl_rows_code(verl_dir: Path) -> dict[str, Any]:
    import logging
    from collections import defaultdict
    from collections.abc import Callable
    from types import SimpleNamespace

    np = pytest.importorskip("numpy")
    torch = SimpleNamespace(
        Tensor=Vector,
        tensor=lambda values, dtype=None: Vector(values),
        stack=lambda values, dim=0: list(values),
        uint8="uint8",
    )
    namespace: dict[str, Any] = {
        "asyncio": asyncio,
        "np": np,
        "torch": torch,
        "defaultdict": defaultdict,
        "partial": partial,
        "Any": Any,
        "Callable": Callable,
        "Optional": Optional,
        "DataProto": Batch,
        "logger": logging.getLogger("verl-under-test"),
    }
    dataset = verl_dir / "utils" / "dataset" / "rl_dataset.py"
    _functions(dataset, {"collate_fn"}, namespace)
    _methods(dataset, "RLHFDataset", {"__getitem__", "_build_messages"}, namespace)
    naive = verl_dir / "experimental" / "reward_loop" / "reward_manager" / "naive.py"
    _methods(naive, "NaiveRewardManager", {"run_single"}, namespace)
    loop = verl_dir / "experimental" / "reward_loop" / "reward_loop.py"
    _methods(loop, "RewardLoopWorker", {"compute_score_batch"}, namespace)
    metrics = verl_dir / "trainer" / "ppo" / "metric_utils.py"
    _functions(
        metrics, {"bootstrap_metric", "calc_maj_val", "process_validation_metrics"}, namespace
    )
    return namespace


@pytest.fixture(scope="session")
def verl_rows_code(verl_dir: Path) -> dict[str, Any]:
    """verl's own code between a parquet row and ``compute_score``, from its
    wheel: ``RLHFDataset.__getitem__`` (and ``_build_messages``),
    ``collate_fn``, the reward loop's ``RewardLoopWorker.compute_score_batch``
    and ``NaiveRewardManager.run_single``, and the validation metrics
    (``process_validation_metrics``), with torch's few calls stood in."""
    return _verl_rows_code(verl_dir)
