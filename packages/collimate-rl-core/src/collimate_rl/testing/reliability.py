"""The fault matrix: each call of the daemon wire under each fault of
:class:`~.proxy.FaultProxy`, checked against the server's own counters.

One *case* is one logical call (create, session exec, one-shot, delete, a
packed ``grade_batch``, a ``grade_batch`` of lone grades) made through the
proxy while it injects one fault. A case then checks what a trainer relies
on:

* no request executed twice: no POST reached the server twice with the same
  bytes (every call here carries a seed of its own, so two equal bodies can
  only be one request sent again), and the server ran no more execs than
  reached it;
* every failure is typed: a :class:`~collimate_rl.CollimateError`, nothing
  else;
* no infrastructure failure became a reward: a grade is either flagged
  ``infra_error`` or has exactly the reward its candidate earns;
* the retry budget holds: at most ``retries`` sleeps, adding up to at most
  ``retry_budget`` seconds;
* every result is accounted for once: one result per candidate, each index
  once.

Sessions left behind are checked once for the whole matrix
(:func:`settle_sessions`): a create the server ran but whose answer was lost
leaves a session only its idle reaper can end, so the matrix runs with a
short ``session_ttl`` and waits for the server to count zero.

The reliability scripts (``reliability/``) and the tests share this module.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..batch import grade_batch
from ..client import CollimateClient
from ..errors import CollimateError
from ..grading import grade
from ..rewards import StdioReward
from ..seeds import fresh_seed
from .proxy import FAULTS, FaultProxy, Match, ProxyStats

__all__ = [
    "CALLS",
    "CASE_FAULTS",
    "Case",
    "Counters",
    "Matrix",
    "SPEC",
    "candidates",
    "expected_reward",
    "grade_outcome",
    "settle_sessions",
]

Call = Literal["create", "exec", "one_shot", "delete", "grade_packed", "grade_alone"]
CALLS: Final[tuple[Call, ...]] = (
    "create",
    "exec",
    "one_shot",
    "delete",
    "grade_packed",
    "grade_alone",
)
#: The proxy's per-request faults, plus the listener's: ``refuse`` (refused
#: once, then open again) and ``refuse_all`` (refused for the whole call).
CASE_FAULTS: Final[tuple[str, ...]] = (*FAULTS, "refuse", "refuse_all")
_MATCH: Final[dict[Call, Match]] = {
    "create": "create",
    "exec": "exec",
    "one_shot": "one_shot",
    "delete": "delete",
    "grade_packed": "one_shot",
    "grade_alone": "one_shot",
}
#: Bursts long enough to recover from (``at_capacity``) or to exhaust a
#: client's retries (``draining``: one more than ``retries``).
_BURST: Final[dict[str, int]] = {"at_capacity": 2}

#: A reward every candidate below is graded by: ``a + b`` from stdin.
SPEC: Final = StdioReward([{"input": "3 4\n", "output": "7"}, {"input": "1 1\n", "output": "2"}])
_RIGHT: Final = "a, b = map(int, input().split())\nprint(a + b)  # {n}\n"
_WRONG: Final = "a, b = map(int, input().split())\nprint(a - b)  # {n}\n"


def candidates(count: int, salt: str) -> list[str]:
    """``count`` candidates, right and wrong in turn, each unique to ``salt``."""
    return [(_RIGHT if i % 2 == 0 else _WRONG).format(n=f"{salt}-{i}") for i in range(count)]


def expected_reward(candidate: str) -> float:
    """What a candidate of :func:`candidates` earns when graded."""
    return 1.0 if "print(a + b)" in candidate else 0.0


def grade_outcome(client: CollimateClient, candidate: str, template: str = "py") -> str:
    """Grade one candidate of :func:`candidates` by :data:`SPEC` (a fresh
    seed) and say what came of it: ``"ok"`` (the reward it earns),
    ``"infra"`` (a typed :class:`~collimate_rl.CollimateError`, or flagged
    ``infra_error``), ``"wrong"`` (any other reward: a failure became a
    reward) or ``"untyped <the exception>"`` (anything else raised)."""
    try:
        r = grade(client, template, candidate, SPEC, seed=fresh_seed())
    except CollimateError:
        return "infra"
    except Exception as exc:  # an untyped failure is a finding
        return f"untyped {exc!r}"
    if r.infra_error:
        return "infra"
    return "ok" if r.reward == expected_reward(candidate) else "wrong"


@dataclass(frozen=True)
class Counters:
    """The server's own counts, from ``/v1/health``."""

    execs_run: int
    sessions: int
    sessions_created: int
    sessions_ended: int

    @classmethod
    def of(cls, health: dict[str, Any]) -> Counters:
        return cls(
            int(health.get("execs_run", 0)),
            int(health.get("sessions", 0)),
            int(health.get("sessions_created", 0)),
            int(health.get("sessions_ended", 0)),
        )


