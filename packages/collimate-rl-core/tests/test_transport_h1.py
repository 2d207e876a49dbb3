"""The SDK's own HTTP/1.1 clients (``_transport.h1``, async, and
``h1_sync``, blocking) against raw
servers on loopback and unix sockets that answer exactly as scripted:
framing (length, chunked, to the end), keep-alive and its loss, timeouts,
failures mapped to httpx's errors, cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from collimate_rl import AsyncCollimateClient, CollimateClient
from collimate_rl._transport.h1 import AsyncH1Transport
from collimate_rl._transport.h1_sync import H1Transport

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


class RawServer:
    """Runs ``script(reader, writer, connection_number)`` per connection."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[bytes] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.script(reader, writer, self.connections)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        body = await reader.readexactly(length)
        self.requests.append(head + body)
        return body


def _answer(status: str, body: bytes, *headers: str) -> bytes:
    head = [f"HTTP/1.1 {status}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def _with_server(
    script: Callable[[RawServer], Script], test: Callable[[RawServer, str], Awaitable[None]]
) -> None:
    holder: list[RawServer] = []
    server_obj = RawServer(lambda r, w, n: script(holder[0])(r, w, n))
    holder.append(server_obj)
    server = await asyncio.start_server(server_obj._serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await test(server_obj, f"http://127.0.0.1:{port}")
    finally:
        server.close()
        await server.wait_closed()


def _get(url: str, timeout: float = 5.0) -> httpx.Request:
    return httpx.Request(
        "GET",
        url + "/v1/health",
        extensions={"timeout": {"connect": timeout, "read": timeout, "write": timeout}},
    )


def test_length_chunked_and_to_the_end_bodies_are_read_whole() -> None:
    def script(srv: RawServer) -> Script:
        async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            await srv.read_request(reader)
            writer.write(_answer("200 OK", b'{"a":1}', "Content-Length: 7"))
            await srv.read_request(reader)
            writer.write(
                _answer("100 Continue", b"")
                + _answer("200 OK", b"", "Transfer-Encoding: chunked")
                + b'4;ext=1\r\n{"b"\r\n3\r\n:2}\r\n0\r\nX-Trailer: t\r\n\r\n'
            )
            await srv.read_request(reader)
            writer.write(_answer("200 OK", b'{"c":3}', "Connection: close"))
            await writer.drain()

        return run

    async def test(srv: RawServer, url: str) -> None:
        pool = AsyncH1Transport(url)
        try:
            first = await pool.handle_async_request(_get(url))
            second = await pool.handle_async_request(_get(url))
            third = await pool.handle_async_request(_get(url))
            assert (first.json(), second.json(), third.json()) == ({"a": 1}, {"b": 2}, {"c": 3})
            assert "transfer-encoding" not in second.headers
            assert srv.connections == 1  # kept alive until the server said close
            await pool.handle_async_request(_get(url))  # ...then a new connection
            assert srv.connections == 2
        finally:
            await pool.aclose()

    asyncio.run(_with_server(script, test))


def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    def script(srv: RawServer) -> Script:
        async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            await srv.read_request(reader)
            writer.write(_answer("200 OK", b"{}", "Content-Length: 2"))
            await writer.drain()  # and then close, keep-alive or not

        return run

    async def test(srv: RawServer, url: str) -> None:
        pool = AsyncH1Transport(url)
        try:
            for _ in range(3):
                assert (await pool.handle_async_request(_get(url))).status_code == 200
                await until(lambda: all(conn.eof for conn in pool._idle))  # closed while idle
            assert srv.connections == 3
        finally:
            await pool.aclose()

    asyncio.run(_with_server(script, test))


def test_failures_map_to_httpx_errors() -> None:
    def script(srv: RawServer) -> Script:
        async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            await srv.read_request(reader)
            if n == 1:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")
                await writer.drain()
            elif n == 2:
                writer.write(b"SMTP ready\r\n\r\n")
                await writer.drain()
            else:
                await asyncio.sleep(10)  # never answers

        return run

    async def test(srv: RawServer, url: str) -> None:
        pool = AsyncH1Transport(url)
        try:
            with pytest.raises(httpx.RemoteProtocolError, match="closed the connection"):
                await pool.handle_async_request(_get(url))
            with pytest.raises(httpx.RemoteProtocolError, match="not an HTTP"):
                await pool.handle_async_request(_get(url))
            with pytest.raises(httpx.ReadTimeout):
                await pool.handle_async_request(_get(url, timeout=0.2))
            assert pool._idle == [] and pool._open == set()  # none of them kept
        finally:
            await pool.aclose()
        dead = _refusing_url()
        with pytest.raises(httpx.ConnectError):
            await AsyncH1Transport(dead).handle_async_request(_get(dead))

    asyncio.run(_with_server(script, test))


def test_a_cancelled_request_drops_its_connection() -> None:
    received, given_up = asyncio.Event(), asyncio.Event()

    def script(srv: RawServer) -> Script:
        async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            await srv.read_request(reader)
            if n == 1:
                received.set()
                await given_up.wait()  # answered late, to a request already given up
            writer.write(_answer("200 OK", b'{"n":%d}' % n, "Content-Length: 7"))
            await srv.read_request(reader)

        return run

    async def test(srv: RawServer, url: str) -> None:
        pool = AsyncH1Transport(url)
        try:
            task = asyncio.ensure_future(pool.handle_async_request(_get(url)))
            await received.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            given_up.set()
            # the late answer must not be read as the next request's
            assert (await pool.handle_async_request(_get(url))).json() == {"n": 2}
        finally:
            await pool.aclose()

    asyncio.run(_with_server(script, test))


def test_only_plain_http_is_spoken() -> None:
    for pool in (AsyncH1Transport, H1Transport):
        with pytest.raises(ValueError, match="plain http"):
            pool("https://example.invalid")


def test_the_async_client_talks_over_a_unix_socket() -> None:
    async def main() -> None:
        srv = RawServer(lambda r, w, n: None)  # type: ignore[arg-type,return-value]

        async def script(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int
        ) -> None:
            while True:
                await srv.read_request(reader)
                writer.write(_answer("200 OK", b'{"status":"ok"}', "Content-Length: 15"))

        srv.script = script
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "d.sock")
            server = await asyncio.start_unix_server(srv._serve, path)
            try:
                async with AsyncCollimateClient(unix_socket=path) as client:
                    for _ in range(3):
                        assert (await client.health())["status"] == "ok"
                assert srv.connections == 1
                assert srv.requests[0].startswith(b"GET /v1/health HTTP/1.1\r\n")
            finally:
                server.close()
                await server.wait_closed()

    asyncio.run(main())


