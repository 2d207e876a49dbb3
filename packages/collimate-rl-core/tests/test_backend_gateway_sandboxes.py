"""Sandboxes on the gateway wire of the real local backend: tenant
isolation, live forks, suspend / resume, usage."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from collimate_rl import GatewayClient
from collimate_rl.errors import GatewayError
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.engine.fork_clone import ForkClone
from collimate_rl.local_backend.freeze import descendants, process_state

ALICE, BOB = "col_pro_sandboxes_alice", "col_pro_sandboxes_bob"
CAROL = "col_pro_sandboxes_carol"  # used by the usage test alone
TICKER = "(while :; do echo t >> /tmp/ticks; sleep 0.02; done) >/dev/null 2>&1 &"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[ALICE, BOB, CAROL], gateway_max_warm=1) as b:
        yield b


def _client(backend: LocalCollimateBackend, key: str) -> Iterator[GatewayClient]:
    with GatewayClient(key, backend.base_url) as c:
        yield c
        for sb in c.list_sandboxes():
            c.delete_sandbox(sb["id"])
        for tpl in c.list_templates():
            c.delete_template(tpl["id"])


@pytest.fixture
def alice(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    yield from _client(backend, ALICE)


@pytest.fixture
def carol(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    yield from _client(backend, CAROL)


@pytest.fixture
def bob(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    yield from _client(backend, BOB)


def _not_found(call: object) -> None:
    with pytest.raises(GatewayError) as got:
        call()  # type: ignore[operator]
    assert (got.value.status, got.value.code) == (404, "not_found")


def test_another_tenants_objects_answer_404(alice: GatewayClient, bob: GatewayClient) -> None:
    sid = alice.create_sandbox("sh", labels={"run": "a"})["id"]
    tid = alice.create_template(name="mine", image="python:3.11", width=0)["id"]
    _not_found(lambda: bob.get_sandbox(sid))
    _not_found(lambda: bob.exec(sid, command="true"))
    _not_found(lambda: bob.fork(sid, count=1))
    _not_found(lambda: bob.suspend(sid))
    _not_found(lambda: bob.resume(sid))
    _not_found(lambda: bob.get_template(tid))
    _not_found(lambda: bob.expect_width(tid, 2))
    _not_found(lambda: bob.create_sandbox(tid))
    assert bob.delete_sandbox(sid)["deleted"] is False  # a 404 underneath
    assert bob.delete_template(tid)["deleted"] is False
    assert sid not in {s["id"] for s in bob.list_sandboxes()}
    assert tid not in {t["id"] for t in bob.list_templates()}
    # ... and all of it still Alice's
    assert alice.get_sandbox(sid)["labels"] == {"run": "a"}
    assert alice.exec(sid, command="echo still")["stdout"] == "still\n"
    assert alice.get_template(tid)["id"] == tid


def test_fork_children_inherit_then_diverge(alice: GatewayClient) -> None:
    parent = alice.create_sandbox("py")["id"]
    alice.exec(
        parent,
        command="echo base > shared.txt; mkdir -p /task/deep && echo root-fs > /task/deep/f; "
        "echo shm > /dev/shm/s 2>/dev/null || true; rm -f gone.txt",
    )
    children = [c["id"] for c in alice.fork(parent, count=3, labels={"group": "g1"})["children"]]
    assert len(children) == 3
    for i, cid in enumerate(children):
        seen = alice.exec(cid, command="cat shared.txt /task/deep/f")["stdout"]
        assert seen == "base\nroot-fs\n"
        alice.exec(cid, command=f"echo child{i} > shared.txt; echo only{i} > own.txt")
        assert alice.get_sandbox(cid)["labels"] == {"group": "g1"}
        assert alice.get_sandbox(cid)["parent"] == parent
    alice.exec(parent, command="echo parent-later > shared.txt")
    # afterwards each one has its own files
    assert alice.exec(parent, command="cat shared.txt")["stdout"] == "parent-later\n"
    assert alice.exec(parent, command="ls own.txt 2>&1; true")["stdout"].startswith("ls:")
    for i, cid in enumerate(children):
        out = alice.exec(cid, command="cat shared.txt own.txt")["stdout"]
        assert out == f"child{i}\nonly{i}\n"


def test_a_fork_sees_the_files_as_they_were_at_the_fork(alice: GatewayClient) -> None:
    parent = alice.create_sandbox("sh")["id"]
    alice.exec(parent, command="echo v1 > state")
    first = alice.fork(parent, count=1)["children"][0]["id"]
    alice.exec(parent, command="echo v2 > state")
    second = alice.fork(parent, count=1)["children"][0]["id"]
    assert alice.exec(first, command="cat state")["stdout"] == "v1\n"
    assert alice.exec(second, command="cat state")["stdout"] == "v2\n"


def _clone_pid(backend: LocalCollimateBackend, sandbox_id: str) -> int:
    assert backend.server.service is not None
    clone = backend.server.service.sessions.get(sandbox_id).clone
    assert isinstance(clone, ForkClone)
    return clone.pid


def _ticks(client: GatewayClient, sid: str) -> int:
    return int(client.exec(sid, command="wc -l < /tmp/ticks")["stdout"])


def test_suspend_stops_and_resume_continues(
    alice: GatewayClient, backend: LocalCollimateBackend
) -> None:
    sid = alice.create_sandbox("sh")["id"]
    alice.exec(sid, command=TICKER)
    while _ticks(alice, sid) < 3:  # the ticker is running
        time.sleep(0.05)
    assert alice.suspend(sid) == {"id": sid, "state": "suspended"}
    assert alice.get_sandbox(sid)["state"] == "suspended"
    states = {p: process_state(p) for p in descendants(_clone_pid(backend, sid))}
    # stopped, or dead (a sleep that ended is a zombie its stopped shell has not reaped)
    assert "T" in states.values() and set(states.values()) <= {"T", "Z", None}, states
    with pytest.raises(GatewayError) as got:
        alice.exec(sid, command="true")
    assert (got.value.status, got.value.code) == (409, "sandbox_suspended")
    assert alice.suspend(sid)["state"] == "suspended"  # idempotent
    assert alice.resume(sid) == {"id": sid, "state": "running"}
    assert all(process_state(p) != "T" for p in descendants(_clone_pid(backend, sid)))
    after_resume = _ticks(alice, sid)
    deadline = time.monotonic() + 30
    while _ticks(alice, sid) <= after_resume + 2:  # the same ticker goes on
        assert time.monotonic() < deadline, "the ticker did not continue after resume"
        time.sleep(0.05)


def test_a_stopped_ticker_writes_nothing_while_suspended(
    alice: GatewayClient, backend: LocalCollimateBackend
) -> None:
    sid = alice.create_sandbox("sh")["id"]
    alice.exec(sid, command=TICKER)
    while _ticks(alice, sid) < 2:
        time.sleep(0.05)
    alice.suspend(sid)
    # a fork of the suspended sandbox copies its file as it is: twice, with
    # time between, and the ticker (stopped) adds nothing in between
    one = alice.fork(sid, count=1)["children"][0]["id"]
    time.sleep(0.3)
    two = alice.fork(sid, count=1)["children"][0]["id"]
    assert _ticks(alice, one) == _ticks(alice, two)
    alice.resume(sid)


def test_usage_matches_what_ran(carol: GatewayClient, bob: GatewayClient) -> None:
    start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    a = carol.create_sandbox("sh")["id"]
    b = carol.create_sandbox("py")["id"]
    for _ in range(3):
        carol.exec(a, command="true")
    carol.exec(b, code="print(1)")
    kids = carol.fork(a, count=2)["children"]
    carol.exec(kids[0]["id"], command="true")
    carol.suspend(b)
    time.sleep(0.2)
    carol.resume(b)
    bob.create_sandbox("sh")  # another tenant's work is not Alice's
    for sid in (a, b, *(k["id"] for k in kids)):
        carol.delete_sandbox(sid)
    usage = carol.usage(from_ts=start)
    totals = usage["totals"]
    assert totals["sandboxes"] == 4
    assert totals["forked_sandboxes"] == 2
    assert totals["execs"] == 5
    assert totals["suspended_seconds"] >= 0.2
    assert totals["sandbox_seconds"] > 0
    assert usage["from"].startswith(start[:-1])
    # a window before any of it ran holds none of it
    empty = carol.usage(from_ts="2000-01-01T00:00:00Z", to_ts="2000-01-02T00:00:00Z")
    assert empty["totals"]["sandboxes"] == 0 and empty["totals"]["execs"] == 0
    with pytest.raises(GatewayError) as got:
        carol.usage(from_ts="yesterday")
    assert got.value.code == "bad_request" and "RFC3339" in got.value.message
