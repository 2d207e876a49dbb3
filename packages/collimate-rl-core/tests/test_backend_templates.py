"""Template configuration of the local backend: TOML, plugins, built-ins,
and an error for every mistake (never a silently ignored key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from collimate_rl.local_backend.engine.api import Limits
from collimate_rl.local_backend.template_registry import collect_templates, plugin_templates
from collimate_rl.local_backend.templates import (
    TemplateConfigError,
    load_template_file,
    parse_size,
    parse_template,
)
from collimate_rl.plugins import hookimpl, new_plugin_manager


def test_builtins_come_from_the_plugin_hook() -> None:
    ids = {s.id: s for s in collect_templates()}
    assert {"py", "dkr-python311", "sh"} <= set(ids)
    assert ids["py"].kind == "python" and ids["dkr-python311"].kind == "python"
    assert ids["sh"].kind == "shell"
    assert not ids["py"].networked


def test_toml_file_full(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text(
        """
[[templates]]
id = "py-small"
kind = "python"
preload = ["json"]
[templates.limits]
cpu_seconds = 5
memory = "256MiB"
processes = 32
file_size = "1M"
output = 1048576

[[templates]]
id = "web"
kind = "app"
command = "python3 -m http.server {port}"
ports = [8000]
ready_http = "/"
warm_pool = 2
"""
    )
    specs = {s.id: s for s in load_template_file(f) for s in [s.spec]}
    small = specs["py-small"]
    assert small.preload == ("json",)
    assert small.limits == Limits(
        cpu_seconds=5,
        memory_bytes=256 * 1024 * 1024,
        max_processes=32,
        file_size_bytes=1_000_000,
        output_bytes=1 << 20,
    )
    web = specs["web"]
    assert web.kind == "app" and web.ports == (8000,) and web.warm_pool == 2
    assert web.app_command == "python3 -m http.server {port}" and web.networked
    merged = {s.id for s in collect_templates(templates_file=f)}
    assert {"py", "sh", "py-small", "web"} <= merged


def test_keyed_toml_form(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text('[templates.shell2]\nkind = "shell"\nnetworked = true\n')
    (src,) = load_template_file(f)
    assert src.spec.id == "shell2" and src.spec.networked


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ({"id": "x", "kind": "ruby"}, "kind must be one of"),
        ({"id": "bad id!"}, "template id must match"),
        ({"id": "x", "limitz": {}}, "unknown key(s) ['limitz']"),
        ({"id": "x", "limits": {"cpu": 1}}, "unknown limit(s) ['cpu']"),
        ({"id": "x", "limits": {"memory": "lots"}}, "limits.memory"),
        ({"id": "x", "limits": {"processes": 0}}, "limits.processes"),
        ({"id": "x", "kind": "app", "command": "serve"}, "{port}"),
        ({"id": "x", "kind": "app", "command": "s {port}", "ports": [0]}, "ports"),
        ({"id": "x", "kind": "app", "command": "s {port}", "ready_http": "health"}, "ready_http"),
        ({"id": "x", "kind": "shell", "preload": ["json"]}, "unknown key(s) ['preload']"),
        ({"id": "x", "networked": "yes"}, "networked"),
    ],
)
def test_bad_tables_are_named(table: dict[str, object], needle: str) -> None:
    with pytest.raises(TemplateConfigError) as info:
        parse_template(table, origin="cfg.toml")
    assert needle in str(info.value)
    assert "cfg.toml" in str(info.value)


def test_bad_toml_file(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text("[[templates]\n")
    with pytest.raises(TemplateConfigError, match="invalid TOML"):
        load_template_file(f)
    with pytest.raises(TemplateConfigError, match="cannot read"):
        load_template_file(tmp_path / "missing.toml")
    f.write_text("[server]\nport = 1\n")
    with pytest.raises(TemplateConfigError, match="unknown top-level"):
        load_template_file(f)


def test_duplicate_ids(tmp_path: Path) -> None:
    f = tmp_path / "dup.toml"
    f.write_text('[[templates]]\nid = "py"\nkind = "shell"\n')
    with pytest.raises(TemplateConfigError, match=r"'py' is defined twice.*--override-templates"):
        collect_templates(templates_file=f)
    specs = {s.id: s for s in collect_templates(templates_file=f, allow_override=True)}
    assert specs["py"].kind == "shell"
    f.write_text('[[templates]]\nid = "a"\n[[templates]]\nid = "a"\n')
    with pytest.raises(TemplateConfigError, match="defined twice"):
        collect_templates(templates_file=f)


def test_plugin_contributed_templates() -> None:
    class Plugin:
        @hookimpl
        def collimate_rl_local_templates(self) -> list[dict[str, object]]:
            return [{"id": "from-plugin", "kind": "shell"}]

    pm = new_plugin_manager(load_entrypoints=False)
    pm.register(Plugin(), name="third-party")
    srcs = {s.spec.id: s for s in plugin_templates(pm)}
    assert srcs["from-plugin"].origin == "plugin 'third-party'"
    assert "py" in srcs


def test_sizes() -> None:
    assert parse_size("1KiB", what="x") == 1024
    assert parse_size("1k", what="x") == 1000
    assert parse_size("2 GiB", what="x") == 2 << 30
    assert parse_size("1.5MiB", what="x") == 3 << 19
    assert parse_size(7, what="x") == 7
    for bad in ("", "-1", "1XB", True, 0):
        with pytest.raises(TemplateConfigError):
            parse_size(bad, what="x")


def test_in_process_tables_replace_builtins() -> None:
    specs = {s.id: s for s in collect_templates(templates=[{"id": "py", "kind": "shell"}])}
    assert specs["py"].kind == "shell"
    specs = {
        s.id: s for s in collect_templates(templates={"py": {"interpreter": "/usr/bin/python3"}})
    }
    assert specs["py"].python == "/usr/bin/python3"


def test_server_serves_plugin_templates() -> None:
    """A template a plugin contributes through the hook is served for real."""
    import httpx

    from collimate_rl.local_backend import LocalCollimateBackend
    from collimate_rl.plugins import get_plugin_manager

    class Plugin:
        @hookimpl
        def collimate_rl_local_templates(self) -> list[dict[str, object]]:
            return [{"id": "plugin-sh", "kind": "shell"}]

    pm = get_plugin_manager()
    plugin = Plugin()
    pm.register(plugin, name="test-backend-plugin")
    try:
        with LocalCollimateBackend() as b:
            assert "plugin-sh" in b.health()["templates"]
            r = httpx.post(
                b.base_url + "/v1/exec", json={"template_id": "plugin-sh", "command": "echo p"}
            )
            assert r.json()["stdout"] == "p\n"
    finally:
        pm.unregister(plugin)
