"""The local backend's own attack surface (issue 17): TCP binds loopback
unless a bind beyond it is asked for explicitly (and then the banner warns),
and the unix socket is mode 0600 from the moment it exists, so another uid
of the machine cannot connect to it even where it can reach its directory."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.banner import banner, bind_warning
from collimate_rl.local_backend.cli import build_parser, config_from_args, main
from collimate_rl.local_backend.config import ServerConfig, is_loopback


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost", "[::1]"])
def test_loopback_hosts_need_no_flag(host: str) -> None:
    assert is_loopback(host)
    assert ServerConfig(host=host).host == host
    assert bind_warning(host) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "example.org"])
def test_a_non_loopback_bind_needs_the_flag_and_is_warned_about(host: str) -> None:
    with pytest.raises(ValueError, match=r"not a loopback address.*--allow-non-loopback"):
        ServerConfig(host=host)
    assert ServerConfig(host=host, allow_non_loopback=True).host == host
    # a unix socket alone binds no TCP address: nothing to refuse
    assert ServerConfig(host=host, port=None, socket_path="/tmp/x.sock").port is None
    warning = bind_warning(host)
    assert warning is not None and "no authentication" in warning and host in warning


def test_the_cli_refuses_a_public_bind_without_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--host", "0.0.0.0", "--port", "0", "--isolation", "process"]) == 2
    assert "--allow-non-loopback" in capsys.readouterr().err
    args = build_parser().parse_args(["--host", "0.0.0.0", "--allow-non-loopback"])
    cfg = config_from_args(args)
    assert (cfg.host, cfg.allow_non_loopback) == ("0.0.0.0", True)
    assert config_from_args(build_parser().parse_args([])).allow_non_loopback is False


def test_the_default_banner_on_loopback_carries_no_warning() -> None:
    with LocalCollimateBackend(
        isolation="process", use_plugins=False, templates=[{"id": "py"}]
    ) as b:
        text = banner(b.server)
    assert "listening on http://127.0.0.1:" in text and "!! bound to" not in text


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every uid may traverse (pytest's own are 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="collimate-surface-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_unix_socket_is_0600_and_other_uids_cannot_connect(open_dir: Path) -> None:
    path = open_dir / "backend.sock"
    with LocalCollimateBackend(
        isolation="process",
        use_plugins=False,
        templates=[{"id": "py"}],
        port=None,
        socket_path=path,
    ):
        assert os.stat(path).st_mode & 0o777 == 0o600
        with socket.socket(socket.AF_UNIX) as own:
            own.connect(str(path))  # its owner can
        if os.geteuid() != 0:
            return  # (another uid to try from needs root)
        probe = (
            "import os, socket, sys\nos.setgid(65534); os.setuid(65534)\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            "try:\n    s.connect(sys.argv[1]); print('CONNECTED')\n"
            "except OSError as exc:\n    print(type(exc).__name__)\n"
        )
        done = subprocess.run(
            [sys.executable, "-I", "-c", probe, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.stdout.strip() == "PermissionError", (done.stdout, done.stderr)
    assert not path.exists()
