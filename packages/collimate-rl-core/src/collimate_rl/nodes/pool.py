"""``NodePool``: one client over several nodes (daemons on many machines,
or several gateways), accepted wherever a client is.

Work that may go anywhere (a one-shot ``exec_once``, ``create_session``)
goes to the least loaded node that is in. A node that refuses it untouched
(draining, full, or not reachable before a byte was sent: see
:func:`collimate_rl.wire.nothing_happened`) is left out for a while and the
request goes to the next node; when every node refused, the pool waits
(exponential backoff with full jitter, bounded by ``retry_budget``) and
goes round again. A request that may have run (no answer after it was
sent) is never sent again anywhere: the error is raised, as a single
client would. A session lives on the node that created it, and its
requests go there.

``health()`` sums the nodes' ``run_slots`` and ``max_inflight``, so
grading sizes its packs and its concurrency for the whole pool.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..errors import CollimateError
from ..retry import RetryPolicy
from ..wire import nothing_happened
from .members import endpoint_name, to_clients
from .router import Router, merged_health, retry_delay, session_id_of

__all__ = ["NodePool"]

T = TypeVar("T")


class NodePool:
    """A blocking client over several nodes (see the module docstring).

    ``nodes``: URLs, ``unix:/path`` sockets or clients (any mix), or one
    comma-separated string of URLs. ``retries``, ``backoff`` and
    ``retry_budget`` govern the rounds over the nodes; ``timeout`` is the
    clients' the pool builds itself.
    """

    def __init__(
        self,
        nodes: Sequence[Any] | str,
        *,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.15,
        retry_budget: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._clients = to_clients(nodes, asynchronous=False, timeout=timeout)
        self._router = Router.of([endpoint_name(c, i) for i, c in enumerate(self._clients)])
        self._policy = RetryPolicy(retries=retries, backoff=backoff, retry_budget=retry_budget)
        self._sleep = sleep

    # -- identity -------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """One name for the pool (grading keys its packs and facts by it)."""
        return "pool:" + "|".join(n.endpoint for n in self._router.nodes)

    @property
    def clients(self) -> list[Any]:
        return list(self._clients)

    def nodes(self) -> list[dict[str, Any]]:
        """Each node as the pool sees it now: in or out (and why), its
        requests in flight, answered and refused."""
        return self._router.snapshot()

    def __repr__(self) -> str:
        return f"NodePool({[n.endpoint for n in self._router.nodes]!r})"

    # -- the session surface -----------------------------------------------

    def health(self) -> dict[str, Any]:
        answers: list[Mapping[str, Any] | BaseException] = []
        for index, client in enumerate(self._clients):
            try:
                answer = client.health()
            except CollimateError as exc:
                self._router.learn(index, None)
                answers.append(exc)
                continue
            self._router.learn(index, answer)
            answers.append(answer)
        return merged_health(answers, self._router.snapshot())

    def images(self) -> list[dict[str, Any]]:
        images: list[dict[str, Any]] = self._anywhere(lambda c: c.images(), idempotent=True)
        return images

    def exec_once(self, template_id: str, **kwargs: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self._anywhere(lambda c: c.exec_once(template_id, **kwargs))
        return answer

    def create_session(
        self, template_id: str, *, egress: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        kwargs = {} if egress is None else {"egress": egress}
        index, session = self._anywhere_at(
            lambda client: client.create_session(template_id, **kwargs)
        )
        self._router.own(session_id_of(session), index)
        created: dict[str, Any] = session
        return created

    def session_exec(self, session_id: str, **kwargs: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self._at(
            self._owner(session_id), lambda c: c.session_exec(session_id, **kwargs), False
        )
        return answer

    def get_session(self, session_id: str) -> dict[str, Any]:
        info: dict[str, Any] = self._at(
            self._owner(session_id), lambda c: c.get_session(session_id), True
        )
        return info

    def list_sessions(self) -> list[dict[str, Any]]:
        """Every reachable node's sessions (a node that cannot answer has
        none the pool could reach anyway)."""
        found: list[dict[str, Any]] = []
        for index in range(len(self._clients)):
            try:
                sessions = self._at(index, lambda c: c.list_sessions(), True)
            except CollimateError:
                continue
            for session in sessions:
                self._router.own(session_id_of(session), index)
            found.extend(sessions)
        return found

    def delete_session(self, session_id: str) -> dict[str, Any]:
        index = self._owner(session_id)
        answer: dict[str, Any] = self._at(index, lambda c: c.delete_session(session_id), True)
        self._router.forget(session_id)
        return answer

    def close(self) -> None:
        for client in self._clients:
            client.close()

    def __enter__(self) -> NodePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- pickling (into Ray / multiprocessing workers) -------------------

    def __getstate__(self) -> dict[str, Any]:
        return {
            "clients": self._clients,
            "sessions": dict(self._router.sessions),
            "policy": (self._policy.retries, self._policy.backoff, self._policy.retry_budget),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._clients = state["clients"]
        self._router = Router.of([endpoint_name(c, i) for i, c in enumerate(self._clients)])
        self._router.sessions.update(state["sessions"])
        retries, backoff, budget = state["policy"]
        self._policy = RetryPolicy(retries=retries, backoff=backoff, retry_budget=budget)
        self._sleep = time.sleep

    # -- routing ------------------------------------------------------------

    def _owner(self, session_id: str) -> int:
        """The node holding ``session_id``; one not created through this
        pool (another process's) is looked for on every node."""
        index = self._router.owner(session_id)
        if index is not None:
            return index
        for index, client in enumerate(self._clients):
            try:
                client.get_session(session_id)
            except CollimateError:
                continue
            self._router.own(session_id, index)
            return index
        return 0  # (nobody has it: the first node answers the 404)

    def _anywhere(self, call: Callable[[Any], T], idempotent: bool = False) -> T:
        return self._anywhere_at(call, idempotent)[1]

    def _anywhere_at(self, call: Callable[[Any], T], idempotent: bool = False) -> tuple[int, T]:
        """``call`` on the least loaded node that takes it: (node, answer)."""
        state = self._policy.start(idempotent=idempotent)
        while True:
            tried: set[int] = set()
            last: CollimateError | None = None
            while (node := self._router.pick(tried)) is not None:
                tried.add(node.index)
                try:
                    answer = call(self._clients[node.index])
                except CollimateError as err:
                    self._router.done(node, err)
                    if not (nothing_happened(err) or (idempotent and err.status is None)):
                        raise
                    last = err
                    continue
                except BaseException:
                    self._router.done(node)
                    raise
                self._router.done(node)
                return node.index, answer
            assert last is not None
            delay = retry_delay(state, last)
            if delay is None:
                raise last
            self._sleep(delay)

    def _at(self, index: int, call: Callable[[Any], T], idempotent: bool) -> T:
        """``call`` on node ``index`` only (a session's node), retried there
        as a single client would."""
        state = self._policy.start(idempotent=idempotent)
        while True:
            node = self._router.take(index)
            try:
                answer = call(self._clients[index])
            except CollimateError as err:
                self._router.done(node, err)
                delay = retry_delay(state, err)
                if delay is None:
                    raise
                self._sleep(delay)
                continue
            except BaseException:
                self._router.done(node)
                raise
            self._router.done(node)
            return answer
