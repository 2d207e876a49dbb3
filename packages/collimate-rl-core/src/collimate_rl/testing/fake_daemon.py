"""An in-memory daemon that speaks the daemon wire (docs/wire.md §1-2) for tests.

It is NOT a sandbox: commands run as plain subprocesses of the test process,
in a private temporary directory per session. What it is faithful to is the
*contract* a client can observe: routes, status codes and error envelopes,
merged stdout+stderr, seed validation and echo (``random`` seeded for python
code), ``command`` > ``commands`` > ``code`` precedence, the ``files``
trailing-newline rule, timeouts as ``exit_code: -1``, the 16 MiB output cap,
idempotent deletes answering 404, and drain mode.

Mount it without sockets (``httpx.MockTransport(daemon)`` or
:meth:`FakeDaemon.mock_transport`) or serve it on a real TCP port or unix
socket with :mod:`collimate_rl.testing.servers`. Only relative ``files``
paths are portable; absolute ones are rebased under the session directory
so a test can never write to the host.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..local_backend.wire_errors import WireError
from ..wire import MAX_EXEC_TIMEOUT_S, OUTPUT_CAP_BYTES, SEED_RE

__all__ = ["FakeDaemon"]

# Seeds ``random`` from the wire seed, then runs the program as __main__.
_PY_PRELUDE = (
    "import random, sys\n"
    "random.seed(int(sys.argv[1], 16))\n"
    "_src = sys.argv[2]\n"
    "del sys.argv[1:]\n"
    "_globals = {'__name__': '__main__', '__builtins__': __builtins__}\n"
    "exec(compile(_src, '<exec>', 'exec'), _globals)\n"
)


@dataclass
class _Session:
    session_id: str
    template_id: str
    workdir: str
    created: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    exec_count: int = 0

    def info(self) -> dict[str, Any]:
        now = time.monotonic()
        return {
            "session_id": self.session_id,
            "template_id": self.template_id,
            "age_secs": round(now - self.created, 3),
            "idle_secs": round(now - self.last_used, 3),
            "exec_count": self.exec_count,
        }


class FakeDaemon:
    """The daemon wire over plain subprocesses.

    ``templates`` maps a template id to its kind (``"python"``: ``code`` is
    CPython; ``"shell"``: ``code`` is ``sh``). Set :attr:`draining` to make
    every new session / exec answer 503 ``draining``. :attr:`requests` logs
    ``(method, path)`` of everything served.
    """

    def __init__(
        self,
        templates: Mapping[str, str] | None = None,
        *,
        python: str = sys.executable,
        version: str = "fake-daemon",
    ) -> None:
        self.templates = dict(templates or {"python": "python", "shell": "shell"})
        self.python = python
        self.version = version
        self.draining = False
        self.requests: list[tuple[str, str]] = []
        self._sessions: dict[str, _Session] = {}
        self._running = 0
        self._lock = threading.Lock()
        self._root = tempfile.mkdtemp(prefix="collimate-fake-daemon-")

    # lifecycle
    def close(self) -> None:
        """Forget every session and remove every file the fake created."""
        with self._lock:
            self._sessions.clear()
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> FakeDaemon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def session_count(self) -> int:
        with self._lock:
            return len(self._sessions)

    # mounting
    def __call__(self, request: httpx.Request) -> httpx.Response:
        """An ``httpx.MockTransport`` handler (works for sync and async clients)."""
        status, payload = self.handle(request.method, request.url.path, request.content)
        return httpx.Response(status, json=payload)

    def mock_transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    def handle(self, method: str, path: str, raw_body: bytes) -> tuple[int, Any]:
        """``(status, JSON payload)`` for one request: the whole wire."""
        self.requests.append((method, path))
        try:
            return self._route(method, path.rstrip("/") or "/", raw_body)
        except WireError as err:
            return err.status, err.daemon_body()

    # routing
    def _route(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        if parts[:1] != ["v1"]:
            raise WireError(404, "not_found", "not found")
        rest = parts[1:]
        if rest == ["health"] and method == "GET":
            return 200, self._health()
        if rest == ["sessions"] and method == "GET":
            with self._lock:
                return 200, [s.info() for s in self._sessions.values()]
        if rest == ["sessions"] and method == "POST":
            return 201, self._create(_json(raw))
        if rest == ["exec"] and method == "POST":
            return 200, self._exec_once(_json(raw))
        if len(rest) == 2 and rest[0] == "sessions":
            if method == "GET":
                return 200, self._session(rest[1]).info()
            if method == "DELETE":
                return self._delete(rest[1])
        if len(rest) == 3 and rest[0] == "sessions" and rest[2] == "exec" and method == "POST":
            body = _json(raw)
            session = self._session(rest[1])
            self._refuse_if_draining()
            session.last_used = time.monotonic()
            session.exec_count += 1
            return 200, self._run(body, self.templates[session.template_id], session.workdir)
        raise WireError(404, "not_found", "not found")

    def _health(self) -> dict[str, Any]:
        with self._lock:
            sessions, running = len(self._sessions), self._running
        return {
            "status": "draining" if self.draining else "ok",
            "sessions": sessions,
            "running": running,
            "max_inflight": 0,
            "queued": 0,
            "templates": sorted(self.templates),
            "version": self.version,
        }

    def _refuse_if_draining(self) -> None:
        if self.draining:
            raise WireError(503, "draining", "node is draining; send the work elsewhere")

    def _template(self, body: Mapping[str, Any]) -> str:
        template_id = body.get("template_id")
        if not template_id:
            raise WireError(400, "template_id_required", "template_id is required")
        if template_id not in self.templates:
            raise WireError(404, "no_template", f"no template: {template_id}")
        return str(template_id)

    def _session(self, session_id: str) -> _Session:
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            raise WireError(404, "no_such_session", f"no such session: {session_id}")
        return session

    def _create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        template_id = self._template(body)
        self._refuse_if_draining()
        session_id = "sess_" + secrets.token_hex(8)
        workdir = tempfile.mkdtemp(prefix=session_id + "-", dir=self._root)
        with self._lock:
            self._sessions[session_id] = _Session(session_id, template_id, workdir)
        return {
            "session_id": session_id,
            "template_id": template_id,
            "fork_time_ms": 0.0,
            "create_time_ms": 0.0,
        }

    def _delete(self, session_id: str) -> tuple[int, Any]:
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is None:
            return 404, {"deleted": False, "session_id": session_id}
        shutil.rmtree(session.workdir, ignore_errors=True)
        return 200, {"deleted": True, "session_id": session_id}

    def _exec_once(self, body: Mapping[str, Any]) -> dict[str, Any]:
        template_id = self._template(body)
        self._refuse_if_draining()
        workdir = tempfile.mkdtemp(prefix="once-", dir=self._root)
        try:
            return self._run(body, self.templates[template_id], workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    # the exec contract
    def _run(self, body: Mapping[str, Any], kind: str, workdir: str) -> dict[str, Any]:
        seed = body.get("seed")
        if seed is None:
            seed = secrets.token_hex(32)
        elif not isinstance(seed, str) or not SEED_RE.match(seed):
            raise WireError(400, "invalid_seed", "seed must be 64 hex characters (32 bytes)")
        timeout = body.get("timeout_seconds", 30)
        if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0:
            raise WireError(400, "bad_request", "timeout_seconds must be a positive integer")
        timeout = min(timeout, MAX_EXEC_TIMEOUT_S)
        argv = self._argv(body, kind, seed)
        self._write_files(body.get("files") or [], workdir)
        with self._lock:
            self._running += 1
        started = time.perf_counter()
        try:
            output, exit_code = _run_process(argv, workdir, timeout)
        finally:
            with self._lock:
                self._running -= 1
        elapsed = (time.perf_counter() - started) * 1000.0
        return {
            "id": "req_" + secrets.token_hex(8),
            "stdout": output[:OUTPUT_CAP_BYTES].decode("utf-8", "replace"),
            "stderr": "",
            "exit_code": exit_code,
            "fork_time_ms": 0.0,
            "exec_time_ms": round(elapsed, 3),
            "total_time_ms": round(elapsed, 3),
            "seed": seed,
            "seed_ack": "off",
        }

    def _argv(self, body: Mapping[str, Any], kind: str, seed: str) -> list[str]:
        command, commands, code = body.get("command"), body.get("commands"), body.get("code")
        if command is not None:
            return ["/bin/sh", "-c", str(command)]
        if commands is not None:
            if not isinstance(commands, list) or not all(isinstance(a, list) for a in commands):
                raise WireError(400, "bad_request", "commands must be a list of argv lists")
            script = "\n".join(shlex.join(str(arg) for arg in argv) for argv in commands)
            return ["/bin/sh", "-c", script]
        if code is not None:
            if kind == "python":
                return [self.python, "-c", _PY_PRELUDE, seed, str(code)]
            return ["/bin/sh", "-c", str(code)]
        raise WireError(400, "bad_request", "one of command, commands or code is required")

    @staticmethod
    def _write_files(files: Any, workdir: str) -> None:
        if not isinstance(files, list):
            raise WireError(400, "bad_request", "files must be a list of {path, content}")
        for item in files:
            if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
                raise WireError(400, "bad_request", "each file needs a str path")
            content = str(item.get("content", ""))
            if not content.endswith("\n"):
                content += "\n"  # heredoc semantics
            target = os.path.normpath(os.path.join(workdir, item["path"].lstrip("/")))
            if not target.startswith(workdir + os.sep):
                raise WireError(400, "bad_request", f"path escapes the sandbox: {item['path']}")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(content)


def _json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise WireError(400, "bad_request", f"invalid JSON body: {exc}") from None
    if not isinstance(body, dict):
        raise WireError(400, "bad_request", "the body must be a JSON object")
    return body


def _run_process(argv: list[str], cwd: str, timeout: int) -> tuple[bytes, int]:
    """Merged output and exit status; the whole process group dies at timeout."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return out, proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return f"timeout after {timeout}s".encode(), -1
    except BaseException:
        _kill_group(proc)
        raise


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
