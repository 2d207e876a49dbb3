"""The exec observer hooks: every exec of every client calls
``collimate_rl_before_exec`` and then exactly one ``collimate_rl_after_exec``."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import pluggy
import pytest

import collimate_rl._transport.observe as observe
from collimate_rl import CollimateError
from collimate_rl.plugins import get_plugin_manager, hookimpl, new_plugin_manager
from collimate_rl.plugins.events import ExecEvent
from collimate_rl.testing import FakeDaemon, FakeGateway
from collimate_rl.testing.faults import FLAVOURS, Harness, make_client


class Recorder:
    def __init__(self) -> None:
        self.log: list[tuple[str, ExecEvent]] = []

    @hookimpl
    def collimate_rl_before_exec(self, event: ExecEvent) -> None:
        assert event.response is None and event.error is None
        self.log.append(("before", event))

    @hookimpl
    def collimate_rl_after_exec(self, event: ExecEvent) -> None:
        self.log.append(("after", event))


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    pm = get_plugin_manager()
    pm.register(rec, name="test-exec-recorder")
    try:
        yield rec
    finally:
        pm.unregister(rec)


@pytest.fixture(params=FLAVOURS)
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with FakeDaemon() as daemon:
        server: Any = daemon if request.param.startswith("daemon") else FakeGateway(daemon)
        h = make_client(request.param, server)
        try:
            yield h
        finally:
            h.close()


def test_session_exec_is_observed(harness: Harness, recorder: Recorder) -> None:
    sid = harness.client.create_session("shell")["session_id"]
    res = harness.client.session_exec(sid, command="echo seen", seed="ab" * 32)
    harness.client.delete_session(sid)
    assert [kind for kind, _ in recorder.log] == ["before", "after"]
    event = recorder.log[0][1]
    assert recorder.log[1][1] is event
    assert event.wire == harness.wire
    assert (event.target, event.one_shot) == (sid, False)
    assert event.request["command"] == "echo seen"
    assert event.request["seed"] == "ab" * 32
    assert event.response == res
    assert event.error is None
    assert event.elapsed_ms is not None and event.elapsed_ms >= 0
    assert event.endpoint == harness.raw.endpoint


def test_one_shot_exec_is_one_observed_exec(harness: Harness, recorder: Recorder) -> None:
    res = harness.client.exec_once("shell", command="echo once")
    assert [kind for kind, _ in recorder.log] == ["before", "after"]
    event = recorder.log[0][1]
    assert (event.target, event.one_shot) == ("shell", True)
    assert event.request["template_id"] == "shell"
    assert event.response == res


def test_a_failed_exec_is_observed_with_its_error(harness: Harness, recorder: Recorder) -> None:
    with pytest.raises(CollimateError) as got:
        harness.client.session_exec("sess_missing", command="true")
    assert [kind for kind, _ in recorder.log] == ["before", "after"]
    assert recorder.log[1][1].error is got.value
    assert recorder.log[1][1].response is None


def test_gateway_exec_is_observed(recorder: Recorder) -> None:
    with FakeGateway() as fake:
        h = make_client("gateway-sync", fake)
        sandbox = h.client.create_sandbox("python")
        h.client.exec(sandbox["id"], code="print(1)")
        h.client.delete_sandbox(sandbox["id"])
        h.close()
    assert [kind for kind, _ in recorder.log] == ["before", "after"]
    assert recorder.log[0][1].wire == "gateway"


def test_non_exec_calls_are_not_observed(harness: Harness, recorder: Recorder) -> None:
    harness.client.health()
    harness.client.list_sessions()
    assert recorder.log == []


def test_a_broken_observer_surfaces(harness: Harness) -> None:
    plugin = types.SimpleNamespace(
        collimate_rl_before_exec=hookimpl(lambda event: 1 / 0),
    )
    pm = get_plugin_manager()
    pm.register(plugin, name="test-broken-observer")
    try:
        with pytest.raises(ZeroDivisionError):
            harness.client.exec_once("shell", command="true")
    finally:
        pm.unregister(plugin)


def test_no_event_is_built_when_nobody_observes(monkeypatch: pytest.MonkeyPatch) -> None:
    bare: pluggy.PluginManager = new_plugin_manager(load_entrypoints=False, builtins=False)
    monkeypatch.setattr(observe, "get_plugin_manager", lambda: bare)

    def no_events(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an ExecEvent was built with no observer registered")

    monkeypatch.setattr(observe, "ExecEvent", no_events)
    with FakeDaemon() as daemon:
        h = make_client("daemon-sync", daemon)
        assert h.client.exec_once("shell", command="echo quiet")["stdout"] == "quiet\n"
        h.close()
