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
given as is, else the address the backend published for the sandbox's
port 9222 (the local backend relays it to ``127.0.0.1:<port>`` on its own
host, so this works on the machine the backend runs on).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from .errors import CollimateError
from .gateway_flows import Session
from .sandbox import Sandbox

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

__all__ = ["CDP_PORT", "SandboxOrURL", "connect_browser"]

#: The port Chromium's DevTools listens on in a browser sandbox.
CDP_PORT: Final = 9222

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
# started it), started on first use and kept: each connect would otherwise
# leave a driver process behind, since the caller owns only the Browser.
_drivers = threading.local()


def _playwright() -> Playwright:
    """This thread's Playwright driver, or ImportError with the install hint."""
    driver: Playwright | None = getattr(_drivers, "playwright", None)
    if driver is None:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as exc:
            raise ImportError(_INSTALL_HINT) from exc
        driver = sync_playwright().start()
        _drivers.playwright = driver
    return driver


def _cdp_endpoint(target: SandboxOrURL, *, ttl: int) -> str:
    """The CDP endpoint for ``target`` that Playwright in this process dials.

    A string is an endpoint already. A sandbox or session gives the address
    its backend published for :data:`CDP_PORT` (one not yet created is
    created first, as its first exec would). ``ttl`` bounds a minted connect URL's life; a
    published address has none.
    """
    if isinstance(target, str):
        if not target:
            raise ValueError("connect_browser: the CDP endpoint URL is empty")
        return target
    if isinstance(target, Sandbox):
        if target.session_id is None:
            target.start()
        name = f"sandbox {target.session_id}"
    elif isinstance(target, Session):
        target.open()  # (once: an open session stays as it is)
        name = f"session {target.id}"
    else:
        raise TypeError(
            "connect_browser takes a Sandbox, a Session or a CDP endpoint URL, "
            f"not {type(target).__name__}"
        )
    address = target.endpoints.get(str(CDP_PORT))
    if not address:
        raise CollimateError(
            f"{name} publishes no endpoint for port {CDP_PORT}: create it from a browser "
            "template (the local backend's 'browser'), whose Chromium serves DevTools there"
        )
    return address if "://" in address else f"http://{address}"


def connect_browser(sandbox_or_url: SandboxOrURL, *, ttl: int = 600) -> Browser:
    """A Playwright ``Browser`` connected over CDP to the Chromium of
    ``sandbox_or_url`` (a sandbox or session of a browser template, or a CDP
    endpoint URL).

    The caller owns the returned browser: ``browser.close()`` ends this
    connection; the sandbox's Chromium keeps running until the sandbox is
    deleted. ``ttl`` is how long a minted connect URL stays valid.

    Raises ImportError (with the install command) without Playwright,
    :class:`~collimate_rl.CollimateError` when the sandbox serves no
    DevTools port, and Playwright's own error when nothing answers there.
    """
    endpoint = _cdp_endpoint(sandbox_or_url, ttl=ttl)
    browser: Any = _playwright().chromium.connect_over_cdp(endpoint)
    return browser  # type: ignore[no-any-return,unused-ignore]
