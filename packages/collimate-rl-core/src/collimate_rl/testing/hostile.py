"""Hostile requests, sent as raw bytes over real sockets.

Each probe of :data:`PROBES` is a request a client library would never
write (invalid JSON, wrong types, unknown fields, a body over the limit,
bytes that are not UTF-8, invalid seeds, timeouts that are negative, NaN or
huge, nesting deep enough to break a recursive parser, garbage instead of
HTTP). :func:`probe` sends one and reads the status line: what is *due* is
a 4xx, never a 5xx, never a hang, never a crash. The connection-level
attacks (a slow-loris client, thousands of idle connections) are
:func:`slow_loris` and :func:`idle_flood`.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

__all__ = ["PROBES", "Probe", "idle_flood", "probe", "request", "slow_loris", "status_of"]


def request(method: str, path: str, body: bytes | None = None, *, extra: str = "") -> bytes:
    """An HTTP/1.1 request with a correct ``Content-Length`` (unless
    ``extra`` overrides headers)."""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{extra}"
    if body is not None and "content-length" not in extra.lower():
        head += f"Content-Length: {len(body)}\r\nContent-Type: application/json\r\n"
    return head.encode("latin-1") + b"\r\n" + (body or b"")


def _json(obj: object) -> bytes:
    return json.dumps(obj).encode()


def _exec(**fields: object) -> bytes:
    return _json({"template_id": "py", "code": "print(1)", **fields})


@dataclass(frozen=True)
class Probe:
    name: str
    raw: bytes
    #: what a contained answer is: a status in this set
    due: frozenset[int]


_4XX: Final = frozenset(range(400, 500))
PROBES: Final[tuple[Probe, ...]] = (
    Probe("invalid JSON", request("POST", "/v1/exec", b"{not json"), frozenset({400})),
    Probe("JSON array body", request("POST", "/v1/exec", b"[1,2]"), frozenset({400})),
    Probe("template_id not a string", request("POST", "/v1/exec", _exec(template_id=5)), _4XX),
    Probe("code not a string", request("POST", "/v1/exec", _exec(code=["x"])), frozenset({400})),
    Probe(
        "commands not argv lists",
        request("POST", "/v1/exec", _json({"template_id": "py", "commands": "ls"})),
        frozenset({400}),
    ),
    Probe("unknown field", request("POST", "/v1/exec", _exec(timeout_second=5)), frozenset({400})),
    Probe(
        "unknown field on create",
        request("POST", "/v1/sessions", _json({"template_id": "py", "image": "x"})),
        frozenset({400}),
    ),
    Probe(
        "non-UTF-8 body",
        request("POST", "/v1/exec", b'{"template_id": "py", "code": "\xff\xfe"}'),
        frozenset({400}),
    ),
    Probe("invalid seed", request("POST", "/v1/exec", _exec(seed="xyz")), frozenset({400})),
    Probe("seed not a string", request("POST", "/v1/exec", _exec(seed=12)), frozenset({400})),
    Probe("negative timeout", request("POST", "/v1/exec", _exec(timeout_seconds=-1)), _4XX),
    Probe("zero timeout", request("POST", "/v1/exec", _exec(timeout_seconds=0)), _4XX),
    Probe("huge timeout", request("POST", "/v1/exec", _exec(timeout_seconds=10**12)), _4XX),
    Probe(
        "NaN timeout",
        request("POST", "/v1/exec", b'{"template_id":"py","code":"1","timeout_seconds":NaN}'),
        _4XX,
    ),
    Probe(
        "infinite timeout",
        request("POST", "/v1/exec", b'{"template_id":"py","code":"1","timeout_seconds":1e999}'),
        _4XX,
    ),
    Probe("timeout as a string", request("POST", "/v1/exec", _exec(timeout_seconds="5")), _4XX),
    Probe("NUL in code", request("POST", "/v1/exec", _exec(code="print(1)\x00")), _4XX),
    Probe(
        "NUL in a file path",
        request("POST", "/v1/exec", _exec(files=[{"path": "a\x00b", "content": "x"}])),
        _4XX,
    ),
    Probe("files not a list", request("POST", "/v1/exec", _exec(files="x")), _4XX),
    Probe(
        "nested 100,000 deep",
        request("POST", "/v1/exec", b"[" * 100_000 + b"]" * 100_000),
        _4XX,
    ),
    Probe(
        "huge integer",
        request(
            "POST",
            "/v1/exec",
            b'{"template_id":"py","code":"1","timeout_seconds":' + b"9" * 5000 + b"}",
        ),
        _4XX,
    ),
    Probe("no such template", request("POST", "/v1/exec", _exec(template_id="nope")), _4XX),
    Probe("no such route", request("GET", "/v1/../../etc/passwd"), _4XX),
    Probe("session id traversal", request("GET", "/v1/sessions/..%2F..%2Fetc"), _4XX),
    Probe("wrong method", request("PUT", "/v1/exec", b"{}"), _4XX),
    Probe(
        "body over the limit (announced)",
        request("POST", "/v1/exec", extra="Content-Length: 99999999999\r\n"),
        frozenset({413}),
    ),
    Probe("not HTTP", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n", _4XX),
    Probe("bad header line", b"GET /v1/health HTTP/1.1\r\nno colon here\r\n\r\n", _4XX),
    Probe(
        "headers of 1 MiB",
        b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000 + b"\r\n\r\n",
        _4XX,
    ),
    Probe(
        "bad Content-Length",
        request("POST", "/v1/exec", extra="Content-Length: -5\r\n"),
        _4XX,
    ),
)


def status_of(data: bytes) -> int | None:
    """The status code of an HTTP answer's first line, or ``None``."""
    first = data.split(b"\r\n", 1)[0].split(b" ")
    if len(first) >= 2 and first[0].startswith(b"HTTP/") and first[1].isdigit():
        return int(first[1])
    return None


