"""The browser template and ``connect_browser``: Playwright in this process
drives the Chromium of a real namespaced local backend's sandbox over CDP,
reads pages the sandbox serves, and cannot make it reach the host."""

from __future__ import annotations

import base64
import http.client
import http.server
import json
import os
import socket
import threading
from collections.abc import Iterator

import pytest

from collimate_rl import (
    CollimateClient,
    CollimateError,
    GatewayClient,
    Sandbox,
    Session,
    connect_browser,
)
from collimate_rl.browser import _cdp_endpoint
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.browser_template import BROWSER_TEMPLATE
from collimate_rl.testing.browser import need_browser
from collimate_rl.testing.engine import namespaced_backend

pytestmark = pytest.mark.namespaces

PRO = "col_pro_browser-template"

PAGE = b"<!doctype html><title>served in the sandbox</title><p>hi</p>"
# a server the sandbox starts on its own loopback, for the life of the session
SERVE = (
    "mkdir -p /tmp/site && cd /tmp/site && printf '%s' \"$PAGE\" > index.html && "
    "(nohup python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &) && "
    'for i in $(seq 100); do python3 -c "import urllib.request as u; '
    "u.urlopen('http://127.0.0.1:8000/', timeout=1)\" 2>/dev/null && exit 0; sleep 0.1; done; "
    "exit 1"
)


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    need_browser()
    with namespaced_backend(api_keys=[PRO]) as server:
        yield server


@pytest.fixture
def sandbox(backend: LocalCollimateBackend) -> Iterator[Sandbox]:
    with (
        CollimateClient(backend.base_url) as client,
        Sandbox(BROWSER_TEMPLATE, client=client, default_timeout=60) as sb,
    ):
        yield sb


def test_connect_browser_reads_pages_the_sandbox_serves(sandbox: Sandbox) -> None:
    sandbox.upload_bytes("/tmp/page.html", b"<title>a file of the sandbox</title>")
    served = sandbox.exec(command=f"PAGE='{PAGE.decode()}'; {SERVE}")
    assert served.exit_code == 0, served.stdout
    browser = connect_browser(sandbox)
    try:
        page = browser.new_page()
        page.goto("http://127.0.0.1:8000/")  # the sandbox's loopback, not ours
        assert page.title() == "served in the sandbox"
        page.goto("file:///tmp/page.html")  # its private /tmp
        assert page.title() == "a file of the sandbox"
    finally:
        browser.close()


def test_a_cdp_url_is_taken_as_is_and_reconnects_to_the_same_browser(sandbox: Sandbox) -> None:
    url, forward = _cdp_endpoint(sandbox, ttl=60)
    assert forward is None  # the daemon wire: the address the backend published
    first = connect_browser(url)
    try:
        # (a page of the browser's default context: contexts Playwright made
        # itself are closed with its connection)
        page = first.contexts[0].new_page()
        page.set_content("<title>left open</title>")
    finally:
        first.close()  # ends this connection only: the sandbox's Chromium runs on
    second = connect_browser(url)
    try:
        titles = [p.title() for c in second.contexts for p in c.pages]
        assert "left open" in titles
    finally:
        second.close()


def test_over_a_gateway_client_the_port_is_forwarded_through_the_tunnel(
    backend: LocalCollimateBackend,
) -> None:
    with (
        GatewayClient(api_key=PRO, base_url=backend.base_url) as client,
        Sandbox(BROWSER_TEMPLATE, client=client) as sb,
    ):
        url, forward = _cdp_endpoint(sb, ttl=60)
        assert forward is not None
        try:
            assert url == forward.url != f"http://{sb.endpoints['9222']}"
            browser = connect_browser(url)  # Playwright through the forward
            try:
                page = browser.new_page()
                page.set_content("<title>through the tunnel</title>")
                assert page.title() == "through the tunnel"
            finally:
                browser.close()
        finally:
            forward.close()
        sb.upload_bytes("/tmp/t.html", b"<title>a sandbox over the gateway</title>")
        browser = connect_browser(sb)  # the forward is connect_browser's own
        try:
            page = browser.new_page()
            page.goto("file:///tmp/t.html")
            assert page.title() == "a sandbox over the gateway"
        finally:
            browser.close()


def test_a_gateway_session_connects_too(backend: LocalCollimateBackend) -> None:
    with (
        GatewayClient(api_key=PRO, base_url=backend.base_url) as client,
        Session(client, BROWSER_TEMPLATE) as session,
    ):
        browser = connect_browser(session)  # creates the sandbox: no exec ran yet
        try:
            assert session.id is not None
            written = session.exec(command="printf '<title>via the gateway</title>' > /tmp/g.html")
            assert written.exit_code == 0
            page = browser.new_page()
            page.goto("file:///tmp/g.html")
            assert page.title() == "via the gateway"
        finally:
            browser.close()