def _refusing_url() -> str:
    """A loopback URL on a port that was just free (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# -- the blocking twin (h1_sync), against a threaded raw server -------------------


class ThreadedRawServer:
    """A blocking raw server: ``script(rfile, sock, connection_number)`` per
    connection, each on a thread of its own."""

    def __init__(self, script: Callable[[Any, socket.socket, int], None]) -> None:
        self.script = script
        self.connections = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(sock, self.connections), daemon=True).start()

    def _serve(self, sock: socket.socket, n: int) -> None:
        with sock, sock.makefile("rb") as rfile, contextlib.suppress(OSError, ValueError):
            self.script(rfile, sock, n)

    def close(self) -> None:
        self.listener.close()


async def until(pred: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Let the loop run until ``pred()`` holds (a loop turn at a time)."""
    deadline = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < deadline, "condition never held"
        await asyncio.sleep(0)


def _read_request_blocking(rfile: Any) -> bytes:
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = rfile.readline()
        if not line:
            raise ValueError("closed")
        head += line
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return bytes(rfile.read(length))


def test_blocking_bodies_keep_alive_and_close() -> None:
    def script(rfile: Any, sock: socket.socket, n: int) -> None:
        _read_request_blocking(rfile)
        sock.sendall(_answer("200 OK", b'{"a":1}', "Content-Length: 7"))
        _read_request_blocking(rfile)
        sock.sendall(
            _answer("200 OK", b"", "Transfer-Encoding: chunked")
            + b'4\r\n{"b"\r\n3\r\n:2}\r\n0\r\n\r\n'
        )
        _read_request_blocking(rfile)
        sock.sendall(_answer("200 OK", b'{"c":3}', "Connection: close"))

    srv = ThreadedRawServer(script)
    pool = H1Transport(srv.url)
    try:
        got = [pool.handle_request(_get(srv.url)).json() for _ in range(3)]
        assert got == [{"a": 1}, {"b": 2}, {"c": 3}] and srv.connections == 1
        assert pool.handle_request(_get(srv.url)).json() == {"a": 1}  # a new connection
        assert srv.connections == 2
    finally:
        pool.close()
        srv.close()


