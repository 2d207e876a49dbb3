"""Fault injection for transport tests: scripted answers a real server
cannot produce on demand (a read timeout after the request left, a reset,
503 ``at_capacity`` exactly twice), and the four client flavours built
around one script.

A :class:`Script` is an ``httpx.MockTransport`` handler that answers from a
list: each step is an ``httpx.Response``, an exception to raise (as the
network would), or a callable ``request -> Response``. It records every
request, so a test can assert how many were sent.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from .bridge import BlockingBridge

__all__ = ["FLAVOURS", "Flavour", "Harness", "Script", "envelope", "make_client"]

Wire = Literal["daemon", "gateway"]
Flavour = Literal["daemon-sync", "daemon-async", "gateway-sync", "gateway-async"]
FLAVOURS: tuple[Flavour, ...] = ("daemon-sync", "daemon-async", "gateway-sync", "gateway-async")
Step = httpx.Response | BaseException | Callable[[httpx.Request], httpx.Response]


def envelope(wire: Wire, status: int, code: str | None, message: str = "boom") -> httpx.Response:
    """An error answer in the envelope of ``wire``."""
    if wire == "daemon":
        body: dict[str, Any] = {"error": message}
        if code is not None:
            body["error_code"] = code
    else:
        body = {"message": message}
        if code is not None:
            body["code"] = code
    return httpx.Response(status, json=body)


class Script:
    """Answers requests from ``steps`` in order; once they run out, every
    further request gets ``default`` (200 ``{}`` unless given)."""

    def __init__(self, steps: Sequence[Step] = (), default: Step | None = None) -> None:
        self.steps = list(steps)
        self.default: Step = default if default is not None else httpx.Response(200, json={})
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.steps.pop(0) if self.steps else self.default
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, httpx.Response):
            return step
        return step(request)

    def sent(self, method: str | None = None) -> list[httpx.Request]:
        return [r for r in self.requests if method is None or r.method == method]


@dataclass
class Harness:
    """One client of some flavour (blocking facade), with the sleeps its
    retry loop asked for (recorded, never slept)."""

    flavour: Flavour
    client: Any
    raw: Any
    sleeps: list[float] = field(default_factory=list)

    @property
    def wire(self) -> Wire:
        return "daemon" if self.flavour.startswith("daemon") else "gateway"

    def close(self) -> None:
        self.client.close()  # a bridge also closes its event loop


def make_client(
    flavour: Flavour,
    handler: Callable[[httpx.Request], httpx.Response],
    *,
    seed: int = 7,
    **kwargs: Any,
) -> Harness:
    """A client of ``flavour`` over ``httpx.MockTransport(handler)``, with a
    seeded RNG and a recording sleep."""
    from ..client import AsyncCollimateClient, CollimateClient
    from ..gateway import AsyncGatewayClient, GatewayClient

    sleeps: list[float] = []

    async def async_sleep(delay: float) -> None:
        sleeps.append(delay)

    common: dict[str, Any] = {
        "httpx_transport": httpx.MockTransport(handler),
        "rng": random.Random(seed),
        **kwargs,
    }
    raw: Any
    if flavour == "daemon-sync":
        raw = CollimateClient(sleep=sleeps.append, **common)
    elif flavour == "daemon-async":
        raw = AsyncCollimateClient(sleep=async_sleep, **common)
    elif flavour == "gateway-sync":
        raw = GatewayClient(
            "col_pro_test0000", "https://gateway.invalid", sleep=sleeps.append, **common
        )
    else:
        raw = AsyncGatewayClient(
            "col_pro_test0000", "https://gateway.invalid", sleep=async_sleep, **common
        )
    client = BlockingBridge(raw) if flavour.endswith("async") else raw
    return Harness(flavour, client, raw, sleeps)
