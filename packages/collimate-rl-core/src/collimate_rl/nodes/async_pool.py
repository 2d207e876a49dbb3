"""``AsyncNodePool``: :class:`~collimate_rl.nodes.NodePool` with coroutines,
over async clients (same routing, same rules: see :mod:`.pool`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..errors import CollimateError
from ..retry import RetryPolicy
from ..wire import nothing_happened
from .members import endpoint_name, to_clients
from .router import Router, merged_health, retry_delay, session_id_of

__all__ = ["AsyncNodePool"]

T = TypeVar("T")


class AsyncNodePool:
    """An async client over several nodes (see :class:`.NodePool`)."""

    def __init__(
        self,
        nodes: Sequence[Any] | str,
        *,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.15,
        retry_budget: float = 30.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._clients = to_clients(nodes, asynchronous=True, timeout=timeout)
        self._router = Router.of([endpoint_name(c, i) for i, c in enumerate(self._clients)])
        self._policy = RetryPolicy(retries=retries, backoff=backoff, retry_budget=retry_budget)
        self._sleep = sleep

    @property
    def endpoint(self) -> str:
        return "pool:" + "|".join(n.endpoint for n in self._router.nodes)

    @property
    def clients(self) -> list[Any]:
        return list(self._clients)

    def nodes(self) -> list[dict[str, Any]]:
        return self._router.snapshot()

    def __repr__(self) -> str:
        return f"AsyncNodePool({[n.endpoint for n in self._router.nodes]!r})"

    async def health(self) -> dict[str, Any]:
        async def ask(index: int, client: Any) -> Mapping[str, Any] | BaseException:
            try:
                answer: Mapping[str, Any] = await client.health()
            except CollimateError as exc:
                self._router.learn(index, None)
                return exc
            self._router.learn(index, answer)
            return answer

        answers = await asyncio.gather(*(ask(i, c) for i, c in enumerate(self._clients)))
        return merged_health(list(answers), self._router.snapshot())

    async def images(self) -> list[dict[str, Any]]:
        _, images = await self._anywhere_at(lambda c: c.images(), idempotent=True)
        found: list[dict[str, Any]] = images
        return found

    async def exec_once(self, template_id: str, **kwargs: Any) -> dict[str, Any]:
        _, answer = await self._anywhere_at(lambda c: c.exec_once(template_id, **kwargs))
        result: dict[str, Any] = answer
        return result

    async def create_session(
        self, template_id: str, *, egress: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        kwargs = {} if egress is None else {"egress": egress}
        index, session = await self._anywhere_at(
            lambda client: client.create_session(template_id, **kwargs)
        )
        self._router.own(session_id_of(session), index)
        created: dict[str, Any] = session
        return created

    async def session_exec(self, session_id: str, **kwargs: Any) -> dict[str, Any]:
        index = await self._owner(session_id)
        answer: dict[str, Any] = await self._at(
            index, lambda c: c.session_exec(session_id, **kwargs), False
        )
        return answer

    async def get_session(self, session_id: str) -> dict[str, Any]:
        index = await self._owner(session_id)
        info: dict[str, Any] = await self._at(index, lambda c: c.get_session(session_id), True)
        return info

    async def list_sessions(self) -> list[dict[str, Any]]:
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
        index = await self._owner(session_id)
        answer: dict[str, Any] = await self._at(index, lambda c: c.delete_session(session_id), True)
        self._router.forget(session_id)
        return answer

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()

    async def __aenter__(self) -> AsyncNodePool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

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
        self._sleep = asyncio.sleep

    async def _owner(self, session_id: str) -> int:
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
        return 0

    async def _anywhere_at(
        self, call: Callable[[Any], Awaitable[T]], idempotent: bool = False
    ) -> tuple[int, T]:
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
