"""pytest fixtures for a plugin's tests: one real local backend for the test
session, on a loopback TCP port and a unix socket, and ``target``, which runs
each test that takes it over both.

A plugin's ``tests/conftest.py`` imports them by name (pytest offers every
fixture its conftest holds to the tests below it)::

    from collimate_rl.testing.fixtures import backend, target

    __all__ = ["backend", "module_backend", "target"]

A test module that wants a backend of its own (its own templates, a client
with a longer timeout) takes the pair :func:`module_backend` makes::

    backend, client = module_backend(timeout=600)

Only tests import this module: it needs pytest, which core does not depend on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import pytest

from ..client import CollimateClient
from ..local_backend import LocalCollimateBackend

__all__ = ["backend", "module_backend", "target"]


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


def module_backend(
    templates: Any = None,
    *,
    timeout: float | None = None,
    client_scope: Literal["module", "function"] = "module",
) -> tuple[Any, Any]:
    """Fixtures ``backend`` and ``client`` for one test module: a real local
    backend (with ``templates``, if any) started once for the module, and a
    blocking client of it on loopback TCP (``timeout``, if given; one for the
    module, or a fresh one for each test with ``client_scope="function"``).
    Assign the pair in the module: pytest finds fixtures there by name."""

    @pytest.fixture(scope="module", name="backend")
    def module_backend_() -> Iterator[LocalCollimateBackend]:
        with LocalCollimateBackend(templates) as b:
            yield b

    @pytest.fixture(scope=client_scope, name="client")
    def client_(backend: LocalCollimateBackend) -> Iterator[CollimateClient]:
        url = backend.base_url
        made = CollimateClient(url) if timeout is None else CollimateClient(url, timeout=timeout)
        with made as c:
            yield c

    return module_backend_, client_
