"""Starting one grader process (``collimate serve`` under the watchdog) and
learning where it listens.

The secret reaches the server through a file only this user can read,
named by ``COLLIMATE_CLUSTER_SECRET_FILE`` and removed as soon as the
server listens (it reads the file at start): never in a command line, an
environment value or a log line.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from collimate_rl.local_backend import SECRET_FILE_ENV, is_loopback

__all__ = ["GraderProcess", "GraderStartError", "start_grader"]

_LISTENING = re.compile(r"listening on (http://\S+)")


class GraderStartError(RuntimeError):
    """The grader process ended, or said nothing, before it listened."""


@dataclass
class GraderProcess:
    """A running grader process and the URL it answers on."""

    proc: subprocess.Popen[bytes]
    url: str
    #: its last lines of stderr (the banner, warnings), for status and errors
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=40))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 10.0) -> None:
        """Drain and stop it (SIGTERM), killed after ``timeout``."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()


def _follow(proc: subprocess.Popen[bytes], tail: deque[str], found: list[str]) -> None:
    """Read the server's stderr for good (a full pipe would block it)."""
    assert proc.stderr is not None
    for raw in proc.stderr:
        line = raw.decode(errors="replace").rstrip()
        tail.append(line)
        if not found and (match := _LISTENING.search(line)):
            found.append(match.group(1))


def start_grader(
    secret: str,
    *,
    host: str,
    port: int = 0,
    extra_args: tuple[str, ...] = (),
    start_timeout: float = 120.0,
) -> GraderProcess:
    """Start ``collimate serve`` on ``host`` (a free port unless given) with
    the cluster's ``secret``; return once it listens."""
    private = tempfile.mkdtemp(prefix="collimate-ray-")
    secret_file = os.path.join(private, "secret")
    fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secret)
    # the daemon wire (and SandboxFusion's) only: no gateway, whose
    # generated keys the start-up banner would print
    args = [sys.executable, "-m", "collimate_rl.ray.watchdog", "--host", host, "--port", str(port)]
    args.append("--no-gateway")
    if not is_loopback(host):
        # reachable from the other nodes: the secret is the access control
        args.append("--allow-non-loopback")
    args.extend(extra_args)
    env = dict(os.environ, **{SECRET_FILE_ENV: secret_file})
    try:
        proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
        tail: deque[str] = deque(maxlen=40)
        found: list[str] = []
        threading.Thread(
            target=_follow, args=(proc, tail, found), name="collimate-grader-log", daemon=True
        ).start()
        deadline = time.monotonic() + start_timeout
        while not found:
            if proc.poll() is not None or time.monotonic() > deadline:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
                raise GraderStartError(
                    f"the grader exited ({proc.returncode}) before it listened: "
                    + " | ".join(list(tail)[-5:])
                )
            time.sleep(0.05)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    return GraderProcess(proc, found[0], tail)
