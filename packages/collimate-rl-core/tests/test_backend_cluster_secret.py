"""The cluster's shared secret on a real local backend: every request
without it (health included) is refused 401 ``unauthorized``, a wrong one
too, the right one is served; a server without a secret checks nothing;
the secret comes from the file ``$COLLIMATE_CLUSTER_SECRET_FILE`` names
and never shows in the server's configuration repr."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from collimate_rl import CollimateClient, CollimateError, MultiNodeClient
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.cli import build_parser, config_from_args
from collimate_rl.local_backend.cluster_secret import (
    SECRET_FILE_ENV,
    SECRET_HEADER,
    read_secret_file,
)
from collimate_rl.local_backend.config import ServerConfig

SECRET = "a-cluster-secret-of-some-length"


@pytest.fixture(scope="module")
def guarded() -> Iterator[str]:
    backend = LocalCollimateBackend(run_slots=1)
    backend.config.cluster_secret = SECRET
    with backend:
        yield backend.base_url


@pytest.mark.parametrize("headers", [None, {SECRET_HEADER: "wrong"}, {SECRET_HEADER: ""}])
def test_without_the_secret_everything_is_refused(guarded: str, headers: dict | None) -> None:
    with CollimateClient(guarded, retries=0, headers=headers) as client:
        for call in (client.health, lambda: client.exec_once("py", code="print(1)")):
            with pytest.raises(CollimateError) as caught:
                call()
            assert (caught.value.status, caught.value.error_code) == (401, "unauthorized")


def test_with_the_secret_the_grader_answers(guarded: str) -> None:
    with CollimateClient(guarded, retries=0, headers={SECRET_HEADER: SECRET}) as client:
        assert client.health()["status"] == "ok"
        assert client.exec_once("py", code="print(6 * 7)")["stdout"] == "42\n"
    # a pool passes the header to the clients it builds
    with MultiNodeClient([guarded], headers={SECRET_HEADER: SECRET}) as pool:
        assert pool.exec_once("py", code="print(2)")["stdout"] == "2\n"


def test_a_server_without_a_secret_checks_nothing() -> None:
    with (
        LocalCollimateBackend(run_slots=1) as backend,
        CollimateClient(backend.base_url, headers={SECRET_HEADER: "anything"}) as client,
    ):
        assert client.health()["status"] == "ok"


def test_the_secret_is_read_from_a_file_and_kept_out_of_reprs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert read_secret_file({}) is None
    path = tmp_path / "secret"
    path.write_text(SECRET + "\n")
    assert read_secret_file({SECRET_FILE_ENV: str(path)}) == SECRET
    monkeypatch.setenv(SECRET_FILE_ENV, str(path))
    config = config_from_args(build_parser().parse_args(["--port", "0"]))
    assert config.cluster_secret == SECRET
    assert SECRET not in repr(config)
    path.write_text("  \n")
    with pytest.raises(ValueError, match="is empty"):
        read_secret_file({SECRET_FILE_ENV: str(path)})
    with pytest.raises(ValueError, match="cannot read"):
        read_secret_file({SECRET_FILE_ENV: str(tmp_path / "absent")})
    with pytest.raises(ValueError, match="must not be empty"):
        ServerConfig(cluster_secret="")
