"""Serve a JSON handler on a real loopback TCP port or a real unix socket.

Tests of the transports must meet real sockets where users do (keep-alive,
unix-socket routing, a process forked with a live pool). These servers are
the stdlib's threading HTTP server around any ``handle(method, path, body)
-> (status, payload)`` function, e.g. :meth:`FakeDaemon.handle`; each is a
context manager whose exit stops the thread and removes the socket file.
"""

from __future__ import annotations

import contextlib
import json
import os
import socketserver
import tempfile
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Handler", "serve_tcp", "serve_unix"]

Handler = Callable[[str, str, bytes], tuple[int, Any]]


def _request_handler(
    handle: Handler, connections: list[int] | None, *, tcp: bool
) -> type[BaseHTTPRequestHandler]:
    class _JSONHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's pool expects
        # Headers and body leave in two writes: without TCP_NODELAY, Nagle
        # and the client's delayed ACK add ~40 ms to every answer.
        disable_nagle_algorithm = tcp

        def setup(self) -> None:  # once per accepted connection
            super().setup()
            if connections is not None:
                connections.append(len(connections))

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            status, payload = handle(self.command, self.path.split("?", 1)[0], raw)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:  # quiet tests
            return

        def address_string(self) -> str:  # unix peers have no (host, port)
            return "local"

    return _JSONHandler


class _UnixHTTPServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def get_request(self) -> tuple[Any, Any]:
        sock, _ = super().get_request()
        return sock, ("local", 0)  # BaseHTTPRequestHandler wants a (host, port)


@contextlib.contextmanager
def _running(server: socketserver.BaseServer) -> Iterator[None]:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextlib.contextmanager
def serve_tcp(
    handle: Handler, host: str = "127.0.0.1", *, connections: list[int] | None = None
) -> Iterator[str]:
    """Serve on an ephemeral loopback port; yields the base URL.
    ``connections`` (when given) gets one item per accepted connection, so a
    test can tell a pooled keep-alive connection from reconnects."""
    server = ThreadingHTTPServer((host, 0), _request_handler(handle, connections, tcp=True))
    server.daemon_threads = True
    port = server.server_address[1]
    with _running(server):
        yield f"http://{host}:{port}"


@contextlib.contextmanager
def serve_unix(
    handle: Handler, path: str | None = None, *, connections: list[int] | None = None
) -> Iterator[str]:
    """Serve on a unix socket (a fresh temporary path unless given); yields
    the socket path, removed again on exit."""
    tmpdir = None
    if path is None:
        tmpdir = tempfile.mkdtemp(prefix="collimate-sock-")
        path = os.path.join(tmpdir, "serve.sock")
    server = _UnixHTTPServer(path, _request_handler(handle, connections, tcp=False))
    try:
        with _running(server):
            yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        if tmpdir is not None:
            os.rmdir(tmpdir)
