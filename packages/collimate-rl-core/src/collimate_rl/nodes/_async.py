"""One client over several nodes, ``AsyncMultiNodeClient``.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py`` (edit the async one, then
``hatch run lint:unasync``). The public modules are
``collimate_rl.nodes.client`` and ``collimate_rl.nodes.async_client`` (the
first one says how the pool routes); what both twins share is
``collimate_rl.nodes.router`` and ``collimate_rl.nodes.members``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from .._aio import gather_all
from ..errors import CollimateError
from ..retry import RetryPolicy
from ..wire import nothing_happened
from .members import endpoint_name, to_clients
from .router import Router, merged_health, retry_delay, session_id_of

__all__ = ["AsyncMultiNodeClient"]

T = TypeVar("T")


class AsyncMultiNodeClient:
    """A client over several nodes (see :mod:`collimate_rl.nodes.client`).

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
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        prefer: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._timeout = timeout
        self._headers = dict(headers) if headers else None
        self._clients = to_clients(nodes, asynchronous=True, timeout=timeout, headers=headers)
        self._router = Router.of(
            [endpoint_name(c, i) for i, c in enumerate(self._clients)], home=prefer
        )
        self._policy = RetryPolicy(retries=retries, backoff=backoff, retry_budget=retry_budget)
        self._sleep = sleep

    # -- identity -------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """One name for the pool (grading keys its packs and facts by it)."""
        return "pool:" + "|".join(n.endpoint for n in self._router.nodes)

    @property
    def clients(self) -> list[Any]:
        """The pool's clients, one a node."""
        return list(self._clients)

    def add_nodes(self, nodes: Sequence[Any]) -> list[str]:
        """Add nodes (URLs, ``unix:`` sockets or clients) to the pool, as a
        cluster's new machines join; those already in it (by endpoint) are
        skipped. Returns the endpoints added. The pool's own clients of new
        URLs get the timeout and headers it was made with."""
        known = {n.endpoint for n in self._router.nodes}
        added: list[str] = []
        for client in to_clients(
            [n for n in nodes if not (isinstance(n, str) and n in known)],
            asynchronous=True,
            timeout=self._timeout,
            headers=self._headers,
            allow_empty=True,
        ):
            name = endpoint_name(client, len(self._clients))
            if name in known:
                continue
            self._clients.append(client)
            self._router.add(name)
            known.add(name)
            added.append(name)
        return added

    def nodes(self) -> list[dict[str, Any]]:
        """Each node as the pool sees it now: in or out (and why), its
        requests in flight, answered and refused."""
        return self._router.snapshot()

    def __repr__(self) -> str:
        return f"AsyncMultiNodeClient({[n.endpoint for n in self._router.nodes]!r})"

    # -- the session surface -----------------------------------------------

    async def health(self) -> dict[str, Any]:
        """Every node's health as one body: ``ok`` while any node is,
        ``run_slots`` and ``max_inflight`` summed over the nodes that are ok,
        each node's own answer under ``nodes``."""

        async def ask(index: int, client: Any) -> Mapping[str, Any] | BaseException:
            try:
                answer: Mapping[str, Any] = await client.health()
            except CollimateError as exc:
                self._router.learn(index, None)
                return exc
            self._router.learn(index, answer)
            return answer

        answers = await gather_all(ask(i, c) for i, c in enumerate(self._clients))
        return merged_health(answers, self._router.snapshot())

    async def images(self) -> list[dict[str, Any]]:
        """The image catalog, from any node that answers."""
        _, images = await self._anywhere_at(lambda c: c.images(), idempotent=True)
        found: list[dict[str, Any]] = images
        return found

    async def exec_once(self, template_id: str, **kwargs: Any) -> dict[str, Any]:
        """A one-shot exec on the least loaded node that takes it (the
        arguments are the client's ``exec_once``'s)."""
        _, answer = await self._anywhere_at(lambda c: c.exec_once(template_id, **kwargs))
        result: dict[str, Any] = answer
        return result

    async def create_session(
        self, template_id: str, *, egress: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """A session on the least loaded node that takes it; its requests
        go to that node from then on."""
        kwargs = {} if egress is None else {"egress": egress}
        index, session = await self._anywhere_at(
            lambda client: client.create_session(template_id, **kwargs)
        )
        self._router.own(session_id_of(session), index)
        created: dict[str, Any] = session
        return created

    async def session_exec(self, session_id: str, **kwargs: Any) -> dict[str, Any]:
        """An exec in a session, on the node holding it."""
        index = await self._owner(session_id)
        answer: dict[str, Any] = await self._at(
            index, lambda c: c.session_exec(session_id, **kwargs), False
        )
        return answer

    async def get_session(self, session_id: str) -> dict[str, Any]:
        """A session, from the node holding it."""
        index = await self._owner(session_id)
        info: dict[str, Any] = await self._at(index, lambda c: c.get_session(session_id), True)
        return info

    async def list_sessions(self) -> list[dict[str, Any]]:
        """Every reachable node's sessions (a node that cannot answer has
        none the pool could reach anyway)."""
        found: list[dict[str, Any]] = []
        for index in range(len(self._clients)):
            try:
                sessions = await self._at(index, lambda c: c.list_sessions(), True)
            except CollimateError:
                continue
            for session in sessions:
                self._router.own(session_id_of(session), index)
            found.extend(sessions)
        return found

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        """Delete a session on the node holding it."""
        index = await self._owner(session_id)
        answer: dict[str, Any] = await self._at(index, lambda c: c.delete_session(session_id), True)
        self._router.forget(session_id)
        return answer

    async def aclose(self) -> None:
        """Close every node's client."""
        for client in self._clients:
            await client.aclose()

    async def __aenter__(self) -> AsyncMultiNodeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- pickling (into Ray / multiprocessing workers) -------------------

    def __getstate__(self) -> dict[str, Any]:
        return {
            "clients": self._clients,
            "sessions": dict(self._router.sessions),
            "home": self._router.home,
            "made_with": (self._timeout, self._headers),
            "policy": (self._policy.retries, self._policy.backoff, self._policy.retry_budget),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._clients = state["clients"]
        self._router = Router.of(
            [endpoint_name(c, i) for i, c in enumerate(self._clients)], home=state.get("home")
        )
        self._router.sessions.update(state["sessions"])
        self._timeout, self._headers = state.get("made_with", (120.0, None))
        retries, backoff, budget = state["policy"]
        self._policy = RetryPolicy(retries=retries, backoff=backoff, retry_budget=budget)
        self._sleep = asyncio.sleep

    # -- routing ------------------------------------------------------------

    async def _owner(self, session_id: str) -> int:
        """The node holding ``session_id``; one not created through this
        pool (another process's) is looked for on every node."""
        index = self._router.owner(session_id)
        if index is not None:
            return index
        for index, client in enumerate(self._clients):
            try:
                await client.get_session(session_id)
            except CollimateError:
                continue
            self._router.own(session_id, index)
            return index
        return 0  # (nobody has it: the first node answers the 404)

    async def _anywhere_at(
        self, call: Callable[[Any], Awaitable[T]], idempotent: bool = False
    ) -> tuple[int, T]:
        """``call`` on the least loaded node that takes it: (node, answer)."""
        state = self._policy.start(idempotent=idempotent)
        while True:
            tried: set[int] = set()
            last: CollimateError | None = None
            while (node := self._router.pick(tried)) is not None:
                tried.add(node.index)
                try:
                    answer = await call(self._clients[node.index])
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
            await self._sleep(delay)

    async def _at(self, index: int, call: Callable[[Any], Awaitable[T]], idempotent: bool) -> T:
        """``call`` on node ``index`` only (a session's node), retried there
        as a single client would."""
        state = self._policy.start(idempotent=idempotent)
        while True:
            node = self._router.take(index)
            try:
                answer = await call(self._clients[index])
            except CollimateError as err:
                self._router.done(node, err)
                delay = retry_delay(state, err)
                if delay is None:
                    raise
                await self._sleep(delay)
                continue
            except BaseException:
                self._router.done(node)
                raise
            self._router.done(node)
            return answer
