"""A GRPO group as live forks of one session, all or nothing.

``Session.fork_group(n)`` forks the session's sandbox into ``n`` copy-on-write
children. One ``fork`` call may ask for at most the tier's cap (demo 4, pro
32, ent 64), so the group is forked in chunks; fork a quiescent parent (its
shared prefix done), since the chunks copy it at slightly different moments.

The width is strict: a trainer that asked for a group of ``n`` must never
get ``n - 1`` (the group-relative advantage would silently change meaning).
If a chunk comes back short, or any call fails, every child forked so far is
deleted and the error raised. Each child carries its seed from
:func:`collimate_rl.seeds.group_seeds` (``seed_mode``), sent with every exec
in it, so ``"crn"`` gives the group common random numbers.

Leaving the ``with`` block deletes every child, also when the block raised;
the parent session stays (a trainer forks the next group from it). Closing
the session closes the groups forked from it, so a group that was never
closed does not outlive its parent.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, Literal

import anyio

from .._aio import uncancellable
from ..errors import CollimateError, GatewayError
from ..sandbox import AsyncSandbox, ExecResult, Sandbox
from ..seeds import group_seeds

__all__ = ["AsyncForkGroup", "ForkGroup", "plan_group"]

log = logging.getLogger("collimate_rl.fork_group")

OnInfraError = Literal["raise", "none"]
Labels = Mapping[str, str] | Sequence[Any] | None
#: Parallel execs per group when the caller names no ``concurrency``.
DEFAULT_CONCURRENCY = 16


def _check_on_infra_error(value: str) -> None:
    if value not in ("raise", "none"):
        raise ValueError(f"on_infra_error must be 'raise' or 'none', got {value!r}")


def plan_group(
    n: int, cap: int, labels: Labels
) -> list[tuple[int, Mapping[str, str] | list[Any] | None]]:
    """The fork calls for a group of ``n``: ``[(count, labels), ...]``.

    ``labels`` is one mapping for every child, or a sequence with one entry
    per child (sliced along the chunks).
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"a fork group needs n >= 1 children, got {n!r}")
    if not isinstance(cap, int) or cap < 1:
        raise ValueError(f"max_per_call must be an int >= 1, got {cap!r}")
    per_child: list[Any] | None = None
    if labels is not None and not isinstance(labels, Mapping):
        per_child = list(labels)
        if len(per_child) != n:
            raise ValueError(f"labels has {len(per_child)} entries for a group of {n}")
    calls: list[tuple[int, Mapping[str, str] | list[Any] | None]] = []
    done = 0
    while done < n:
        k = min(cap, n - done)
        chunk = per_child[done : done + k] if per_child is not None else labels
        calls.append((k, chunk))  # type: ignore[arg-type]
        done += k
    return calls


def _children(answer: Any) -> list[dict[str, Any]]:
    """The children of one fork answer; one without an id is a broken server."""
    children = answer if isinstance(answer, list) else []
    good = [dict(c) for c in children if isinstance(c, Mapping) and c.get("id")]
    if len(good) != len(children):
        raise GatewayError(f"a fork answered children without ids: {children!r:.200}")
    return good


def _check_chunk(got: int, asked: int, made: int, n: int) -> None:
    if got != asked:
        raise GatewayError(
            f"a fork asked for {asked} children and got {got} "
            f"({made}/{n} of the group); the group was torn down",
            code="fork_short",
        )


class _GroupBase:
    seeds: list[str | None]

    def __init__(self, parent: Any, n: int) -> None:
        self.parent = parent
        self.n = n
        self.children: list[Any] = []

    @property
    def ids(self) -> list[str]:
        return [c.session_id or "" for c in self.children]

    def __len__(self) -> int:
        return len(self.children)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.children)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={self.n}, live={len(self.children)})"


def _raise_first(errors: dict[int, BaseException]) -> None:
    """Raise the failure of the lowest-numbered child, if any failed."""
    if errors:
        raise errors[min(errors)]


