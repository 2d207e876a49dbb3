"""What both fork-group flavours share: planning the fork calls
(:func:`plan_group`), reading their answers, and ``GroupBase`` (what a group
holds). ``AsyncForkGroup`` is written in ``collimate_rl/gateway_flows/_async/fork_group.py``,
``ForkGroup`` generated from it; the public module is
``collimate_rl.gateway_flows.fork_group``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from ..errors import GatewayError

__all__ = [
    "DEFAULT_CONCURRENCY",
    "GroupBase",
    "Labels",
    "OnInfraError",
    "check_chunk",
    "check_on_infra_error",
    "children_of",
    "log",
    "plan_group",
    "raise_first",
]

log = logging.getLogger("collimate_rl.fork_group")

OnInfraError = Literal["raise", "none"]
Labels = Mapping[str, str] | Sequence[Any] | None
#: Parallel execs per group when the caller names no ``concurrency``.
DEFAULT_CONCURRENCY = 16


def check_on_infra_error(value: str) -> None:
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


def children_of(answer: Any) -> list[dict[str, Any]]:
    """The children of one fork answer; one without an id is a broken server."""
    children = answer if isinstance(answer, list) else []
    good = [dict(c) for c in children if isinstance(c, Mapping) and c.get("id")]
    if len(good) != len(children):
        raise GatewayError(f"a fork answered children without ids: {children!r:.200}")
    return good


def check_chunk(got: int, asked: int, made: int, n: int) -> None:
    if got != asked:
        raise GatewayError(
            f"a fork asked for {asked} children and got {got} "
            f"({made}/{n} of the group); the group was torn down",
            code="fork_short",
        )


class GroupBase:
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


def raise_first(errors: dict[int, BaseException]) -> None:
    """Raise the failure of the lowest-numbered child, if any failed."""
    if errors:
        raise errors[min(errors)]