def test_a_cdp_url_is_what_connect_over_cdp_takes(backend: LocalCollimateBackend) -> None:
    """``cdp_url()`` (sync and async) is a ``ws://`` URL that Playwright's
    ``connect_over_cdp`` dials as is (``connect_browser`` hands a URL to it
    unchanged): the tunnel's ``cdp`` mode finds the browser's DevTools
    socket and relays its messages, large ones included."""
    import asyncio

    from collimate_rl import AsyncGatewayClient

    with (
        GatewayClient(api_key=PRO, base_url=backend.base_url) as client,
        Session(client, BROWSER_TEMPLATE) as session,
    ):
        assert session.exec(command="true").exit_code == 0
        url = session.cdp_url(ttl_seconds=120)
        assert url.startswith("ws://") and "protocol=cdp" in url
        big = "x" * 300_000  # a message over the byte tunnel's 64 KiB chunks
        browser = connect_browser(url)
        try:
            page = browser.new_page()
            page.set_content(f"<title>over cdp</title><p id=b>{big}</p>")
            assert page.title() == "over cdp"
            assert page.inner_text("#b") == big
        finally:
            browser.close()

        async def mint() -> str:
            async with AsyncGatewayClient(api_key=PRO, base_url=backend.base_url) as aclient:
                return await aclient.cdp_url(str(session.id), ttl_seconds=60)

        # (the browser closed, its driver stopped: this thread runs a loop again)
        again = asyncio.run(mint())
        browser = connect_browser(again)
        try:
            assert browser.contexts, "the same Chromium, reached again"
        finally:
            browser.close()


def _devtools_version(address: str, host_header: str) -> tuple[int, bytes]:
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.putrequest("GET", "/json/version", skip_host=True)
        conn.putheader("Host", host_header)
        conn.endheaders()
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def test_devtools_answers_a_client_through_a_forward_on_another_port(sandbox: Sandbox) -> None:
    """A port forward (or a tunnel) presents ``Host: 127.0.0.1:<its own
    port>``: DevTools answers it, and names its socket on that address, so
    the client dials the forward again; a WebSocket client that sends an
    ``Origin`` is admitted (``--remote-allow-origins=*``). A host name is
    refused by Chromium itself (DNS rebinding), which is why forwards must
    present an address."""
    address = sandbox.endpoints["9222"]
    status, body = _devtools_version(address, "127.0.0.1:1")
    assert status == 200, body
    socket_url = json.loads(body)["webSocketDebuggerUrl"]
    assert socket_url.startswith("ws://127.0.0.1:1/devtools/browser/")
    status, body = _devtools_version(address, "sandbox.example:9222")
    assert status == 500 and b"not an IP address or localhost" in body

    host, port = address.rsplit(":", 1)
    path = socket_url.split("/", 3)[3]
    key = base64.b64encode(os.urandom(16)).decode()
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(
            (
                f"GET /{path} HTTP/1.1\r\nHost: 127.0.0.1:1\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\nOrigin: http://client.example\r\n\r\n"
            ).encode()
        )
        status_line = conn.recv(4096).split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 101"), status_line


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        body = b"<title>the host</title>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def host_page() -> Iterator[tuple[int, list[str]]]:
    """A page on the host's loopback (only there: nothing else is probed)."""
    seen: list[str] = []
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


def test_the_sandbox_chromium_cannot_reach_the_host(
    sandbox: Sandbox, host_page: tuple[int, list[str]]
) -> None:
    from playwright.sync_api import Error as PlaywrightError

    port, seen = host_page
    browser = connect_browser(sandbox)
    try:
        page = browser.new_page()
        with pytest.raises(PlaywrightError, match="ERR_CONNECTION_REFUSED"):
            page.goto(f"http://127.0.0.1:{port}/marker", timeout=15_000)
    finally:
        browser.close()
    assert seen == []  # not one request reached the host's server


def test_a_sandbox_without_devtools_is_refused_before_playwright(
    backend: LocalCollimateBackend,
) -> None:
    with (
        CollimateClient(backend.base_url) as client,
        Sandbox("sh", client=client) as sb,
        pytest.raises(CollimateError, match="no endpoint for port 9222"),
    ):
        connect_browser(sb)


def test_connect_browser_takes_only_sandboxes_sessions_and_urls() -> None:
    with pytest.raises(TypeError, match="not int"):
        connect_browser(9222)  # type: ignore[arg-type]


def test_closing_the_last_browser_gives_the_thread_its_event_loop_back(sandbox: Sandbox) -> None:
    """Browsers connected from one thread share its Playwright driver (a
    second cannot start beside it); closing one leaves the other working,
    closing the last stops the driver, and the thread can run a loop again."""
    import asyncio

    url, _ = _cdp_endpoint(sandbox, ttl=60)
    first, second = connect_browser(url), connect_browser(url)
    first.close()
    first.close()  # (a second close releases nothing more)
    try:
        page = second.new_page()
        page.set_content("<title>still connected</title>")
        assert page.title() == "still connected"
    finally:
        second.close()
    assert asyncio.run(asyncio.sleep(0, result="a loop again")) == "a loop again"
