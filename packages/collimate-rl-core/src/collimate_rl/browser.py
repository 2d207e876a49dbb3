"""Drive a sandbox's headless Chromium from this process, with Playwright.

A sandbox of the ``browser`` template (the local backend's built-in, or any
template whose Chromium serves DevTools on port 9222) keeps a browser
running; :func:`connect_browser` hands back a Playwright ``Browser``
connected to it over the Chrome DevTools Protocol, so the page is driven
from here while it loads and renders in the sandbox::

    from collimate_rl import Sandbox, connect_browser

    with Sandbox("browser") as sb:
        sb.upload_bytes("/tmp/page.html", b"<title>hello</title>")
        browser = connect_browser(sb)
        page = browser.new_page()
        page.goto("file:///tmp/page.html")    # the sandbox's file, not ours
        print(page.title())
        browser.close()

Playwright is optional (``pip install 'collimate-rl-core[browser]'``): it is
imported when :func:`connect_browser` is called, never by importing
``collimate_rl``. No browser is downloaded (``playwright install`` is not
needed): the browser is the sandbox's.

Where the endpoint comes from is :func:`_cdp_endpoint`'s one job: a URL
given as is; over a gateway client (a ``col_*`` key), a port forward of the
sandbox's port 9222 through the gateway's tunnel (``port_forward``), which
lives as long as the browser's connection; over the node-local daemon, the
address the backend published for port 9222 (the local backend relays it to
``127.0.0.1:<port>`` on its own host, so this works on the machine the
backend runs on).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from .errors import CollimateError
from .gateway import CDP_PORT, GatewayClient
from .gateway_flows import Session
from .sandbox import Sandbox

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

    from .tunnel import PortForward

__all__ = ["CDP_PORT", "SandboxOrURL", "connect_browser"]

#: What :func:`connect_browser` connects to (0.8.0's name): a sandbox or session of a
#: browser template, or a CDP endpoint URL (``http://host:port`` or the
#: ``ws://`` URL of the browser's DevTools socket).
SandboxOrURL: TypeAlias = Sandbox | Session | str

_INSTALL_HINT: Final = (
    "connect_browser needs Playwright, an optional dependency: "
    "pip install 'collimate-rl-core[browser]' (or pip install playwright). "
    "No browser download is needed: the browser runs in the sandbox."
)

# One Playwright driver per thread (its sync API is bound to the thread that
# started it, and a second one cannot start beside it), shared by the
# browsers connected from that thread and stopped when the last of them is
# closed: a running driver holds the thread's event loop (``asyncio.run``
# refuses to start under it) and a driver process.
_drivers = threading.local()


def _acquire_playwright() -> Playwright:
    """This thread's Playwright driver, started if need be and counted as
    used once more; ImportError with the install hint without Playwright."""
    driver: Playwright | None = getattr(_drivers, "playwright", None)
    if driver is None:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as exc:
            raise ImportError(_INSTALL_HINT) from exc
        driver = sync_playwright().start()
        _drivers.playwright, _drivers.users = driver, 0
    _drivers.users += 1
    return driver


def _release_playwright() -> None:
    """One user of this thread's driver less; the last one stops it."""
    _drivers.users -= 1
    if _drivers.users <= 0:
        driver, _drivers.playwright = _drivers.playwright, None
        driver.stop()


def _cdp_endpoint(target: SandboxOrURL, *, ttl: int) -> tuple[str, PortForward | None]:
    """The CDP endpoint for ``target`` that Playwright in this process
    dials, and the port forward behind it (None when there is none), which
    the caller closes once the browser's connection ends.

    A string is an endpoint already. A sandbox or session is created first
    if it is not yet (as its first exec would). Over a gateway client, its
    port :data:`CDP_PORT` is forwarded to a loopback port here through the
    gateway's tunnel (each connection a tunnel of its own, minted for
    ``ttl`` seconds); DevTools answers the forward's ``Host`` (an address)
    and names its socket on it, so Playwright dials the forward again.
    Over the node-local daemon, it is the address the backend published.
    """
    if isinstance(target, str):
        if not target:
            raise ValueError("connect_browser: the CDP endpoint URL is empty")
        return target, None
    if isinstance(target, Session):
        forward = target.port_forward(CDP_PORT, ttl_seconds=ttl)
        return forward.url, forward
    if not isinstance(target, Sandbox):
        raise TypeError(
            "connect_browser takes a Sandbox, a Session or a CDP endpoint URL, "
            f"not {type(target).__name__}"
        )
    if isinstance(target.client, GatewayClient):
        forward = target.port_forward(CDP_PORT, ttl_seconds=ttl)
        return forward.url, forward
    if target.session_id is None:
        target.start()
    return _published(target.endpoints, f"sandbox {target.session_id}"), None


def _published(endpoints: dict[str, str], name: str) -> str:
    """The address a backend published for :data:`CDP_PORT`, as a URL."""
    address = endpoints.get(str(CDP_PORT))
    if not address:
        raise CollimateError(
            f"{name} publishes no endpoint for port {CDP_PORT}: create it from a browser "
            "template (the local backend's 'browser'), whose Chromium serves DevTools there"
        )
    return address if "://" in address else f"http://{address}"


def _release_on_close(browser: Any, forward: PortForward | None) -> None:
    """Make ``browser.close()`` also release this thread's driver (stopping
    it with its last browser) and close ``forward``; a connection the far
    side ends closes ``forward`` at once (on a thread of its own: the event
    comes on Playwright's dispatcher, which must not wait for the forward's
    threads)."""
    close = browser.close
    released = threading.Event()

    def close_and_release(*args: Any, **kwargs: Any) -> None:
        try:
            close(*args, **kwargs)
        finally:
            if not released.is_set():
                released.set()
                if forward is not None:
                    forward.close()
                _release_playwright()

    browser.close = close_and_release
    if forward is not None:

        def closed(_browser: object) -> None:
            threading.Thread(target=forward.close, name="cdp-forward-close", daemon=True).start()

        browser.on("disconnected", closed)


def connect_browser(sandbox_or_url: SandboxOrURL, *, ttl: int = 600) -> Browser:
    """A Playwright ``Browser`` connected over CDP to the Chromium of
    ``sandbox_or_url`` (a sandbox or session of a browser template, or a CDP
    endpoint URL).

    The caller owns the returned browser: ``browser.close()`` ends this
    connection (and the port forward under it, over a gateway client) and,
    with the thread's last such browser, stops the Playwright driver, so
    the thread can run an event loop again; the sandbox's Chromium keeps
    running until the sandbox is deleted. ``ttl``
    is how long a minted connect URL stays valid.

    Raises ImportError (with the install command) without Playwright,
    :class:`~collimate_rl.CollimateError` when the sandbox serves no
    DevTools port, and Playwright's own error when nothing answers there.
    """
    endpoint, forward = _cdp_endpoint(sandbox_or_url, ttl=ttl)
    try:
        driver = _acquire_playwright()
    except BaseException:
        if forward is not None:
            forward.close()
        raise
    try:
        browser: Any = driver.chromium.connect_over_cdp(endpoint)
    except BaseException:
        if forward is not None:
            forward.close()
        _release_playwright()
        raise
    _release_on_close(browser, forward)
    return browser  # type: ignore[no-any-return,unused-ignore]
