"""Every daemon call under every fault of the real TCP proxy, against a real
local backend: nothing runs twice, every failure is typed, no infra failure
becomes a reward, retry budgets hold, no session is left behind."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.proxy import FaultProxy
from collimate_rl.testing.reliability import (
    CALLS,
    CASE_FAULTS,
    Case,
    Matrix,
    settle_sessions,
)
from collimate_rl.testing.servers import serve_tcp

SESSION_TTL_S = 1.0


@pytest.fixture(scope="module")
def matrix() -> Iterator[Matrix]:
    with (
        LocalCollimateBackend(run_slots=1, session_ttl=SESSION_TTL_S) as backend,
        FaultProxy(backend.base_url, delay_s=2.5) as proxy,
    ):
        m = Matrix(proxy, backend.base_url, timeout=2.0)
        try:
            yield m
        finally:
            m.close()


@pytest.mark.parametrize("fault", CASE_FAULTS)
@pytest.mark.parametrize("call", CALLS)
def test_a_call_under_a_fault_is_typed_never_doubled_never_a_reward(
    matrix: Matrix, call: str, fault: str
) -> None:
    case: Case = matrix.run(call, fault)  # type: ignore[arg-type]
    assert case.injected >= 1, "the fault was never injected"
    assert case.outcome != "untyped", case.error
    assert case.executed_twice == 0
    assert case.ran_unforwarded == 0
    assert case.infra_as_reward == 0
    assert case.results_lost == 0
    assert case.over_budget == 0, case.sleeps


def test_a_burst_longer_than_the_retries_raises_after_exactly_retries_plus_one(
    matrix: Matrix,
) -> None:
    before = matrix.proxy.snapshot()
    case = matrix.run("one_shot", "draining")
    seen = matrix.proxy.snapshot().since(before)
    assert case.outcome == "typed" and "CollimateDrainingError" in case.error
    assert seen.seen["one_shot"] == matrix.retries + 1
    assert len(case.sleeps) == matrix.retries
    assert not seen.forwarded  # refused before any work: nothing reached the server


def test_an_answer_lost_after_the_exec_ran_is_not_sent_again(matrix: Matrix) -> None:
    before, counters = matrix.proxy.snapshot(), matrix.counters()
    case = matrix.run("one_shot", "reset_after")
    seen = matrix.proxy.snapshot().since(before)
    assert case.outcome == "typed" and not case.sleeps
    assert len(seen.forwarded_to("one_shot")) == 1
    assert matrix.counters().execs_run == counters.execs_run + 1  # it ran, once


def test_no_session_is_left_behind_and_the_server_counts_agree(matrix: Matrix) -> None:
    # a create whose answer was lost leaves a session only the reaper can end
    matrix.run("create", "reset_after")
    matrix.run("create", "delay")
    counters = settle_sessions(matrix.direct, SESSION_TTL_S * 10 + 10)
    assert counters.sessions == 0
    assert counters.sessions_created == counters.sessions_ended


def test_an_exec_held_past_its_read_timeout_is_typed_and_ran_once(matrix: Matrix) -> None:
    """Sent without timeout_seconds, an exec's read timeout is the client's
    (2 s): the proxy holds the answer 2.5 s, the client gives up with a
    typed error and does not send it again; the server ran it once."""
    before, counters = matrix.proxy.snapshot(), matrix.counters()
    case = matrix.run("one_shot", "delay")
    seen = matrix.proxy.snapshot().since(before)
    assert case.outcome == "typed" and "ReadTimeout" in case.error, case.error
    assert len(seen.forwarded_to("one_shot")) == 1 and not case.sleeps
    assert matrix.counters().execs_run == counters.execs_run + 1


def test_a_request_the_client_gave_up_on_is_unsettled_until_its_forward_is_recorded() -> None:
    # The matrix waits for this before it closes a case (Matrix._wait_quiet):
    # a forward recorded after the next case's snapshot would be counted
    # there, and with a create's bytes it would look like a create run twice.
    received, release = threading.Event(), threading.Event()

    def held(method: str, path: str, body: bytes) -> tuple[int, Any]:
        received.set()  # the server has it, and answers when the test says
        release.wait(10)
        return 200, {"session_id": "s-1"}

    with serve_tcp(held) as url, FaultProxy(url) as proxy:
        before = proxy.snapshot()
        try:
            with pytest.raises(httpx.ReadTimeout):
                httpx.post(proxy.url + "/v1/sessions", json={"template": "py"}, timeout=0.2)
            assert received.wait(10)
            assert proxy.unsettled == 1
            assert not proxy.snapshot().since(before).forwarded
        finally:
            release.set()
        deadline = time.monotonic() + 10
        while proxy.unsettled and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proxy.unsettled == 0
        assert [f.route for f in proxy.snapshot().since(before).forwarded] == ["create"]