def probe(host: str, port: int, raw: bytes, *, timeout_s: float = 30.0) -> int | None:
    """Send ``raw``, return the status answered (``None``: closed unanswered).
    Sending may fail half-way (the server answered and closed first): what
    it answered still counts. The socket is not half-closed: the server
    reads end-of-file as "the client left" and drops the work."""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(raw)
        data = b""
        with contextlib.suppress(OSError):
            while len(data) < 65536:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        return status_of(data)


def slow_loris(host: str, port: int, *, seconds: float, in_body: bool = False) -> float:
    """Trickle one request a byte at a time (its headers, or its body after
    whole headers) until the server closes, or ``seconds`` pass. Returns
    how long the connection stayed open."""
    started = time.monotonic()
    body = _exec()
    raw = request("POST", "/v1/exec", body)
    head_len = len(raw) - len(body)
    with socket.create_connection((host, port), timeout=seconds) as sock:
        if in_body:
            sock.sendall(raw[:head_len])
            rest = raw[head_len:]
        else:
            rest = raw
        for i in range(len(rest) - 1):  # never the last byte: the request never ends
            if time.monotonic() - started > seconds:
                break
            try:
                sock.sendall(rest[i : i + 1])
            except OSError:
                break
            if _closed(sock):
                break
            time.sleep(0.05)
    return time.monotonic() - started


def _closed(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.setblocking(True)


@contextlib.contextmanager
def idle_flood(host: str, port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections that say nothing, held open for the block."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            try:
                socks.append(socket.create_connection((host, port), timeout=5))
            except OSError:
                break  # the listener's backlog or our fds ran out: what it held is the flood
        yield socks
    finally:
        for s in socks:
            s.close()


def closed_by_server(socks: list[socket.socket]) -> int:
    """How many of ``socks`` the server has closed."""
    return sum(_closed(s) for s in socks)
