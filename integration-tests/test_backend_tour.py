"""The 30-second tour that the README of collimate-rl 0.5.0 showed, against
``python -m collimate_rl.local_backend --port <free port>`` in its own process.

Every API that README showed is a promise this project keeps, so its tour
is kept here exactly as it was published (``TOUR``); only two things are
added around it, as a reader would: ``completion_code`` (the snippet uses
it without defining it) and the port (8080 may be taken on a CI machine, so
the URL's port is substituted with the free port the server got)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

TOUR = textwrap.dedent(
    """
    from collimate_rl import CollimateClient, PropertyReward, grade, group_seeds

    client = CollimateClient("http://127.0.0.1:8080")     # the local backend above —
                                                          # or a real daemon, or
                                                          # connect(api_key="col_...")
    spec = PropertyReward(
        reference="    return sum(c in 'aeiouAEIOU' for c in x)",
        generator="''.join(random.choice('abcdEIOUxyz') for _ in range(8))",
        k=16,
    )
    res = grade(client, "dkr-python311", completion_code, spec, seed="ab"*32)
    print(res.reward, res.seed, res.seed_ack)
    """
)

COMPLETION = (
    "completion_code = \"def solve(x):\\n    return sum(c in 'aeiouAEIOU' for c in x)\\n\"\n"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_thirty_second_tour(tmp_path: Path) -> None:
    import collimate_rl

    if not hasattr(collimate_rl, "grade") or not hasattr(collimate_rl, "PropertyReward"):
        pytest.fail("collimate_rl.grade / PropertyReward are not exported yet (rewards layer)")
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "collimate_rl.local_backend", "--port", str(port)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert server.stderr is not None
        banner = ""
        for line in server.stderr:
            banner += line
            if "isolation:" in line:
                break
        assert f"127.0.0.1:{port}" in banner, banner
        # keep reading the server's log so its pipe never fills
        threading.Thread(target=server.stderr.read, daemon=True).start()
        script = COMPLETION + TOUR.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
        (tmp_path / "tour.py").write_text(script)
        run = subprocess.run(
            [sys.executable, str(tmp_path / "tour.py")],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert run.returncode == 0, run.stderr
        reward, seed, seed_ack = run.stdout.split()
        assert float(reward) == 1.0
        assert seed == "ab" * 32
        assert seed_ack in ("verified", "off", "no-ack")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            assert server.wait(timeout=60) == 0
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
