"""The async SDK's own HTTP/1.1 client (``_transport.h1``) against raw
servers on loopback and unix sockets that answer exactly as scripted:
framing (length, chunked, to the end), keep-alive and its loss, timeouts,
failures mapped to httpx's errors, cancellation."""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
from collections.abc import Awaitable, Callable

import httpx
import pytest

from collimate_rl import AsyncCollimateClient
from collimate_rl._transport.h1 import H1Pool

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
        pool = H1Pool(url)
        try:
            first = await pool.send(_get(url))
            second = await pool.send(_get(url))
            third = await pool.send(_get(url))
            assert (first.json(), second.json(), third.json()) == ({"a": 1}, {"b": 2}, {"c": 3})
            assert "transfer-encoding" not in second.headers
            assert srv.connections == 1  # kept alive until the server said close
            await pool.send(_get(url))  # ...then a new connection
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
        pool = H1Pool(url)
        try:
            for _ in range(3):
                assert (await pool.send(_get(url))).status_code == 200
                await asyncio.sleep(0.05)  # the close reaches us while idle
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
        pool = H1Pool(url)
        try:
            with pytest.raises(httpx.RemoteProtocolError, match="closed the connection"):
                await pool.send(_get(url))
            with pytest.raises(httpx.RemoteProtocolError, match="not an HTTP"):
                await pool.send(_get(url))
            with pytest.raises(httpx.ReadTimeout):
                await pool.send(_get(url, timeout=0.2))
            assert pool._idle == [] and pool._open == set()  # none of them kept
        finally:
            await pool.aclose()
        dead = _refusing_url()
        with pytest.raises(httpx.ConnectError):
            await H1Pool(dead).send(_get(dead))

    asyncio.run(_with_server(script, test))


def test_a_cancelled_request_drops_its_connection() -> None:
    def script(srv: RawServer) -> Script:
        async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            await srv.read_request(reader)
            if n == 1:
                await asyncio.sleep(0.3)  # answered late, to a request already given up
            writer.write(_answer("200 OK", b'{"n":%d}' % n, "Content-Length: 7"))
            await srv.read_request(reader)

        return run

    async def test(srv: RawServer, url: str) -> None:
        pool = H1Pool(url)
        try:
            task = asyncio.ensure_future(pool.send(_get(url)))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # the late answer must not be read as the next request's
            assert (await pool.send(_get(url))).json() == {"n": 2}
        finally:
            await pool.aclose()

    asyncio.run(_with_server(script, test))


def test_only_plain_http_is_spoken() -> None:
    with pytest.raises(ValueError, match="plain http"):
        H1Pool("https://example.invalid")


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
