"""pytest fixtures for a plugin's tests: one real local backend for the test
session, on a loopback TCP port and a unix socket, and ``target``, which runs
each test that takes it over both.

A plugin's ``tests/conftest.py`` imports them by name (pytest offers every
fixture its conftest holds to the tests below it)::

    from collimate_rl.testing.fixtures import backend, target

    __all__ = ["backend", "target"]

Only tests import this module: it needs pytest, which core does not depend on.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..local_backend import LocalCollimateBackend

__all__ = ["backend", "target"]


@pytest.fixture(scope="session")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCollimateBackend]:
    """One real local backend for the session, on loopback TCP and a unix
    socket (in a short temporary directory: socket paths are limited to
    about 100 bytes)."""
    sock = tmp_path_factory.mktemp("backend") / "backend.sock"
    with LocalCollimateBackend(socket_path=sock) as b:
        yield b


@pytest.fixture(params=["tcp", "unix"])
def target(request: pytest.FixtureRequest, backend: LocalCollimateBackend) -> dict[str, str]:
    """Keywords naming ``backend`` as clients and rewards take them:
    ``{"base_url": ...}`` in the ``tcp`` run, ``{"unix_socket": ...}`` in
    the ``unix`` run."""
    if request.param == "tcp":
        return {"base_url": backend.base_url}
    return {"unix_socket": str(backend.socket_path)}
