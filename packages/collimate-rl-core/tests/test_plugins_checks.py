"""check_plugin: the conformance check a plugin runs in its own tests."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

import pluggy
import pytest

from collimate_rl.plugins import (
    PluginAnnouncement,
    PluginConflictError,
    PluginContractError,
    check_plugin,
    hookimpl,
)
from collimate_rl.plugins.builtin import BUILTIN_PLUGIN_MODULES, core


class Good:
    @hookimpl
    def collimate_rl_announce(self) -> PluginAnnouncement:
        return PluginAnnouncement("good", "1.0", framework="fw", framework_version=None)

    @hookimpl
    def collimate_rl_transports(self) -> dict[str, Any]:
        return {"good-wire": dict}

    @hookimpl
    def collimate_rl_cli_commands(self, subparsers: argparse._SubParsersAction[Any]) -> None:
        subparsers.add_parser("good").set_defaults(func=lambda args: 0)


def test_a_good_plugin_passes_and_returns_its_announcement() -> None:
    a = check_plugin(Good())
    assert a == PluginAnnouncement("good", "1.0", framework="fw", framework_version=None)


@pytest.mark.parametrize("dotted", BUILTIN_PLUGIN_MODULES)
def test_every_builtin_plugin_passes(dotted: str) -> None:
    check_plugin(importlib.import_module(dotted), name=f"{dotted}-checked")


def test_core_announces_itself() -> None:
    a = check_plugin(core)
    assert a is not None and a.name == "collimate-rl-core" and a.framework is None


def test_a_plugin_without_announcement_returns_none() -> None:
    class Quiet:
        @hookimpl
        def collimate_rl_reward_kinds(self) -> dict[str, Any]:
            return {}

    assert check_plugin(Quiet()) is None


def test_misspelt_hook() -> None:
    class Typo:
        @hookimpl
        def collimate_rl_anounce(self) -> None: ...

    with pytest.raises(pluggy.PluginValidationError):
        check_plugin(Typo())


def test_wrong_hook_arguments() -> None:
    class WrongArgs:
        @hookimpl
        def collimate_rl_cli_commands(self, parser: Any) -> None: ...

    with pytest.raises(pluggy.PluginValidationError):
        check_plugin(WrongArgs())


@pytest.mark.parametrize(
    "result", [{"name": "x", "version": "1"}, PluginAnnouncement(name="", version="1")]
)
def test_bad_announcement(result: Any) -> None:
    class Bad:
        @hookimpl
        def collimate_rl_announce(self) -> Any:
            return result

    with pytest.raises(PluginContractError, match="announce"):
        check_plugin(Bad(), name="bad")


def test_collision_with_a_builtin_transport() -> None:
    class Clash:
        @hookimpl
        def collimate_rl_transports(self) -> dict[str, Any]:
            return {"gateway": dict}

    with pytest.raises(PluginConflictError, match="'gateway'"):
        check_plugin(Clash(), name="clash")


def test_collision_with_a_core_subcommand() -> None:
    class Clash:
        @hookimpl
        def collimate_rl_cli_commands(self, subparsers: argparse._SubParsersAction[Any]) -> None:
            subparsers.add_parser("plugins")

    with pytest.raises(PluginConflictError, match="CLI command 'plugins'"):
        check_plugin(Clash(), name="clash")
