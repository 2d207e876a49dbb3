"""Services reached from outside, on the real local backend: connect URLs,
the WebSocket tunnel behind them, and port forwards carrying HTTP, a
WebSocket and a raw TCP stream to app templates' guest ports."""

from __future__ import annotations

import asyncio
import shutil
import socket
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from collimate_rl import AsyncGatewayClient, GatewayClient, PortForward, Sandbox, open_port_forward
from collimate_rl._websocket import (
    BINARY,
    CLOSE,
    TEXT,
    FrameReader,
    accept_key,
    encode_frame,
    new_key,
)
from collimate_rl.errors import CollimateError, GatewayError
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.connect_tokens import ConnectGrant, ConnectTokens
from collimate_rl.local_backend.wire_errors import WireError
from collimate_rl.testing.guest_services import ECHO_PORT, WEB_PORT, service_templates
from collimate_rl.tunnel import TunnelSocket

PRO, DEMO = "col_pro_tunnel_alice", "col_demo_tunnel_dave"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    services = tempfile.mkdtemp(prefix="collimate-services-")  # reachable by the clones' user
    try:
        with LocalCollimateBackend(
            templates=service_templates(services), api_keys=[PRO, DEMO]
        ) as b:
            yield b
    finally:
        shutil.rmtree(services, ignore_errors=True)


@pytest.fixture
def pro(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    with GatewayClient(PRO, backend.base_url) as c:
        yield c
        for sb in c.list_sandboxes():
            c.delete_sandbox(sb["id"])


def _forward_threads(port: int) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"port-forward-{port}")]


def _http_get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        body: bytes = answer.read()
    return body.decode()