class ForkGroup(_GroupBase):
    """``n`` live children of a :class:`~collimate_rl.Session` (blocking).

    Children are :class:`~collimate_rl.Sandbox` handles (``exec``,
    ``upload_bytes``, ``download``), each with its seed as ``default_seed``.
    """

    children: list[Sandbox]

    def __init__(
        self,
        parent: Any,
        n: int,
        *,
        seed_mode: str = "crn",
        base_seed: str | None = None,
        labels: Labels = None,
        default_timeout: int = 30,
        max_per_call: int,
    ) -> None:
        super().__init__(parent, n)
        self.seeds = group_seeds(n, seed_mode, base_seed)
        calls = plan_group(n, max_per_call, labels)
        made: list[dict[str, Any]] = []
        try:
            for count, chunk in calls:
                got = _children(parent.fork(count, labels=chunk))
                made += got  # before the check: a short chunk's children are torn down too
                _check_chunk(len(got), count, len(made), n)
        except BaseException:
            self._teardown(c["id"] for c in made)
            raise
        for child, seed in zip(made, self.seeds, strict=True):
            sb = Sandbox.adopt(
                parent.client,
                child["id"],
                template=parent.template,
                default_timeout=default_timeout,
                default_seed=seed,
            )
            sb.endpoints = {str(k): str(v) for k, v in dict(child.get("endpoints") or {}).items()}
            self.children.append(sb)

    def __getitem__(self, i: int) -> Sandbox:
        return self.children[i]

    def _teardown(self, ids: Any) -> list[BaseException]:
        errors: list[BaseException] = []
        for child_id in ids:
            try:
                self.parent.client.delete_sandbox(child_id)
            except Exception as exc:  # keep deleting the rest
                log.warning("could not delete fork child %s: %s", child_id, exc)
                errors.append(exc)
        return errors

    def _run(self, worker: Callable[[int], Any], concurrency: int | None) -> list[Any]:
        n = len(self.children)
        if n == 0:
            return []
        outcomes: list[Any] = [None] * n
        errors: dict[int, BaseException] = {}

        def guarded(i: int) -> None:
            try:
                outcomes[i] = worker(i)
            except BaseException as exc:
                errors[i] = exc

        with ThreadPoolExecutor(
            max_workers=max(1, min(n, concurrency or DEFAULT_CONCURRENCY))
        ) as ex:
            list(ex.map(guarded, range(n)))
        _raise_first(errors)
        return outcomes

    def exec_each(
        self,
        code: str | None = None,
        *,
        command: str | None = None,
        commands: Sequence[Sequence[str]] | None = None,
        files: Sequence[Mapping[str, str]] | None = None,
        timeout_seconds: int | None = None,
        concurrency: int | None = None,
        on_infra_error: OnInfraError = "raise",
    ) -> list[ExecResult | None]:
        """The same exec in every child, in parallel; results by position.

        ``on_infra_error="raise"`` raises the first failed child's error once
        all have finished (resample the group); ``"none"`` leaves ``None`` in
        a failed child's slot.
        """
        _check_on_infra_error(on_infra_error)

        def one(i: int) -> ExecResult | None:
            try:
                return self.children[i].exec(
                    code,
                    command=command,
                    commands=commands,
                    files=files,
                    timeout_seconds=timeout_seconds,
                )
            except CollimateError:
                if on_infra_error == "raise":
                    raise
                return None

        return self._run(one, concurrency)

    def map(
        self,
        fn: Callable[[int, Sandbox], Any],
        *,
        concurrency: int | None = None,
        on_infra_error: OnInfraError = "raise",
    ) -> list[Any]:
        """``fn(index, child)`` for every child, in parallel; results by position.

        With ``on_infra_error="none"`` a :class:`~collimate_rl.CollimateError`
        becomes ``None``; any other exception (a bug in ``fn``) always raises.
        """
        _check_on_infra_error(on_infra_error)

        def one(i: int) -> Any:
            try:
                return fn(i, self.children[i])
            except CollimateError:
                if on_infra_error == "raise":
                    raise
                return None

        return self._run(one, concurrency)

    def close(self) -> None:
        """Delete every child (the parent stays); raises the first failed
        delete after trying them all."""
        ids = [c.session_id for c in self.children if c.session_id]
        for c in self.children:
            c.session_id = None  # a child's own close() is now a no-op
        self.children = []
        errors = self._teardown(ids)
        if errors:
            raise errors[0]

    def __enter__(self) -> ForkGroup:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.close()
        except Exception:
            if exc_type is None:
                raise
            log.warning("fork group teardown failed while %s propagated", exc_type.__name__)


