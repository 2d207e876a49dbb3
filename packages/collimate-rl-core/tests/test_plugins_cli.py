"""The ``collimate`` command: core subcommands, plugin subcommands, delegation."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pluggy
import pytest

from collimate_rl import __version__
from collimate_rl.cli import build_parser, main
from collimate_rl.plugins import (
    PluginAnnouncement,
    PluginConflictError,
    hookimpl,
    new_plugin_manager,
)
from collimate_rl.plugins.builtin.commands import LOCAL_BACKEND_CLI


@pytest.fixture
def pm() -> pluggy.PluginManager:
    return new_plugin_manager(load_entrypoints=False)


class GreeterPlugin:
    """A plugin that contributes a subcommand and announces a framework."""

    @hookimpl
    def collimate_rl_cli_commands(self, subparsers: argparse._SubParsersAction[Any]) -> None:
        hello = subparsers.add_parser("hello", help="say hello")
        hello.add_argument("--name", default="world")
        hello.set_defaults(func=lambda args: print(f"hello {args.name}") or 7)

    @hookimpl
    def collimate_rl_announce(self) -> PluginAnnouncement:
        return PluginAnnouncement("greeter", "9.9", framework="greetlib", framework_version="1.2")


def test_version(pm: pluggy.PluginManager, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"], pm=pm) == 0
    assert capsys.readouterr().out.startswith(f"collimate-rl-core {__version__} (Python 3.")


def test_no_command_prints_help_and_fails(
    pm: pluggy.PluginManager, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([], pm=pm) == 2
    err = capsys.readouterr().err
    assert "plugins" in err and "serve" in err and "version" in err


def test_unknown_option_is_an_error(pm: pluggy.PluginManager) -> None:
    with pytest.raises(SystemExit) as info:
        main(["version", "--bogus"], pm=pm)
    assert info.value.code == 2


def test_plugins_lists_core_and_in_process_plugins(
    pm: pluggy.PluginManager, capsys: pytest.CaptureFixture[str]
) -> None:
    pm.register(GreeterPlugin(), name="greeter-plugin")
    assert main(["plugins"], pm=pm) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["PLUGIN", "VERSION", "FRAMEWORK", "SOURCE"]
    assert lines[1].split()[:2] == ["collimate-rl-core", __version__]
    assert "(built-in)" in lines[1]
    greeter = next(line for line in lines if line.startswith("greeter "))
    assert "greetlib 1.2" in greeter and "(registered in-process)" in greeter


def test_plugins_json(pm: pluggy.PluginManager, capsys: pytest.CaptureFixture[str]) -> None:
    pm.register(GreeterPlugin(), name="greeter-plugin")
    assert main(["plugins", "--json"], pm=pm) == 0
    rows = {row["plugin"]: row for row in json.loads(capsys.readouterr().out)}
    core = rows["collimate_rl.plugins.builtin.core"]
    assert core["builtin"] and core["distribution"] == "collimate-rl-core"
    assert core["announcements"][0]["version"] == __version__
    greeter = rows["greeter-plugin"]
    assert greeter["announcements"] == [
        {
            "name": "greeter",
            "version": "9.9",
            "framework": "greetlib",
            "framework_version": "1.2",
            "detail": "",
        }
    ]
    assert greeter["hooks"] == ["collimate_rl_announce", "collimate_rl_cli_commands"]
    assert "collimate_rl_transports" in rows["collimate_rl.builtin_transports"]["hooks"]


def test_plugins_verbose_lists_hooks(
    pm: pluggy.PluginManager, capsys: pytest.CaptureFixture[str]
) -> None:
    pm.register(GreeterPlugin(), name="greeter-plugin")
    assert main(["plugins", "-v"], pm=pm) == 0
    out = capsys.readouterr().out
    assert "greeter-plugin: collimate_rl_announce, collimate_rl_cli_commands" in out


def test_a_failing_announcement_is_shown_not_raised(
    pm: pluggy.PluginManager, capsys: pytest.CaptureFixture[str]
) -> None:
    class Broken:
        @hookimpl
        def collimate_rl_announce(self) -> PluginAnnouncement:
            raise RuntimeError("cannot introspect")

    pm.register(Broken(), name="broken")
    assert main(["plugins"], pm=pm) == 1
    out = capsys.readouterr().out
    assert "collimate-rl-core" in out
    assert "announce failed: RuntimeError: cannot introspect" in out


def test_plugin_subcommand_runs(
    pm: pluggy.PluginManager, capsys: pytest.CaptureFixture[str]
) -> None:
    pm.register(GreeterPlugin(), name="greeter-plugin")
    assert main(["hello", "--name", "ada"], pm=pm) == 7
    assert capsys.readouterr().out == "hello ada\n"


def test_duplicate_subcommand_names_both_plugins(
    pm: pluggy.PluginManager, capsys: pytest.CaptureFixture[str]
) -> None:
    class Squatter:
        @hookimpl
        def collimate_rl_cli_commands(self, subparsers: argparse._SubParsersAction[Any]) -> None:
            subparsers.add_parser("version")

    pm.register(Squatter(), name="squatter")
    with pytest.raises(PluginConflictError) as info:
        build_parser(pm)
    assert {info.value.first, info.value.second} == {
        "collimate_rl.plugins.builtin.commands",
        "squatter",
    }
    assert main(["version"], pm=pm) == 2
    assert "CLI command 'version'" in capsys.readouterr().err


def test_serve_hands_every_argument_to_the_local_backend(
    pm: pluggy.PluginManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    stand_in = types.ModuleType(LOCAL_BACKEND_CLI)
    stand_in.main = lambda argv: seen.append(argv) or 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, LOCAL_BACKEND_CLI, stand_in)
    assert main(["serve", "--port", "0", "-h", "--", "x"], pm=pm) == 3
    assert seen == [["--port", "0", "-h", "--", "x"]]


def test_serve_without_local_backend_is_a_clear_error(
    pm: pluggy.PluginManager, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, LOCAL_BACKEND_CLI, None)
    assert main(["serve"], pm=pm) == 2
    assert "local backend is not available" in capsys.readouterr().err


def test_console_script_and_module_entry(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("collimate")
    assert script.exists(), "the `collimate` console script is not installed"
    for cmd in ([str(script), "version"], [sys.executable, "-m", "collimate_rl", "version"]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(f"collimate-rl-core {__version__}")


def test_serve_reaches_the_real_local_backend_parser(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("collimate")
    out = subprocess.run(
        [str(script), "serve", "--help"], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert "--port" in out.stdout and "local backend is not available" not in out.stderr
