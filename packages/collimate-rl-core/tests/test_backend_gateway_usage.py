"""The gateway's usage meter on its own, under a clock the test moves:
intervals clipped to the window, suspended time apart, old records pruned."""

from __future__ import annotations

import pytest

from collimate_rl.local_backend import usage
from collimate_rl.local_backend.usage import RETAIN_S, UsageMeter, rfc3339
from collimate_rl.local_backend.wire_errors import WireError

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(usage.time, "time", c)
    return c


def test_intervals_are_clipped_to_the_window(clock: Clock) -> None:
    meter = UsageMeter()
    meter.sandbox_started("a", "sb1")
    clock.now = T0 + 10
    meter.sandbox_suspended("sb1")
    clock.now = T0 + 20
    meter.sandbox_resumed("sb1")
    meter.exec_ran("a", 0.25)
    clock.now = T0 + 30
    meter.sandbox_ended("sb1")
    meter.sandbox_started("b", "sb2", forked=True)  # another tenant's
    whole = meter.summary("a", rfc3339(T0), rfc3339(T0 + 60))["totals"]
    assert whole["sandbox_seconds"] == 20.0 and whole["suspended_seconds"] == 10.0
    assert (whole["sandboxes"], whole["execs"], whole["exec_seconds"]) == (1, 1, 0.25)
    part = meter.summary("a", rfc3339(T0 + 5), rfc3339(T0 + 15))["totals"]
    assert part["sandbox_seconds"] == 5.0 and part["suspended_seconds"] == 5.0
    assert part["sandboxes"] == 0 and part["execs"] == 0  # both outside the window
    assert meter.summary("b", None, None)["totals"]["forked_sandboxes"] == 1


def test_a_live_sandbox_counts_up_to_now_and_the_default_window(clock: Clock) -> None:
    meter = UsageMeter()
    meter.sandbox_started("a", "sb1")
    clock.now = T0 + 7
    body = meter.summary("a", None, None)
    assert body["to"] == rfc3339(T0 + 7)
    assert body["from"] == rfc3339(T0 + 7 - 30 * 24 * 3600)
    assert body["totals"]["sandbox_seconds"] == 7.0


def test_old_records_are_pruned(clock: Clock) -> None:
    meter = UsageMeter()
    meter.sandbox_started("a", "old")
    meter.exec_ran("a", 1.0)
    meter.sandbox_ended("old")
    meter.sandbox_started("a", "live")
    clock.now = T0 + RETAIN_S + 10
    meter.exec_ran("a", 2.0)  # an insert past the prune time prunes
    totals = meter.summary("a", rfc3339(T0 - 1), None)["totals"]
    assert totals["sandboxes"] == 1  # the live one is kept however old
    assert totals["execs"] == 1 and totals["exec_seconds"] == 2.0


def test_bad_windows_are_400s(clock: Clock) -> None:
    meter = UsageMeter()
    for start, end, word in (
        ("yesterday", None, "from"),
        (None, "2027-01-01T00:00:00", "time zone"),
        ("2027-02-01T00:00:00Z", "2027-01-01T00:00:00Z", "later"),
    ):
        with pytest.raises(WireError) as got:
            meter.summary("a", start, end)
        assert got.value.status == 400 and word in got.value.message
