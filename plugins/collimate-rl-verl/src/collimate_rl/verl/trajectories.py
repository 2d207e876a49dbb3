"""The kernels of the trajectories one verl tool serves: one per trajectory,
found again on each call, closed when the trajectory ends or idles.

Why a registry, and what keys it (read from verl 0.9's own agent loop,
``verl/experimental/agent_loop/tool_agent_loop.py``): ``ToolAgentLoop._call_tool``
runs ``create`` -> ``execute`` -> ``release`` around every single tool call,
and calls ``create`` without an instance id, so each call gets a fresh one:
an instance id names one call, not a trajectory. What every call of one
trajectory shares is the ``AgentData`` object that ``ToolAgentLoop.run``
builds once per sample and hands to ``execute`` as ``agent_data=``. It lives
exactly as long as the trajectory (a local of ``run``), so it is the key,
held weakly: when ``run`` returns and the object goes, the kernel is closed.
Not the other candidates:

* ``create_kwargs`` (from the row's ``extra_info.tools_kwargs``) are the
  same for the n rollouts of one prompt: keyed by them, a GRPO group would
  share one interpreter;
* ``agent_data.request_id`` is a fresh ``uuid4`` per trajectory, but under
  ``full_determinism`` it is ``det-<priority>``, reused from step to step,
  and a string carries no end of life. It is the fallback key for an
  ``agent_data`` that cannot be weakly referenced (then the idle TTL alone
  reaps).

A caller that passes no ``agent_data`` (verl's older contract: ``create``
once per trajectory with its own instance id, ``release`` at its end) gets a
kernel per instance id, closed at ``release``.

The idle TTL is the backstop for a trajectory whose end is never seen (an
``AgentData`` kept alive by a trace backend, a cancelled loop): a sweeper
task on the loop closes every kernel idle for longer than ``idle_ttl``
(a call in progress is never idle).

Nothing here imports verl: it is plain asyncio around core's
:class:`~collimate_rl.AsyncPythonTool`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from collimate_rl import AsyncPythonTool

__all__ = ["INFRA_ERROR_KEY", "Trajectory", "TrajectoryKernels"]

log = logging.getLogger("collimate_rl.verl")

#: ("object", id(agent_data)) | ("request", request_id) | ("instance", instance_id)
Key: TypeAlias = tuple[str, Hashable]

#: The key the tool sets in ``agent_data.extra_fields`` when the sandbox of a
#: trajectory fails. verl returns ``extra_fields`` with the sample and its
#: reward managers merge them into the ``extra_info`` handed to
#: ``compute_score``; ``collimate_rl.verl.compute_score`` treats the sample
#: as an infrastructure failure (it raises, or scores a flagged 0.0).
INFRA_ERROR_KEY: Final = "collimate_infra_error"


@dataclass(eq=False)
class Trajectory:
    """One trajectory's kernel, the lock that runs its calls one at a time
    (verl runs a turn's parallel calls concurrently), and its infrastructure
    failure, once it has had one (then no call runs again: the names the
    model defined are gone, and the sample is left out)."""

    tool: AsyncPythonTool
    label: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    failure: str | None = None

    def idle_since(self) -> float | None:
        """``time.monotonic()`` of the last activity, or None while a call runs."""
        return None if self.lock.locked() else self.tool.last_used


class TrajectoryKernels:
    """The live kernels of one tool object (verl builds one tool object per
    agent-loop worker and shares it by every trajectory of that worker)."""

    def __init__(
        self,
        factory: Callable[[], AsyncPythonTool],
        *,
        idle_ttl: float | None = 900.0,
    ) -> None:
        if idle_ttl is not None and idle_ttl <= 0:
            raise ValueError(f"idle_ttl must be positive seconds or None; got {idle_ttl!r}")
        self._factory = factory
        self.idle_ttl = idle_ttl
        self._live: dict[Key, Trajectory] = {}
        self._finalizers: dict[Key, weakref.finalize] = {}  # type: ignore[type-arg]
        self._closing: set[asyncio.Task[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: kernels closed because their trajectory ended / idled (for metrics)
        self.ended = 0
        self.idled = 0

    def __len__(self) -> int:
        return len(self._live)

    @staticmethod
    def key(owner: object | None, instance_id: str) -> Key:
        """What names the trajectory of a call: its ``agent_data`` object (by
        identity), else its request id, else the call's instance id."""
        if owner is None:
            return ("instance", instance_id)
        try:
            weakref.ref(owner)
        except TypeError:
            request_id = getattr(owner, "request_id", None)
            if isinstance(request_id, str):
                return ("request", request_id)
            return ("instance", instance_id)
        return ("object", id(owner))

    def get(self, owner: object | None, instance_id: str) -> Trajectory:
        """The trajectory of this call, made (not started) on its first call."""
        key = self.key(owner, instance_id)
        found = self._live.get(key)
        if found is not None:
            return found
        self._loop = asyncio.get_running_loop()
        request_id = getattr(owner, "request_id", None)
        label = f"request {request_id}" if isinstance(request_id, str) else f"call {instance_id}"
        made = self._live[key] = Trajectory(self._factory(), label)
        if key[0] == "object":
            # called while the object is being freed, before its id can be
            # reused: the entry is gone before any new trajectory could collide
            finalizer = weakref.finalize(owner, self._ended, key)
            finalizer.atexit = False
            self._finalizers[key] = finalizer
        self._start_sweeper()
        return made

    def release(self, instance_id: str) -> None:
        """verl released a call: a kernel keyed by that call's id ends."""
        self.end(("instance", instance_id))

    def end(self, key: Key) -> None:
        """Forget a trajectory and close its kernel (in the background)."""
        finalizer = self._finalizers.pop(key, None)
        if finalizer is not None:
            finalizer.detach()
        trajectory = self._live.pop(key, None)
        if trajectory is not None:
            self._close(trajectory)

    def _ended(self, key: Key) -> None:
        # weakref callback: runs on whatever thread dropped the last reference
        self._finalizers.pop(key, None)
        trajectory = self._live.pop(key, None)
        if trajectory is None:
            return
        self.ended += 1
        loop = self._loop
        if loop is None or loop.is_closed():
            return  # nothing to close it on; the server reaps idle sandboxes
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._close(trajectory)
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._close, trajectory)

    def _close(self, trajectory: Trajectory) -> None:
        task = asyncio.get_running_loop().create_task(self._aclose(trajectory))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    @staticmethod
    async def _aclose(trajectory: Trajectory) -> None:
        try:
            await trajectory.tool.close()
        except Exception as exc:  # a broken sandbox: the server reaps it
            log.debug("collimate_rl.verl: closing the kernel of %s: %s", trajectory.label, exc)

    async def discard(self, trajectory: Trajectory) -> None:
        """Close a failed trajectory's kernel now, keeping the entry (and its
        failure) so its later calls answer the failure without running."""
        await self._aclose(trajectory)

    async def reap_idle(self, now: float | None = None) -> int:
        """Close every kernel idle for longer than ``idle_ttl``; how many."""
        if self.idle_ttl is None:
            return 0
        now = time.monotonic() if now is None else now
        stale = []
        for key, trajectory in self._live.items():
            since = trajectory.idle_since()
            if since is not None and now - since > self.idle_ttl:
                stale.append(key)
        for key in stale:
            log.info(
                "collimate_rl.verl: closing the kernel of %s, idle for more than %ss",
                self._live[key].label,
                self.idle_ttl,
            )
            self.idled += 1
            self.end(key)
        await self.drain()
        return len(stale)

    def _start_sweeper(self) -> None:
        if self.idle_ttl is None or (self._sweeper is not None and not self._sweeper.done()):
            return
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep(self.idle_ttl))

    async def _sweep(self, ttl: float) -> None:
        # runs while kernels are live; the next kernel made starts it again
        while self._live:
            await asyncio.sleep(min(ttl / 4, 60.0))
            await self.reap_idle()

    async def drain(self) -> None:
        """Wait until the kernels already being closed are closed."""
        while self._closing:
            await asyncio.gather(*list(self._closing), return_exceptions=True)

    async def aclose(self) -> None:
        """Close every kernel (the worker is going away)."""
        for key in list(self._live):
            self.end(key)
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
        await self.drain()