def test_blocking_failures_map_to_httpx_errors() -> None:
    held_idle, closed = threading.Event(), threading.Event()

    def script(rfile: Any, sock: socket.socket, n: int) -> None:
        _read_request_blocking(rfile)
        if n == 1:
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")
        elif n == 2:
            sock.sendall(b"SMTP ready\r\n\r\n")
        elif n == 3:
            time.sleep(2)  # never answers in time
        else:
            sock.sendall(_answer("200 OK", b"{}", "Content-Length: 2"))
            if n == 4:  # then closes while the client holds it idle
                held_idle.wait(30)
                sock.shutdown(socket.SHUT_RDWR)  # (a FIN now: rfile still holds the fd)
                closed.set()

    srv = ThreadedRawServer(script)
    pool = H1Transport(srv.url)
    try:
        with pytest.raises(httpx.RemoteProtocolError, match="closed the connection"):
            pool.handle_request(_get(srv.url))
        with pytest.raises(httpx.RemoteProtocolError, match="not an HTTP"):
            pool.handle_request(_get(srv.url))
        with pytest.raises(httpx.ReadTimeout):
            pool.handle_request(_get(srv.url, timeout=0.2))
        assert pool._idle == []
        assert pool.handle_request(_get(srv.url)).status_code == 200
        held_idle.set()
        assert closed.wait(30)
        assert pool.handle_request(_get(srv.url)).status_code == 200  # not the closed one
        assert srv.connections == 5
        dead = _refusing_url()
        with pytest.raises(httpx.ConnectError):
            H1Transport(dead).handle_request(_get(dead))
    finally:
        pool.close()
        srv.close()


def test_threads_share_the_blocking_pool() -> None:
    def script(rfile: Any, sock: socket.socket, n: int) -> None:
        while True:
            body = _read_request_blocking(rfile)
            sock.sendall(_answer("200 OK", body, f"Content-Length: {len(body)}"))

    srv = ThreadedRawServer(script)
    pool = H1Transport(srv.url)
    answers: list[bytes] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        for j in range(5):
            payload = b'{"i":%d,"j":%d}' % (i, j)
            request = httpx.Request(
                "POST", srv.url + "/v1/exec", content=payload, extensions={"timeout": {}}
            )
            content = pool.handle_request(request).content
            with lock:
                answers.append(content)

    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(answers) == sorted(
            b'{"i":%d,"j":%d}' % (i, j) for i in range(8) for j in range(5)
        )
        assert srv.connections <= 8  # reused, never one per request
    finally:
        pool.close()
        srv.close()


def test_the_sync_client_talks_over_a_unix_socket(tmp_path: Any) -> None:
    path = str(tmp_path / "d.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    seen: list[bytes] = []

    def serve() -> None:
        sock, _ = listener.accept()
        with sock, sock.makefile("rb") as rfile, contextlib.suppress(OSError, ValueError):
            while True:
                _read_request_blocking(rfile)
                seen.append(b"request")
                sock.sendall(_answer("200 OK", b'{"status":"ok"}', "Content-Length: 15"))

    threading.Thread(target=serve, daemon=True).start()
    try:
        with CollimateClient(unix_socket=path) as client:
            for _ in range(3):
                assert client.health()["status"] == "ok"
        assert len(seen) == 3  # all on the one connection the server accepted
    finally:
        listener.close()


def test_the_lean_transports_work_mounted_on_httpx_clients() -> None:
    """They are httpx transports like any other: an ``httpx.Client`` /
    ``httpx.AsyncClient`` built on them talks to a real local backend, over
    TCP and over the unix socket."""
    from collimate_rl.local_backend import LocalCollimateBackend

    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "serve.sock")
        with LocalCollimateBackend(socket_path=sock) as backend:
            for unix in (None, sock):
                transport = H1Transport(backend.base_url, unix)
                with httpx.Client(transport=transport, base_url=backend.base_url) as client:
                    assert client.get("/v1/health").json()["status"] == "ok"
                    answer = client.post(
                        "/v1/exec", json={"template_id": "py", "code": "print(6*7)"}
                    )
                    assert answer.json()["stdout"].strip() == "42"

                async def main(unix: str | None = unix) -> None:
                    transport = AsyncH1Transport(backend.base_url, unix)
                    async with httpx.AsyncClient(
                        transport=transport, base_url=backend.base_url
                    ) as client:
                        health = await client.get("/v1/health")
                        assert health.json()["status"] == "ok"

                asyncio.run(main())
