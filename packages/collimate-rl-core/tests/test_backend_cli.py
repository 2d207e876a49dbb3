"""``python -m collimate_rl.local_backend``: the banner states the isolation
in force, SIGTERM drains (in-flight work finishes, new work gets 503
``draining``), then the process exits 0 and removes its socket file."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from collimate_rl.local_backend.cli import build_parser, config_from_args
from collimate_rl.testing.procs import serve_with_banner


def test_sigterm_drains_then_exits(tmp_path: Path) -> None:
    sock = tmp_path / "serve.sock"
    proc, banner = serve_with_banner("--port", "0", "--socket", str(sock), "--isolation", "process")
    try:
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", banner)
        assert m, banner
        url = m.group(1)
        assert f"unix:{sock}" in banner
        assert "NOT a sandbox" in banner  # process mode says so, loudly
        assert sock.exists()
        # the languages found, each with its compiler
        found = re.search(r"languages: (.*)", banner)
        assert found and "python (CPython " in found.group(1), banner

        out: list[httpx.Response] = []
        t = threading.Thread(
            target=lambda: out.append(
                httpx.post(
                    url + "/v1/exec",
                    json={"template_id": "sh", "command": "sleep 4; echo ok"},
                    timeout=60,
                )
            )
        )
        t.start()
        deadline = time.monotonic() + 20
        while httpx.get(url + "/v1/health").json()["running"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        while httpx.get(url + "/v1/health").json()["status"] != "draining":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        refused = httpx.post(url + "/v1/exec", json={"template_id": "sh", "command": "true"})
        assert refused.status_code == 503 and refused.json()["error_code"] == "draining"
        t.join(60)
        assert out[0].status_code == 200 and out[0].json()["stdout"] == "ok\n"
        assert proc.wait(timeout=60) == 0
        assert not sock.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_template_file_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "t.toml"
    bad.write_text('[[templates]]\nid = "x"\nkind = "ruby"\n')
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "collimate_rl.local_backend",
            "--port",
            "0",
            "--templates",
            str(bad),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "kind must be one of" in run.stderr


def test_flags_map_to_config() -> None:
    cfg = config_from_args(build_parser().parse_args([]))
    assert (cfg.host, cfg.port, cfg.socket_path) == ("127.0.0.1", 8080, None)
    assert cfg.run_slots is None  # one per CPU
    cfg = config_from_args(build_parser().parse_args(["--socket", "/tmp/x.sock"]))
    assert cfg.port is None and cfg.socket_path == "/tmp/x.sock"
    cfg = config_from_args(
        build_parser().parse_args(
            [
                "--port",
                "9",
                "--socket",
                "/tmp/x.sock",
                "--max-inflight",
                "3",
                "--run-slots",
                "4",
                "--session-ttl",
                "5",
                "--isolation",
                "namespaces",
                "--host",
                "::1",
            ]
        )
    )
    assert cfg.run_slots == 4
    assert (cfg.port, cfg.max_inflight, cfg.session_ttl, cfg.isolation, cfg.host) == (
        9,
        3,
        5.0,
        "namespaces",
        "::1",
    )