class AsyncForkGroup(_GroupBase):
    """:class:`ForkGroup` over an async client.

    ``session.fork_group(n)`` forks when awaited or entered::

        async with session.fork_group(8) as group:   # or: group = await ...
            results = await group.exec_each("print(1)")
    """

    children: list[AsyncSandbox]

    def __init__(
        self,
        parent: Any,
        n: int,
        *,
        seed_mode: str = "crn",
        base_seed: str | None = None,
        labels: Labels = None,
        default_timeout: int = 30,
        max_per_call: int,
    ) -> None:
        super().__init__(parent, n)
        self.seeds = group_seeds(n, seed_mode, base_seed)
        self._calls = plan_group(n, max_per_call, labels)
        self._default_timeout = default_timeout
        self._opened = False

    async def open(self) -> AsyncForkGroup:
        """Fork the group (once; later calls return it as is)."""
        if self._opened:
            return self
        self._opened = True
        made: list[dict[str, Any]] = []
        try:
            for count, chunk in self._calls:
                got = _children(await self.parent.fork(count, labels=chunk))
                made += got
                _check_chunk(len(got), count, len(made), self.n)
        except BaseException:
            await uncancellable(self._teardown([c["id"] for c in made]))
            raise
        for child, seed in zip(made, self.seeds, strict=True):
            sb = AsyncSandbox.adopt(
                self.parent.client,
                child["id"],
                template=self.parent.template,
                default_timeout=self._default_timeout,
                default_seed=seed,
            )
            sb.endpoints = {str(k): str(v) for k, v in dict(child.get("endpoints") or {}).items()}
            self.children.append(sb)
        return self

    def __await__(self) -> Generator[Any, None, AsyncForkGroup]:
        return self.open().__await__()

    def __getitem__(self, i: int) -> AsyncSandbox:
        return self.children[i]

    async def _teardown(self, ids: list[str]) -> list[BaseException]:
        errors: list[BaseException] = []
        for child_id in ids:
            try:
                await self.parent.client.delete_sandbox(child_id)
            except Exception as exc:
                log.warning("could not delete fork child %s: %s", child_id, exc)
                errors.append(exc)
        return errors

    async def _run(
        self, worker: Callable[[int], Awaitable[Any]], concurrency: int | None
    ) -> list[Any]:
        n = len(self.children)
        outcomes: list[Any] = [None] * n
        errors: dict[int, BaseException] = {}
        limiter = anyio.CapacityLimiter(max(1, min(n or 1, concurrency or DEFAULT_CONCURRENCY)))

        async def guarded(i: int) -> None:
            async with limiter:
                try:
                    outcomes[i] = await worker(i)
                except Exception as exc:
                    errors[i] = exc

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(guarded, i)
        _raise_first(errors)
        return outcomes

    async def exec_each(
        self,
        code: str | None = None,
        *,
        command: str | None = None,
        commands: Sequence[Sequence[str]] | None = None,
        files: Sequence[Mapping[str, str]] | None = None,
        timeout_seconds: int | None = None,
        concurrency: int | None = None,
        on_infra_error: OnInfraError = "raise",
    ) -> list[ExecResult | None]:
        """See :meth:`ForkGroup.exec_each`."""
        _check_on_infra_error(on_infra_error)

        async def one(i: int) -> ExecResult | None:
            try:
                return await self.children[i].exec(
                    code,
                    command=command,
                    commands=commands,
                    files=files,
                    timeout_seconds=timeout_seconds,
                )
            except CollimateError:
                if on_infra_error == "raise":
                    raise
                return None

        return await self._run(one, concurrency)

    async def map(
        self,
        fn: Callable[[int, AsyncSandbox], Awaitable[Any]],
        *,
        concurrency: int | None = None,
        on_infra_error: OnInfraError = "raise",
    ) -> list[Any]:
        """See :meth:`ForkGroup.map` (``fn`` is a coroutine function)."""
        _check_on_infra_error(on_infra_error)

        async def one(i: int) -> Any:
            try:
                return await fn(i, self.children[i])
            except CollimateError:
                if on_infra_error == "raise":
                    raise
                return None

        return await self._run(one, concurrency)

    async def close(self) -> None:
        """Delete every child, even while the caller is being cancelled."""
        ids = [c.session_id for c in self.children if c.session_id]
        for c in self.children:
            c.session_id = None
        self.children = []
        box: list[list[BaseException]] = []

        async def run() -> None:
            box.append(await self._teardown(ids))

        await uncancellable(run())
        if box and box[0]:
            raise box[0][0]

    async def __aenter__(self) -> AsyncForkGroup:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.close()
        except Exception:
            if exc_type is None:
                raise
            log.warning("fork group teardown failed while %s propagated", exc_type.__name__)
