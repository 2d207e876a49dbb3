"""Shared fixtures of the SkyRL adapter's tests: a real local backend serving
TCP and a unix socket, a ``target`` parametrized over both, and rows in the
shape SkyRL datasets have."""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.skyrl.clients import close_shared_clients

TARGET_VARS = (
    "COLLIMATE_SERVE_SOCKET",
    "COLLIMATE_API_KEY",
    "COLLIMATE_BASE_URL",
    "COLLIMATE_SERVE_URL",
)


class Rows:
    """Rows and completions (a fixture: test modules cannot import each other)."""

    RIGHT = "Here it is:\n```python\ndef add(a, b):\n    return a + b\n```"
    WRONG = "```python\ndef add(a, b):\n    return a - b\n```"

    @staticmethod
    def mbpp(index: int, **extra: Any) -> dict[str, Any]:
        return mbpp_row(index, **extra)

    @staticmethod
    def extras(row: dict[str, Any], max_turns: int = 1) -> dict[str, Any]:
        return extras_of(row, max_turns)


@pytest.fixture
def rows() -> type[Rows]:
    return Rows


def mbpp_row(index: int, **extra: Any) -> dict[str, Any]:
    """A SkyRL dataset row (MBPP tests) for ``add``; ``index`` makes it its own prompt."""
    row: dict[str, Any] = {
        "prompt": [{"role": "user", "content": "Write add(a, b)."}],
        "env_class": "collimate_code",
        "data_source": "mbpp",
        "reward_spec": {
            "method": "rule",
            "ground_truth": {
                "test_list": [f"assert add({index}, 2) == {index + 2}", "assert add(0, 0) == 0"]
            },
            "entry": "add",
        },
        "extra_info": {"split": "train", "index": index},
    }
    row.update(extra)
    return row


def extras_of(row: dict[str, Any], max_turns: int = 1) -> dict[str, Any]:
    """What SkyRL's generator passes: the row minus prompt and env_class, plus max_turns."""
    extras = {k: copy.deepcopy(v) for k, v in row.items() if k not in ("prompt", "env_class")}
    extras["max_turns"] = max_turns
    return extras


@pytest.fixture(scope="session")
def backend() -> Iterator[LocalCollimateBackend]:
    # a short directory: unix socket paths are limited to ~100 bytes
    with (
        tempfile.TemporaryDirectory(prefix="crl-skyrl-") as tmp,
        LocalCollimateBackend(socket_path=Path(tmp) / "b.sock") as b,
    ):
        yield b


@pytest.fixture(params=["tcp", "unix"])
def target(request: pytest.FixtureRequest, backend: LocalCollimateBackend) -> dict[str, Any]:
    """The backend as an ``env_config`` naming it, over TCP or the unix socket."""
    if request.param == "tcp":
        return {"base_url": backend.base_url}
    return {"socket": backend.socket_path}


@pytest.fixture
def target_in_environment(
    target: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The same target, named only by the environment (as connect() reads it)."""
    for name in TARGET_VARS:
        monkeypatch.delenv(name, raising=False)
    if "socket" in target:
        monkeypatch.setenv("COLLIMATE_SERVE_SOCKET", target["socket"])
    else:
        monkeypatch.setenv("COLLIMATE_SERVE_URL", target["base_url"])
    return target


@pytest.fixture(autouse=True)
def _fresh_clients() -> Iterator[None]:
    close_shared_clients()
    yield
    close_shared_clients()


@pytest.fixture(scope="session")
def skyrl_gym_module() -> Any:
    """The real skyrl_gym, with collimate_code registered (by hand if this
    interpreter's site-packages lacks the .pth: the hook has its own tests)."""
    import skyrl_gym

    from collimate_rl.skyrl import register

    register()
    return skyrl_gym