def _websocket_echo(port: int, messages: list[bytes]) -> list[bytes]:
    """A WebSocket client of the guest's ``/ws`` echo, through ``port``."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        key = new_key()
        sock.sendall(
            f"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(4096)
        head, _, rest = head.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        assert accept_key(key).encode() in head
        frames = FrameReader(expect_masked=False)
        frames.feed(rest)
        answers = []
        for message in messages:
            sock.sendall(encode_frame(TEXT, message, mask=True))
            while (frame := frames.next_frame()) is None:
                frames.feed(sock.recv(65536))
            answers.append(frame.payload)
        sock.sendall(encode_frame(CLOSE, b"\x03\xe8", mask=True))
        return answers


def _tcp_echo(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(payload)
        got = b""
        while len(got) < len(payload):
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def test_a_forward_carries_http_websocket_and_raw_tcp(pro: GatewayClient) -> None:
    with (
        pro.session("svc-web") as web,
        pro.session("svc-echo") as echo,
        web.port_forward(WEB_PORT) as fwd_web,
        echo.port_forward(ECHO_PORT) as fwd_echo,
    ):
        assert isinstance(fwd_web, PortForward)
        assert fwd_web.url == f"http://127.0.0.1:{fwd_web.local_port}"
        assert fwd_web.port == fwd_web.local_port and fwd_web.remote_port == WEB_PORT
        # HTTP, several requests: one tunnel per accepted connection
        for path in ("/a", "/b/c", "/health"):
            assert _http_get(fwd_web.url + path) == f"hello from {path}"
        # a WebSocket of the guest's own, inside the tunnel's
        assert _websocket_echo(fwd_web.local_port, [b"one", b"two" * 1000]) == [
            b"echo:one",
            b"echo:" + b"two" * 1000,
        ]
        # raw TCP, larger than one frame, byte for byte
        payload = bytes(range(256)) * 1024
        assert _tcp_echo(fwd_echo.local_port, payload) == payload
        assert fwd_web.errors == 0 and fwd_echo.errors == 0


def test_closing_a_forward_leaves_no_listener_and_no_thread(pro: GatewayClient) -> None:
    before = set(threading.enumerate())
    with pro.session("svc-echo") as echo:
        fwd = echo.port_forward(ECHO_PORT)
        port = fwd.local_port
        assert _tcp_echo(port, b"ping") == b"ping"
        idle = socket.create_connection(("127.0.0.1", port), timeout=30)  # a tunnel left open
        idle.sendall(b"still here")
        assert idle.recv(16) == b"still here"
        assert _forward_threads(port)
        fwd.close()
        assert fwd.closed
        assert idle.recv(16) == b""  # the open tunnel was ended with the forward
        idle.close()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5)
        assert _forward_threads(port) == []
        # (a forward runs no event loop: ``asyncio_N`` threads are the
        # in-process server's executor workers, the first of them started
        # whenever its periodic kernel reaper first runs)
        left = [t for t in set(threading.enumerate()) - before if t.is_alive()]
        assert [t for t in left if not t.name.startswith("asyncio_")] == []
        fwd.close()  # idempotent


def test_connect_url_answers_a_loopback_ws_url_bound_to_its_port(pro: GatewayClient) -> None:
    sid = pro.create_sandbox("svc-echo")["id"]
    answer = pro.connect_url(sid, ECHO_PORT, ttl_seconds=99999)
    url = urlsplit(answer["url"])
    assert (url.scheme, url.hostname, url.path) == ("ws", "127.0.0.1", "/connect")
    query = parse_qs(url.query)
    assert query["port"] == [str(ECHO_PORT)] and query["t"][0]
    assert answer["expires_at"].endswith("Z")
    tunnel = TunnelSocket(answer["url"])  # the URL itself is the credential: no key sent
    try:
        tunnel.send(b"raw bytes")
        assert tunnel.recv() == b"raw bytes"
    finally:
        tunnel.close()


def test_an_open_tunnel_keeps_its_sandbox_from_idling(
    backend: LocalCollimateBackend, pro: GatewayClient
) -> None:
    sid = pro.create_sandbox("svc-echo")["id"]
    assert backend.server.service is not None
    session = backend.server.service.sessions.get(sid)
    assert session.busy == 0
    tunnel = TunnelSocket(pro.connect_url(sid, ECHO_PORT)["url"])
    try:
        tunnel.send(b"x")
        assert tunnel.recv() == b"x"
        assert session.busy == 1  # never reaped as idle while connected
    finally:
        tunnel.close()
    deadline = time.monotonic() + 30
    while session.busy and time.monotonic() < deadline:  # the server sees the close
        time.sleep(0.05)
    assert session.busy == 0


def test_forged_and_expired_tokens_are_refused(pro: GatewayClient) -> None:
    sid = pro.create_sandbox("svc-echo")["id"]
    url = pro.connect_url(sid, ECHO_PORT)["url"]
    signature = url.partition("&t=")[2].partition(".")[2]
    forged = url.replace(signature, ("A" if signature[0] != "A" else "B") + signature[1:])
    other_port = url.replace(f"port={ECHO_PORT}", "port=7001")
    for bad in (forged, other_port, url.partition("&t=")[0] + "&t=not-a-token"):
        with pytest.raises(ConnectionError, match="401"):
            TunnelSocket(bad)
    short = pro.connect_url(sid, ECHO_PORT, ttl_seconds=1)["url"]
    time.sleep(1.2)  # let it expire (a wait, not a timing assertion)
    with pytest.raises(ConnectionError, match="401"):
        TunnelSocket(short)


def test_a_refused_tunnel_closes_its_connection(
    backend: LocalCollimateBackend, pro: GatewayClient
) -> None:
    host, port = urlsplit(backend.base_url).hostname, urlsplit(backend.base_url).port
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(
            b"GET /connect?port=7000&t=forged.token HTTP/1.1\r\nHost: x\r\n"
            b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 401"), answer[:100]
    assert b"connection: close" in answer.lower()


def test_an_unexposed_port_is_409(pro: GatewayClient) -> None:
    sid = pro.create_sandbox("svc-echo")["id"]
    for call in (
        lambda: pro.connect_url(sid, 9999),
        lambda: pro.port_forward(sid, 9999),
    ):
        with pytest.raises(GatewayError) as got:
            call()
        assert (got.value.status, got.value.code) == (409, "port_not_exposed")
    plain = pro.create_sandbox("sh")["id"]  # no app server: nothing exposed
    with pytest.raises(GatewayError) as got:
        pro.connect_url(plain, ECHO_PORT)
    assert got.value.code == "port_not_exposed"


def test_a_demo_key_is_refused_with_the_tier_error(backend: LocalCollimateBackend) -> None:
    with GatewayClient(DEMO, backend.base_url) as demo, demo.session("py") as sess:
        with pytest.raises(GatewayError) as got:
            sess.connect_url(ECHO_PORT)
        assert (got.value.status, got.value.code) == (403, "network_requires_pro")
        assert "pro" in str(got.value)
        with pytest.raises(GatewayError):
            sess.port_forward(ECHO_PORT)


def test_cdp_mode_needs_the_devtools_port_and_a_devtools_server(pro: GatewayClient) -> None:
    """``cdp_url`` asks for port 9222 in ``cdp`` mode: a sandbox without it is
    409; a ``cdp`` URL to a port that is no DevTools server is refused at the
    upgrade (502), never relayed as raw bytes. (The browser template's own
    DevTools are driven through it in test_browser_template.py.)"""
    sid = pro.create_sandbox("svc-web")["id"]
    with pytest.raises(GatewayError) as got:
        pro.cdp_url(sid)
    assert (got.value.status, got.value.code) == (409, "port_not_exposed")
    url = pro.connect_url(sid, WEB_PORT, protocol="cdp")["url"]
    assert parse_qs(urlsplit(url).query)["protocol"] == ["cdp"]
    with pytest.raises(ConnectionError, match="502"):
        TunnelSocket(url)
    plain = pro.connect_url(sid, WEB_PORT)["url"]
    assert "protocol" not in parse_qs(urlsplit(plain).query)  # tcp: the URL stays clean
    with pytest.raises(ValueError):
        pro.connect_url(sid, 70000)
    with pytest.raises(ValueError):
        pro.connect_url(sid, WEB_PORT, protocol="udp")


def test_a_sandbox_on_the_gateway_forwards_and_on_a_daemon_says_why(
    backend: LocalCollimateBackend, pro: GatewayClient
) -> None:
    with Sandbox("svc-echo", client=pro) as sb, sb.port_forward(ECHO_PORT) as fwd:
        assert _tcp_echo(fwd.local_port, b"via Sandbox") == b"via Sandbox"
        assert sb.connect_url(ECHO_PORT).startswith("ws://")
    from collimate_rl import CollimateClient

    with CollimateClient(backend.base_url) as daemon, Sandbox("sh", client=daemon) as sb:
        with pytest.raises(CollimateError, match="gateway client"):
            sb.connect_url(ECHO_PORT)
        with pytest.raises(CollimateError, match="gateway client"):
            sb.port_forward(ECHO_PORT)


def test_async_session_forwards(backend: LocalCollimateBackend) -> None:
    async def main() -> str:
        async with (
            AsyncGatewayClient(PRO, backend.base_url) as client,
            client.session("svc-web") as sess,
        ):
            fwd = await sess.port_forward(WEB_PORT)
            async with fwd:
                body = await asyncio.to_thread(_http_get, fwd.url + "/async")
            assert fwd.closed
            assert (await sess.connect_url(WEB_PORT)).startswith("ws://")
            return body

    assert asyncio.run(main()) == "hello from /async"


def test_open_port_forward_counts_what_it_could_not_tunnel() -> None:
    def mint() -> str:
        raise GatewayError("no", 409, "port_not_exposed")

    with (
        open_port_forward(mint, 1234) as fwd,
        socket.create_connection(("127.0.0.1", fwd.local_port), timeout=30) as sock,
    ):
        assert sock.recv(16) == b""  # closed: nothing to tunnel to
    assert fwd.errors == 1 and isinstance(fwd.last_error, GatewayError)


def test_tokens_bind_sandbox_port_and_expiry() -> None:
    now = [1000.0]
    tokens = ConnectTokens(clock=lambda: now[0])
    grant = ConnectGrant("sb_1", "t", 8000, "tcp", 1060.0)
    token = tokens.mint(grant)
    assert tokens.check(token, 8000) == grant
    for bad, port in ((token, 8001), (token + "x", 8000), ("x" + token, 8000), ("", 8000)):
        with pytest.raises(WireError) as got:
            tokens.check(bad, port)
        assert got.value.status == 401
    now[0] = 1060.0
    with pytest.raises(WireError):
        tokens.check(token, 8000)
    with pytest.raises(WireError):  # another server's secret
        ConnectTokens(clock=lambda: 0.0).check(token, 8000)


def test_frames_round_trip_masked_and_split() -> None:
    reader = FrameReader(expect_masked=True)
    big = bytes(range(256)) * 300
    wire = encode_frame(BINARY, big, mask=True) + encode_frame(TEXT, b"hi", mask=True)
    for i in range(0, len(wire), 1000):  # arriving in pieces
        reader.feed(wire[i : i + 1000])
    first = reader.next_frame()
    second = reader.next_frame()
    assert first is not None and (first.opcode, first.payload) == (BINARY, big)
    assert second is not None and (second.opcode, second.payload) == (TEXT, b"hi")
    assert reader.next_frame() is None
    with pytest.raises(ValueError):  # a server must not read unmasked client frames
        strict = FrameReader(expect_masked=True)
        strict.feed(encode_frame(BINARY, b"x", mask=False))
        strict.next_frame()
    # RFC 6455 §1.3's own example
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def test_service_templates_write_their_script(tmp_path: Path) -> None:
    templates = service_templates(tmp_path / "svc")
    assert {t["id"]: t["ports"] for t in templates} == {
        "svc-web": [WEB_PORT],
        "svc-echo": [ECHO_PORT],
    }
    assert "asyncio.run(main())" in (tmp_path / "svc" / "guest_services.py").read_text()