@dataclass
class Case:
    """One call under one fault, and what was found."""

    call: str
    fault: str
    outcome: Literal["ok", "typed", "untyped"] = "ok"
    error: str = ""
    injected: int = 0
    executed_twice: int = 0  # POSTs that reached the server twice
    ran_unforwarded: int = 0  # execs the server ran beyond what reached it
    infra_as_reward: int = 0  # grades whose reward is not what was earned
    results_lost: int = 0  # candidates without exactly one result
    infra_flagged: int = 0  # grades flagged infra_error (counted, not a defect)
    requests: int = 1  # logical requests the call may make (each with its budget)
    sleeps: list[float] = field(default_factory=list)
    over_budget: int = 0  # 1 when the retries or their sleeps exceeded the budget

    @property
    def clean(self) -> bool:
        return (
            self.outcome != "untyped"
            and not self.executed_twice
            and not self.ran_unforwarded
            and not self.infra_as_reward
            and not self.results_lost
            and not self.over_budget
        )


class Matrix:
    """Runs cases through ``proxy`` against the server at ``direct_url``.

    ``health()`` reads the server's counters without going through the
    proxy. ``retries``/``retry_budget`` are the proxied client's.
    """

    def __init__(
        self,
        proxy: FaultProxy,
        direct_url: str,
        *,
        template: str = "py",
        retries: int = 3,
        backoff: float = 0.05,
        retry_budget: float = 2.0,
        timeout: float = 2.0,
        exec_delay_s: float | None = None,
    ) -> None:
        """Execs and one-shots are sent without ``timeout_seconds`` (the
        server's default applies), so their read timeout is the client's
        ``timeout`` and the proxy's ``delay`` goes past it. A grade always
        sends its ``timeout_seconds`` and waits 30 s more: ``exec_delay_s``
        (e.g. 33) holds a grade's answer past that (grades then ask for 1 s);
        ``None`` holds it for the proxy's delay only, within its wait."""
        self.proxy = proxy
        self.exec_delay_s = exec_delay_s
        # a grade's read timeout is its timeout_seconds + 30 s (retry.py)
        self.grade_timeout_s = 1 if exec_delay_s is not None else 30
        self.template = template
        self.retries = retries
        self.retry_budget = retry_budget
        self.direct = CollimateClient(direct_url, timeout=60.0)
        self._sleeps: list[float] = []
        self._after_sleep: Callable[[], None] | None = None
        self.client = CollimateClient(
            proxy.url,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            retry_budget=retry_budget,
            sleep=self._sleep,  # records (and still sleeps) every backoff
        )

    def close(self) -> None:
        self.client.close()
        self.direct.close()

    def counters(self) -> Counters:
        return Counters.of(self.direct.health())

    def _sleep(self, delay: float) -> None:
        self._sleeps.append(delay)
        time.sleep(delay)
        if self._after_sleep is not None:
            self._after_sleep()

    def _seed(self) -> str:
        return fresh_seed()

    # -- one case -----------------------------------------------------------

    def run(self, call: Call, fault: str) -> Case:
        case = Case(call, fault)
        before_stats = self.proxy.snapshot()
        before = self.counters()
        self._sleeps = []
        with self._fault(call, fault, case):
            try:
                self._do(call, case)
            except CollimateError as exc:
                case.outcome, case.error = "typed", f"{type(exc).__name__}: {exc}"
            except Exception as exc:  # anything untyped is a finding
                case.outcome, case.error = "untyped", f"{type(exc).__name__}: {exc}"
        self.proxy.clear()
        self._wait_quiet()
        after = self.counters()
        stats = self.proxy.snapshot().since(before_stats)
        case.injected = sum(stats.injected.values()) + (fault.startswith("refuse"))
        case.executed_twice = stats.duplicates()
        ran = after.execs_run - before.execs_run
        reached = sum(1 for f in stats.forwarded_to("exec", "one_shot") if f.status == 200)
        case.ran_unforwarded = max(0, ran - reached)
        case.sleeps = list(self._sleeps)
        # each logical request has its own budget; a grade_batch sends at
        # most one per candidate and one per pack
        requests = case.requests or 1
        case.over_budget = int(
            len(case.sleeps) > self.retries * requests
            or sum(case.sleeps) > self.retry_budget * requests + 1e-9
        )
        return case

    @contextmanager
    def _fault(self, call: Call, fault: str, case: Case) -> Iterator[None]:
        if fault == "refuse":
            self.proxy.refuse(True)
            self._after_sleep = lambda: self.proxy.refuse(False)
        elif fault == "refuse_all":
            self.proxy.refuse(True)
        else:
            times = _BURST.get(fault, self.retries + 1 if fault == "draining" else 1)
            delay = self.exec_delay_s if call.startswith("grade") else None
            self.proxy.inject(
                fault,  # type: ignore[arg-type]
                times=times,
                match=_MATCH[call],
                delay_s=delay,
            )
        try:
            yield
        finally:
            self._after_sleep = None
            if fault.startswith("refuse"):
                self.proxy.refuse(False)

    def _do(self, call: Call, case: Case) -> None:
        c, t = self.client, self.template
        if call == "create":
            sid = c.create_session(t)["session_id"]
            self.direct.delete_session(sid)
        elif call == "delete":
            sid = self.direct.create_session(t)["session_id"]
            try:
                c.delete_session(sid)
            finally:
                self.direct.delete_session(sid)  # idempotent: gone either way
        elif call == "exec":
            sid = self.direct.create_session(t)["session_id"]
            try:
                c.session_exec(
                    sid,
                    code="print(6 * 7)",
                    seed=self._seed(),
                    timeout_seconds=None,  # type: ignore[arg-type]
                )
            finally:
                self.direct.delete_session(sid)
        elif call == "one_shot":
            c.exec_once(
                t,
                code="print(6 * 7)",
                seed=self._seed(),
                timeout_seconds=None,  # type: ignore[arg-type]
            )
        else:
            n = 6 if call == "grade_packed" else 2
            case.requests = n + (n + 2) // 3
            cands = candidates(n, self._seed()[:12])
            results = grade_batch(
                c,
                t,
                cands,
                SPEC,
                seeds=[self._seed() for _ in cands],
                pack=3 if call == "grade_packed" else 1,
                concurrency=2,
                on_infra_error="zero",
                timeout_seconds=self.grade_timeout_s,
            )
            check_results(cands, results, case)

    def _wait_quiet(self, limit_s: float = 30.0) -> None:
        """Until the server has nothing in flight (a delayed or reset call
        may still be running there) and the proxy has recorded every
        request it read. A call the client gave up on (a read timeout) may
        still be on its way to the server, or answered there but not yet
        recorded. Without waiting for it, its forward would be counted in
        the next case, and a second create with the same bytes there would
        look like a request executed twice."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            h = self.direct.health()
            if not h.get("inflight") and not h.get("running") and not self.proxy.unsettled:
                return
            time.sleep(0.05)


def check_results(cands: list[str], results: list[Any], case: Case) -> None:
    """One result per candidate, each index once, each reward earned or
    flagged ``infra_error``."""
    seen = [r.index for r in results]
    case.results_lost += abs(len(cands) - len(results)) + (len(seen) - len(set(seen)))
    for i, r in enumerate(results):
        if r.index is not None and r.index != i:
            case.results_lost += 1
        case.infra_flagged += bool(r.infra_error)
        if not r.infra_error and r.reward != expected_reward(cands[i]):
            case.infra_as_reward += 1


def settle_sessions(direct: CollimateClient, limit_s: float) -> Counters:
    """Wait (up to ``limit_s``) until the server counts no live session;
    the counters then (``sessions`` is what was left behind)."""
    deadline = time.monotonic() + limit_s
    while True:
        counters = Counters.of(direct.health())
        if counters.sessions == 0 or time.monotonic() > deadline:
            return counters
        time.sleep(0.1)


def summarize(cases: list[Case], stats: ProxyStats) -> dict[str, int]:
    """The matrix's line of the table."""
    return {
        "cases": len(cases),
        "faults_injected": sum(c.injected for c in cases),
        "executed_twice": sum(c.executed_twice + c.ran_unforwarded for c in cases),
        "untyped_failures": sum(c.outcome == "untyped" for c in cases),
        "infra_as_reward": sum(c.infra_as_reward for c in cases),
        "results_lost": sum(c.results_lost for c in cases),
        "over_budget": sum(c.over_budget for c in cases),
        "requests_forwarded": len(stats.forwarded),
    }
