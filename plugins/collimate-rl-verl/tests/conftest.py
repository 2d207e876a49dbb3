"""Shared fixtures of the verl plugin's tests: a real local backend (TCP and
unix socket) and verl's own code, read from its wheel.

Importing ``verl`` runs ``verl/__init__.py``, which imports torch and ray.
The modules the tests need are plain Python, so they are loaded without
their package ``__init__`` (``hatch run verl:test`` installs the wheel with
``--no-deps``):

* ``verl/utils/reward_score/sandbox_fusion/`` (imports only ``requests``),
  loaded as a package of its own;
* ``load_module`` / ``load_extern_object`` (``verl/utils/import_utils.py``)
  and ``get_custom_reward_fn`` / ``_call_with_kwargs`` /
  ``_call_with_kwargs_async`` (``verl/trainer/ppo/reward.py``): how verl
  finds ``reward.custom_reward_function`` and binds its ``reward_kwargs``,
  taken out of those modules as functions and run as they are.

Without the wheel, the tests of the first are skipped and the second is a
copy of the same code (``_copied_loading``).
"""

from __future__ import annotations

import ast
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

from collimate_rl.local_backend import LocalCollimateBackend


@pytest.fixture(scope="session")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCollimateBackend]:
    sock = tmp_path_factory.mktemp("verl") / "backend.sock"
    with LocalCollimateBackend(socket_path=sock) as b:
        yield b


@pytest.fixture(params=["tcp", "unix"])
def target(request: pytest.FixtureRequest, backend: LocalCollimateBackend) -> dict[str, str]:
    """Reward keywords naming the backend, over TCP or its unix socket."""
    if request.param == "tcp":
        return {"base_url": backend.base_url}
    return {"unix_socket": str(backend.socket_path)}


def verl_root() -> Path | None:
    """verl's package directory, found without importing it."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@pytest.fixture(scope="session")
def verl_dir() -> Path:
    root = verl_root()
    if root is None:
        pytest.skip("verl's wheel is not installed here (hatch run verl:test installs it)")
    return root


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


def _copied_loading() -> dict[str, Any]:
    """verl 0.9's ``get_custom_reward_fn``, copied from its source (used
    when its wheel is not installed): load by ``pkg://`` or file path, bind
    ``reward_kwargs`` with ``partial``, keep a coroutine function awaitable."""

    def _call_with_kwargs(raw_fn: Any, extra: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        return raw_fn(*args, **{**kwargs, **extra})

    async def _call_with_kwargs_async(
        raw_fn: Any, extra: dict[str, Any], *args: Any, **kwargs: Any
    ) -> Any:
        return await raw_fn(*args, **{**kwargs, **extra})

    def get_custom_reward_fn(config: Any) -> Any:
        section = config.reward.get("custom_reward_function") or {}
        path = section["path"]
        if path.startswith("pkg://"):
            module = importlib.import_module(path[len("pkg://") :].replace("/", "."))
        else:
            spec = importlib.util.spec_from_file_location(f"custom_module_{hash(path)}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        raw_fn = getattr(module, section["name"])
        extra = dict(section.get("reward_kwargs", {}))
        if not inspect.iscoroutinefunction(raw_fn):
            return partial(_call_with_kwargs, raw_fn, extra)
        return partial(_call_with_kwargs_async, raw_fn, extra)

    return {"get_custom_reward_fn": get_custom_reward_fn, "origin": "copy"}


@pytest.fixture(scope="session")
def verl_code() -> dict[str, Any]:
    """verl's reward-function loading: from its wheel, else the copy."""
    root = verl_root()
    if root is None:
        return _copied_loading()
    loading = _verl_loading(root)
    loading["origin"] = "wheel"
    return loading


@pytest.fixture
def custom_reward_fn(verl_code: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    """``get_custom_reward_fn(config)`` as verl calls it, for a path, a name
    and reward_kwargs."""
    verl_loading = verl_code
    shim = verl_loading.get("__verl_import_utils__")
    if shim is None:

        def copied(path: str, name: str, reward_kwargs: dict[str, Any] | None = None) -> Any:
            section = {"path": path, "name": name, "reward_kwargs": reward_kwargs or {}}
            config = Config(reward=Config(custom_reward_function=section))
            return verl_loading["get_custom_reward_fn"](config)

        return copied
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
