"""What the browser template's tests need from the host: Chromium (the
template's server) and Playwright (``connect_browser``'s client)."""

from __future__ import annotations

import importlib.util
import os

from collimate_rl.local_backend.browser_template import INSTALL_HINT, find_chromium

__all__ = ["need_browser"]


def need_browser() -> None:
    """Skip when this host lacks Chromium or Playwright; in CI (where
    ``.ci/run`` installs Chromium and the test env has Playwright) fail
    instead, naming what is missing: a browser that went missing there must
    not hide its tests."""
    import pytest  # (only tests call this)

    missing = []
    if find_chromium() is None:
        missing.append(f"Chromium (the browser template's server; {INSTALL_HINT})")
    if importlib.util.find_spec("playwright") is None:
        missing.append("Playwright (connect_browser's client; pip install playwright)")
    if not missing:
        return
    message = "missing: " + "; ".join(missing)
    if os.environ.get("CI"):
        pytest.fail(f"CI must have the browser template's tools: {message}")
    pytest.skip(message)
