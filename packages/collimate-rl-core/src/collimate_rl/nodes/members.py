"""Turning what a caller names as nodes into clients, for either flavour.

A node is a URL (``http://host:port``), ``unix:/path/to.sock``, or a client
the caller built. Nodes given by name get clients that never retry on their
own (``retries=0``): the pool does the retrying, across nodes, so a refusal
from one node goes to the next at once instead of after that node's backoff.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..client import AsyncCollimateClient, CollimateClient

__all__ = ["endpoint_name", "split_urls", "to_clients"]


def split_urls(text: str) -> list[str]:
    """``"http://a:8080, http://b:8080"`` -> the two URLs (blank parts dropped)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _one(
    node: Any, *, asynchronous: bool, timeout: float, headers: Mapping[str, str] | None
) -> Any:
    if not isinstance(node, str):
        return node
    cls = AsyncCollimateClient if asynchronous else CollimateClient
    if node.startswith("unix:"):
        path = node[len("unix:") :]
        if not path:
            raise ValueError(f"node {node!r}: a unix node needs a socket path")
        return cls(unix_socket=path, timeout=timeout, retries=0, headers=headers)
    if not node.startswith(("http://", "https://")):
        raise ValueError(f"node {node!r}: expected http(s)://host:port, unix:/path or a client")
    return cls(node, timeout=timeout, retries=0, headers=headers)


def to_clients(
    nodes: Sequence[Any],
    *,
    asynchronous: bool,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    allow_empty: bool = False,
) -> list[Any]:
    if isinstance(nodes, str):
        nodes = split_urls(nodes)
    clients = [_one(n, asynchronous=asynchronous, timeout=timeout, headers=headers) for n in nodes]
    if not clients and not allow_empty:
        raise ValueError("a node pool needs at least one node")
    return clients


def endpoint_name(client: Any, index: int) -> str:
    endpoint = getattr(client, "endpoint", None)
    return endpoint if isinstance(endpoint, str) else f"node-{index}"
