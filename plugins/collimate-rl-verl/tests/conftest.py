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
from collections.abc import Iterator
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
        pytest.fail("requests (which verl's sandbox_fusion client posts with) is not installed")
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


# -- verl's tools and its tool agent loop ---------------------------------------


def _classes(path: Path, names: set[str], namespace: dict[str, Any]) -> None:
    """Exec the named top-level classes of ``path`` into ``namespace``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in names]
    assert {n.name for n in found} == names, f"{path} lacks {names - {n.name for n in found}}"
    for node in found:
        node.decorator_list = []
        # dont_inherit: not this file's `from __future__ import annotations`
        # (pydantic models read their annotations as verl wrote them)
        code = compile(
            ast.Module(body=[node], type_ignores=[]), str(path), "exec", dont_inherit=True
        )
        exec(code, namespace)


def _bare_package(name: str, folder: Path) -> ModuleType:
    """A package whose submodules load from ``folder`` but whose
    ``__init__`` (torch, ray) never runs."""
    package = ModuleType(name)
    package.__path__ = [str(folder)]
    package.__file__ = str(folder / "__init__.py")
    return package


@pytest.fixture(scope="module")
def verl_tools(verl_dir: Path) -> Iterator[dict[str, Any]]:
    """verl's tool modules as verl imports them, from its wheel:
    ``verl.tools.base_tool`` (``BaseTool``), ``verl.tools.schemas``,
    ``verl.tools.function_tool`` and ``verl.tools.tool_registry``
    (``initialize_tools_from_config``, ``load_all_tools``) are the real
    files, imported under their own names (so ``collimate_rl.verl.tools``
    subclasses the real ``BaseTool``). Stood in: the packages' ``__init__``
    (``verl/__init__.py`` imports torch and ray), ``verl.utils.ray_utils``
    (imports ray; ``rollout_trace`` takes ``get_event_loop`` from it) and
    ``transformers.utils.get_json_schema`` (used only to build function
    tools from Python callables). Removed again at the end of the module."""
    for needed in ("pydantic", "omegaconf"):
        if importlib.util.find_spec(needed) is None:
            pytest.fail(f"{needed} (which verl's tool classes need) is not installed")
    ray_utils = ModuleType("verl.utils.ray_utils")
    ray_utils.get_event_loop = asyncio.get_event_loop  # type: ignore[attr-defined]
    stubs: dict[str, ModuleType] = {
        "verl": _bare_package("verl", verl_dir),
        "verl.utils": _bare_package("verl.utils", verl_dir / "utils"),
        "verl.utils.ray_utils": ray_utils,
    }
    if importlib.util.find_spec("transformers") is None:
        transformers = _bare_package("transformers", verl_dir / "missing")
        utils = ModuleType("transformers.utils")

        def get_json_schema(fn: Any) -> dict[str, Any]:
            raise NotImplementedError("transformers is not installed (function tools only)")

        utils.get_json_schema = get_json_schema  # type: ignore[attr-defined]
        stubs.update({"transformers": transformers, "transformers.utils": utils})
    before = set(sys.modules)
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        modules = {
            name: importlib.import_module(f"verl.tools.{name}")
            for name in ("schemas", "base_tool", "function_tool", "tool_registry")
        }
        assert modules["base_tool"].__file__ == str(verl_dir / "tools" / "base_tool.py")
        yield {**modules, "agent_loop": _tool_agent_loop(verl_dir, modules)}
    finally:
        for name in set(sys.modules) - before:
            if name.split(".")[0] in ("verl", "transformers") or name == "collimate_rl.verl.tools":
                del sys.modules[name]
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _tool_agent_loop(verl_dir: Path, modules: dict[str, ModuleType]) -> dict[str, Any]:
    """verl's ``ToolAgentLoop`` code, from
    ``verl/experimental/agent_loop/tool_agent_loop.py``: ``AgentState``,
    ``AgentData`` and the methods ``run``, ``_handle_processing_tools_state``,
    ``_call_tool`` and ``_make_request_id`` as they are, executed with the
    module's own names; ``FunctionCall`` from the same folder's tool parser. The module
    itself imports torch, PIL and the LLM server machinery, so it is not
    imported: the names its code uses are given (torch and PIL only appear
    in annotations; ``AgentLoopOutput`` is a plain record)."""
    import json
    import logging
    from contextlib import contextmanager
    from enum import Enum
    from types import SimpleNamespace
    from uuid import uuid4

    from pydantic import BaseModel

    @contextmanager
    def simple_timer(name: str, timing: dict[str, Any]) -> Iterator[None]:
        yield

    class AgentLoopOutput(SimpleNamespace):
        pass

    schemas, function_tool = modules["schemas"], modules["function_tool"]
    namespace: dict[str, Any] = {
        "asyncio": asyncio,
        "json": json,
        "logging": logging,
        "os": os,
        "Enum": Enum,
        "Any": Any,
        "Optional": Optional,
        "uuid4": uuid4,
        "BaseModel": BaseModel,
        "torch": SimpleNamespace(Tensor=object),
        "Image": SimpleNamespace(Image=object),
        "AgentLoopOutput": AgentLoopOutput,
        "FunctionTool": function_tool.FunctionTool,
        "normalize_function_tool_return": function_tool.normalize_function_tool_return,
        "OpenAIFunctionCallSchema": schemas.OpenAIFunctionCallSchema,
        "OpenAIFunctionParsedSchema": schemas.OpenAIFunctionParsedSchema,
        "ToolResponse": schemas.ToolResponse,
        "simple_timer": simple_timer,
        "logger": logging.getLogger("verl-under-test"),
        "SPEC_DECODE_EXTRA_KEYS": (),
    }
    loop_dir = verl_dir / "experimental" / "agent_loop"
    _classes(loop_dir / "tool_parser.py", {"FunctionCall"}, namespace)
    source = loop_dir / "tool_agent_loop.py"
    _classes(source, {"AgentState", "AgentData"}, namespace)
    _methods(
        source,
        "ToolAgentLoop",
        {"run", "_handle_processing_tools_state", "_call_tool", "_make_request_id"},
        namespace,
    )
    return namespace
