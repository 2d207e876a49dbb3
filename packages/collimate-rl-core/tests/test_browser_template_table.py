"""The browser template's table, and a template this host cannot run: listed,
marked unavailable, every sandbox of it refused at once with the reason
(no Chromium needed: the unavailable one is the template without it)."""

from __future__ import annotations

import pytest

from collimate_rl import CollimateClient, CollimateError, Sandbox
from collimate_rl.local_backend import LocalCollimateBackend, browser_template
from collimate_rl.local_backend.banner import banner
from collimate_rl.local_backend.builtin_templates import builtin_templates
from collimate_rl.local_backend.catalog import catalog_row
from collimate_rl.local_backend.templates import TemplateConfigError, parse_template


def test_the_template_serves_devtools_on_9222_in_a_namespace_of_its_own() -> None:
    spec = parse_template(browser_template.browser_template("/opt/chrome/chrome"))
    assert spec.kind == "app" and spec.ports == (9222,)
    assert spec.ready_http == "/json/version"
    assert not spec.networked  # its own loopback only (the engine relays 9222 in)
    assert spec.unavailable is None
    command = spec.app_command or ""
    assert command.startswith("exec /opt/chrome/chrome --headless=new --no-sandbox ")
    for flag in (
        "--remote-debugging-port={port}",
        "--remote-debugging-address=127.0.0.1",
        "'--remote-allow-origins=*'",  # quoted: the shell must not glob it
        "--disable-background-networking",
        '--user-data-dir="$HOME/chromium-profile"',
    ):
        assert flag in command


def test_it_is_a_builtin() -> None:
    ids = [table["id"] for table in builtin_templates()]
    assert browser_template.BROWSER_TEMPLATE in ids


def test_without_chromium_it_is_listed_as_unavailable_with_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(browser_template, "find_chromium", lambda: None)
    spec = parse_template(browser_template.browser_template())
    assert spec.unavailable is not None
    assert "Chromium is not installed" in spec.unavailable
    assert "apt-get install chromium" in spec.unavailable
    assert "unavailable here" in catalog_row(spec)["description"]


def test_unavailable_must_be_a_reason() -> None:
    with pytest.raises(TemplateConfigError, match="unavailable must be a reason"):
        parse_template({"id": "x", "kind": "shell", "unavailable": True}, origin="cfg")


def test_a_sandbox_of_an_unavailable_template_is_refused_with_the_reason() -> None:
    missing = {
        "id": "needs-a-thing",
        "kind": "shell",
        "unavailable": "the thing is not installed here; apt-get install thing",
    }
    with (
        LocalCollimateBackend([missing]) as backend,
        CollimateClient(backend.base_url) as client,
    ):
        assert "needs-a-thing" in backend.health()["templates"]
        # the start-up banner says it too, with the fix
        assert (
            "template needs-a-thing is unavailable here: the thing is not installed here; "
            "apt-get install thing"
        ) in banner(backend.server)
        with pytest.raises(CollimateError, match="apt-get install thing") as info:
            Sandbox("needs-a-thing", client=client).start()
        assert "unavailable here" in str(info.value)
        # the backend goes on serving the templates it can run
        with Sandbox("sh", client=client) as sb:
            assert sb.exec(command="echo fine").stdout == "fine\n"
