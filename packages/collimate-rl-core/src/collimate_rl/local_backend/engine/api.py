"""The contract between the local backend's HTTP server and its execution engine.

The server owns the wire (routes, sessions, capacity, drain); the engine owns
running one exec in an isolated clone of a warm template. Nothing here knows
about HTTP, and nothing in the server knows how a clone is made.

Lifecycle, per template: ``engine.start()`` once at server start (warm the
interpreter, probe isolation), ``engine.open_clone(...)`` per session (or per
one-shot exec), ``clone.run(job)`` per exec, ``clone.release()`` (or ``close()``)
when the session is deleted/reaped (removes its files and kills anything left),
``engine.close()`` at server stop (nothing may survive it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

IsolationLevel = Literal["namespaces", "process"]
TemplateKind = Literal["python", "shell", "app"]
EgressMode = Literal["open", "none"]


@dataclass(frozen=True)
class Limits:
    """Per-template resource limits, applied to every exec (rlimits always;
    the process count is per clone). Where cgroups are in force (see
    ``quotas``), memory and processes are also bounded per clone, all its
    processes together, and ``cpus`` (when set) bounds its CPU bandwidth:
    not by default, as a CPU cgroup per clone costs every exec latency (its
    wake-ups compete as a group; about 2 ms per one-shot on a busy machine)."""

    cpu_seconds: int = 60
    memory_bytes: int = 1 << 30
    max_processes: int = 256
    file_size_bytes: int = 256 << 20
    output_bytes: int = 16 * 1024 * 1024
    cpus: float | None = None
    #: ``memory_bytes`` also as each process's address-space limit
    #: (``RLIMIT_AS``). Off for runtimes that reserve gigabytes they never
    #: touch (the JVM, Go, Node): their memory is then bounded per clone by
    #: the cgroup, where cgroups are in force, and per run by whoever runs
    #: them (the language runner watches what a run really uses).
    address_space: bool = True


@dataclass(frozen=True)
class TemplateSpec:
    """A template as the engine needs it (parsed from config by the server)."""

    id: str
    kind: TemplateKind
    python: str | None = None  # interpreter for python templates (default: sys.executable)
    preload: tuple[str, ...] = ()  # modules a warm python interpreter imports ahead of time
    networked: bool = False
    limits: Limits = field(default_factory=Limits)
    # absolute host paths shown (read-only) to its clones, beyond the system
    # dirs and the interpreter's own trees (see ``exposure``)
    expose: tuple[str, ...] = ()
    # app templates: a server command with "{port}", the guest ports it serves,
    # an HTTP path probed for readiness, and how many warm clones to keep.
    app_command: str | None = None
    ports: tuple[int, ...] = ()
    ready_http: str | None = None
    ready_timeout_s: float = 30.0
    warm_pool: int = 0
    # extra environment of every exec and app server of the template (a
    # gateway bake's ``ready.env``); the seed variables are the engine's own
    env: tuple[tuple[str, str], ...] = ()
    # why this host cannot run it (what it needs is missing, such as the
    # browser template's Chromium): listed, but every clone of it is refused
    # with this reason instead of a bring-up that times out
    unavailable: str | None = None


@dataclass(frozen=True)
class ExecJob:
    """One exec, already validated by the server (precedence applied, the
    seed drawn if none was sent, the timeout bounded)."""

    kind: Literal["command", "code"]  # `commands` was joined into a command script by the server
    source: str
    seed: str  # 64 hex chars, always set
    timeout_s: float
    # (path, text content), the trailing-newline rule already applied by the server
    files: tuple[tuple[str, str], ...] = ()
    # the CPU this one-shot's turn owns (see run_queue), told to the code as
    # ``COLLIMATE_CPU``; None: none
    cpu: int | None = None


@dataclass(frozen=True)
class ExecOutcome:
    output: bytes  # merged stdout+stderr, already capped
    exit_code: int  # -1 on timeout
    timed_out: bool
    truncated: bool
    fork_time_ms: float
    exec_time_ms: float
    seed_ack: Literal["verified", "off", "no-ack"]


class Clone(Protocol):
    """A live isolated copy of a template: one session, or one one-shot exec."""

    clone_id: str
    endpoints: dict[str, str]  # {"<guest port>": "<host>:<port>"} for app templates
    # connections open to its endpoints through the engine (a relay into its
    # own net namespace), and when one last opened or closed (monotonic): a
    # session driven only through them (a browser over CDP) is not idle
    connections_in: int
    connections_at: float

    async def run(self, job: ExecJob) -> ExecOutcome:
        """Run one exec. Cancelling the awaiting task (client gone) must kill
        the exec's whole process tree before the cancellation propagates."""
        ...

    async def close(self) -> None:
        """Kill everything the clone started and delete its files. Idempotent."""
        ...

    async def release(self) -> None:
        """Done with the clone (a one-shot answered, a session deleted): kill
        everything it started and drop its files, like ``close``, but the
        engine may keep the wiped clone for a later session or one-shot.
        Nothing of this user may reach the next one. Idempotent."""
        ...


class Engine(Protocol):
    isolation: IsolationLevel
    # one line for the banner and /v1/health, never claiming more than is in force
    isolation_detail: str

    async def start(self, templates: list[TemplateSpec]) -> None: ...

    async def open_clone(
        self,
        template: TemplateSpec,
        *,
        egress: EgressMode | None,
        env: Mapping[str, str] | None = None,
    ) -> Clone:
        """Fork a clone of a warm template. ``egress`` is None when the request
        sent no policy; the server already refused policies on non-networked
        templates (400 ``template is vsock-only``). ``env`` (app templates
        without a warm pool only, checked by the server) is added to the
        environment of the clone's app server, which is then started for
        this clone alone. The server passes ``env`` only when there is some."""
        ...

    async def close(self) -> None: ...
