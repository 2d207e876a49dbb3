"""``connect_browser`` without Playwright: importing ``collimate_rl`` never
needs it, and a call says how to install it (no Chromium needed here)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from collimate_rl import connect_browser


def test_importing_collimate_rl_does_not_import_playwright() -> None:
    code = "import sys, collimate_rl; print('playwright' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_without_playwright_a_call_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # an import of a module mapped to None raises ImportError, as a missing one does
    monkeypatch.setitem(sys.modules, "playwright", None)
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)
    raised: list[BaseException] = []

    def call() -> None:  # a thread of its own: no driver started in it yet
        try:
            connect_browser("http://127.0.0.1:9222")
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    worker.join()
    assert len(raised) == 1 and isinstance(raised[0], ImportError), raised
    assert "pip install 'collimate-rl-core[browser]'" in str(raised[0])
