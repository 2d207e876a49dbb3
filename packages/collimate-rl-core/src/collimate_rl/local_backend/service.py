"""The wire-agnostic core of the local backend: templates, sessions, execs,
capacity, drain, reaping.

Every wire (the daemon's today, the gateway's later) is a thin routing layer
over one :class:`BackendService`: it translates paths and bodies, the service
does the work and raises :class:`WireError` for every refusal. Nothing here
knows about HTTP; nothing here knows how a clone is made (that is the
engine's job, see ``engine/api.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from ..__about__ import __version__
from .admission import Admission
from .egress import EgressDecision, decide_egress
from .engine.api import Clone, Engine, ExecJob, ExecOutcome, TemplateSpec
from .exec_request import format_timeout, parse_exec_body
from .ids import new_id
from .kernels import kernel_pids, kill_kernels
from .language_runs import LanguageRuns
from .run_queue import RunQueue
from .session_env import parse_session_env
from .sessions import Session, SessionStore
from .stats import ExecTally
from .toolchains import LANGUAGE_TEMPLATE
from .wire_errors import WireError, bad_request

log = logging.getLogger("collimate_rl.local_backend")


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


class BackendService:
    """Sessions and execs over an :class:`Engine`, with admission control."""

    def __init__(
        self,
        engine: Engine,
        templates: list[TemplateSpec],
        *,
        max_inflight: int,
        session_ttl: float,
        tombstone_ttl: float = 600.0,
        run_queue: RunQueue | None = None,
        kernel_ttl: float = 0.0,
    ) -> None:
        self.engine = engine
        self.templates: dict[str, TemplateSpec] = {t.id: t for t in templates}
        self.admission = Admission(max_inflight)
        # one-shots take a turn before they take a clone (see run_queue)
        self.run_queue = run_queue if run_queue is not None else RunQueue(0)
        self.sessions = SessionStore(tombstone_ttl)
        self.session_ttl = session_ttl
        # kernels (Sandbox.kernel()) of a session that ran no exec this long
        # are killed (0: never); see ``kernels``
        self.kernel_ttl = kernel_ttl
        self.kernels_reaped = 0
        self._kernel_reaper: asyncio.Task[None] | None = None
        self.running = 0  # execs inside clone.run right now
        # session execs waiting for their session's previous exec (one-shots
        # waiting for a turn are the run queue's)
        self.queued = 0
        # execs that ran to an answer (sessions and one-shots): what a client
        # over many nodes checks to prove nothing ran twice
        self.execs_run = 0
        # sessions ever created and ever ended (deleted, reaped or closed at
        # stop): created - ended == live, what a leak check compares
        self.sessions_created = 0
        self.sessions_ended = 0
        # outcomes and recent latencies of the execs answered (``/v1/stats``)
        self.tally = ExecTally()
        self._background: set[asyncio.Task[None]] = set()
        self._reaper: asyncio.Task[None] | None = None
        self._closed = False
        # told of every session destroyed (deleted, reaped, or at close):
        # the gateway's tenant index and usage meter follow sessions this way
        self.on_destroy: list[Callable[[Session], None]] = []
        # compiles (cached) and runs in the languages of the host's toolchains
        self.languages = LanguageRuns(self)

    # -- lifecycle ---------------------------------------------------------

    async def start(self) -> None:
        await self.engine.start(list(self.templates.values()))
        if LANGUAGE_TEMPLATE in self.templates:
            self.languages.start_probe()
        if self.session_ttl > 0:
            self._reaper = asyncio.create_task(self._reap_forever(), name="collimate-reaper")
        if self.kernel_ttl > 0:
            self._kernel_reaper = asyncio.create_task(
                self._reap_kernels_forever(), name="collimate-kernel-reaper"
            )

    def begin_drain(self) -> None:
        self.admission.start_draining()

    @property
    def draining(self) -> bool:
        return self.admission.draining

    async def wait_idle(self) -> None:
        await self.admission.wait_idle()

    async def close(self) -> None:
        """Destroy every session, wait for clones being closed, stop the
        engine. Nothing the backend started survives this."""
        if self._closed:
            return
        self._closed = True
        self.admission.start_draining()
        if self._kernel_reaper is not None:
            self._kernel_reaper.cancel()
            with contextlib.suppress(BaseException):
                await self._kernel_reaper
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for session in self.sessions.all():
            await self._destroy(session, tombstone=False)
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        await self.engine.close()

    # -- read-only views ---------------------------------------------------

    def health(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": "draining" if self.draining else "ok",
            "sessions": len(self.sessions),
            "running": self.running,
            "max_inflight": self.admission.max_inflight,
            "queued": self.queued + self.run_queue.waiting,
            "templates": sorted(self.templates),
            "version": __version__,
            "inflight": self.admission.inflight,
            "run_slots": self.run_queue.slots,
            "execs_run": self.execs_run,
            "sessions_created": self.sessions_created,
            "sessions_ended": self.sessions_ended,
            "isolation": self.engine.isolation,
            "isolation_detail": self.engine.isolation_detail,
            "sandbox": self.engine.isolation == "namespaces",
            "egress_modes": {
                "open": "enforced",
                "none": "enforced",
                "allowlist": "enforced fail-closed as none",
                "denylist": "refused (cannot be enforced locally)",
            },
        }
        out["kernels"] = self.kernels()
        # what the engine confines code with beyond its level (host paths each
        # template's clones see, quotas, syscall filter), when it says
        confinement = getattr(self.engine, "confinement", None)
        if callable(confinement):
            out.update(confinement())
        if LANGUAGE_TEMPLATE in self.templates:
            out["languages"] = self.languages.describe()
            out["compile_cache"] = self.languages.cache.describe()
        return out

    def stats(self) -> dict[str, Any]:
        """The ``GET /v1/stats`` body: the load counters of :meth:`health`
        with the clone pools, the exec outcomes and recent latencies, and
        the compile cache, for a live view of this server."""
        out: dict[str, Any] = {
            "execs_run": self.execs_run,
            "running": self.running,
            "queued": self.queued + self.run_queue.waiting,
            "inflight": self.admission.inflight,
            "max_inflight": self.admission.max_inflight,
            "sessions": len(self.sessions),
            "sessions_created": self.sessions_created,
            "sessions_ended": self.sessions_ended,
        }
        out.update(self.tally.describe())
        counts = getattr(self.engine, "pool_counts", None)
        pools = counts() if callable(counts) else {}
        out["clones"] = {
            "warm": pools.get("warm"),
            "busy": self.running,
            "pool_hits": pools.get("pool_hits"),
            "pool_misses": pools.get("pool_misses"),
        }
        out["compile_cache"] = (
            self.languages.cache.describe() if LANGUAGE_TEMPLATE in self.templates else None
        )
        return out

    def template(self, template_id: Any) -> TemplateSpec:
        if template_id is None or template_id == "":
            raise WireError(400, "template_id_required", "template_id is required")
        if not isinstance(template_id, str):
            raise bad_request("template_id must be a string")
        spec = self.templates.get(template_id)
        if spec is None:
            raise WireError(404, "no_template", f"no template: {template_id}")
        return spec

    def list_sessions(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        return [s.info(now) for s in self.sessions.all()]

    def get_session(self, session_id: str) -> dict[str, Any]:
        return self.sessions.get(session_id).info()

    # -- sessions ----------------------------------------------------------

    async def create_session(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, Mapping):
            raise bad_request("request body must be a JSON object")
        spec = self.template(body.get("template_id"))
        egress = decide_egress(body.get("egress"), spec)
        env = parse_session_env(body.get("env"), spec)
        started = time.perf_counter()
        session, fork_s = await self.open_session(spec, egress, env=env)
        out: dict[str, Any] = {
            "session_id": session.session_id,
            "template_id": spec.id,
            "fork_time_ms": _ms(fork_s),
            "create_time_ms": _ms(time.perf_counter() - started),
        }
        if session.clone.endpoints:
            out["endpoints"] = dict(session.clone.endpoints)
        if egress is not None:
            out["egress"] = egress.describe()
        if env:
            # the names the server was started with: a client that sent env
            # checks this, so a server that ignored the key cannot pass
            out["env"] = sorted(env)
        return out

    async def open_session(
        self,
        spec: TemplateSpec,
        egress: EgressDecision | None,
        *,
        session_id: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> tuple[Session, float]:
        """Fork a clone of ``spec`` and register it as a live session; the
        second value is the fork time in seconds. Shared by both wires (the
        gateway's sandboxes are sessions under an id of its own). ``env``:
        what an app template's server is started with for this session."""
        async with self.admission.slot():
            clone, fork_s = await self._open(spec, egress, env=env)
            session = Session(session_id or new_id("sess"), spec, clone, egress)
            self.sessions.add(session)
            self.sessions_created += 1
        return session, fork_s

    async def delete_session(self, session_id: str) -> bool:
        """True when a live session was destroyed; False when none existed."""
        session = self.sessions.pop(session_id, tombstone=False)
        if session is None:
            return False
        self.sessions_ended += 1
        await self._destroy(session, tombstone=False)
        return True

    async def exec_in_session(self, session_id: str, body: Any) -> dict[str, Any]:
        """Run in a live session. Execs of one session run one at a time (in
        arrival order); one queued behind a deleted session answers 410."""
        job = parse_exec_body(body)
        if isinstance(body, Mapping) and body.get("egress") is not None:
            raise bad_request("egress is set when the session is created, not per exec")
        session = self.sessions.get(session_id)
        started = time.perf_counter()
        async with self.admission.slot():
            session.busy += 1
            try:
                self.queued += 1
                try:
                    await session.lock.acquire()
                finally:
                    self.queued -= 1
                try:
                    if not self.sessions.is_live(session_id):
                        raise WireError(
                            410, "session_gone", f"session {session_id} was destroyed meanwhile"
                        )
                    outcome = await self._run(session.clone, job, session=session)
                    session.exec_count += 1
                    self.execs_run += 1
                finally:
                    session.lock.release()
            finally:
                session.busy -= 1
                session.last_active = time.monotonic()
        return self._exec_response(body, job, outcome, 0.0, started)

    # -- one-shot ----------------------------------------------------------

    async def exec_once(self, body: Any) -> dict[str, Any]:
        """Fork an ephemeral clone, run once, discard it, whatever happens."""
        if not isinstance(body, Mapping):
            raise bad_request("request body must be a JSON object")
        spec = self.template(body.get("template_id"))
        job = parse_exec_body(body)
        egress = decide_egress(body.get("egress"), spec)
        started = time.perf_counter()
        self.admission.acquire()
        try:
            async with self.run_queue.turn() as cpu:
                if cpu is not None:
                    job = dataclasses.replace(job, cpu=cpu)
                clone, fork_s = await self._open(spec, egress)
                try:
                    outcome = await self._run(clone, job, session=None)
                except BaseException:
                    await self._close_clone(clone)
                    raise
                self.execs_run += 1
        except BaseException:
            self.admission.release()
            raise
        # The answer does not wait for the teardown: the clone is released
        # (wiped for reuse, or closed) in the background, and its in-flight
        # slot is held until that is done, so capacity, drain and stop still
        # account for it.
        self._track(self._release_clone_then_slot(clone))
        response = self._exec_response(body, job, outcome, fork_s, started)
        if egress is not None:
            response["egress"] = egress.describe()
        return response

    # -- internals ---------------------------------------------------------

    async def _open(
        self,
        spec: TemplateSpec,
        egress: EgressDecision | None,
        *,
        env: Mapping[str, str] | None = None,
    ) -> tuple[Clone, float]:
        t0 = time.perf_counter()
        enforced = egress.enforced if egress else None
        try:
            if env:
                clone = await self.engine.open_clone(spec, egress=enforced, env=env)
            else:
                clone = await self.engine.open_clone(spec, egress=enforced)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("bring-up of a %s clone failed: %r", spec.id, exc)
            raise WireError(
                503, "session_bringup_failed", f"could not fork template {spec.id}: {exc}"
            ) from exc
        return clone, time.perf_counter() - t0

    async def _run(self, clone: Clone, job: ExecJob, *, session: Session | None) -> ExecOutcome:
        """Run one exec; a session's as a task of its own, so deleting the
        session can cancel it (the engine kills the process tree) without
        cancelling the HTTP handler that is waiting for the answer. A
        one-shot needs no such task: only its own client can cancel it."""
        run = clone.run(job)
        task: asyncio.Task[ExecOutcome] | None = None
        if session is not None:
            task = asyncio.ensure_future(run)
            session.tasks.add(task)
        self.running += 1
        try:
            return await (task if task is not None else run)
        except asyncio.CancelledError:
            if (
                session is not None
                and task is not None
                and task.cancelled()
                and not self.sessions.is_live(session.session_id)
            ):
                raise WireError(
                    410,
                    "session_gone",
                    f"session {session.session_id} was destroyed during the exec",
                ) from None
            raise
        except WireError:
            raise
        except Exception as exc:
            log.exception("exec failed inside the engine")
            raise WireError(
                500, "internal_error", f"the backend failed to run the exec: {exc}"
            ) from exc
        finally:
            self.running -= 1
            if session is not None and task is not None:
                session.tasks.discard(task)

    def _track(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``coro`` as a task that :meth:`close` waits for."""
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def _release_clone_then_slot(self, clone: Clone) -> None:
        try:
            await clone.release()
        except Exception:
            log.exception("releasing a clone failed")
        finally:
            self.admission.release()

    async def _close_clone(self, clone: Clone, *, reuse: bool = False) -> None:
        """Close (or, with ``reuse``, release) a clone even if the caller is
        being cancelled: it runs as a tracked task that :meth:`close` waits for."""
        task = self._track(clone.release() if reuse else clone.close())
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("closing a clone failed")

    async def _destroy(self, session: Session, *, tombstone: bool) -> None:
        if self.sessions.pop(session.session_id, tombstone=tombstone) is not None:
            self.sessions_ended += 1
        for hook in self.on_destroy:
            try:
                hook(session)
            except Exception:
                log.exception("a session-destroy hook failed")
        for task in list(session.tasks):
            task.cancel()
        if session.tasks:
            await asyncio.gather(*list(session.tasks), return_exceptions=True)
        await self._close_clone(session.clone, reuse=True)

    def _kernel_pids(self, sessions: list[Session]) -> dict[str, list[int]]:
        roots = {}
        for session in sessions:
            pid = getattr(session.clone, "pid", None)
            if isinstance(pid, int) and pid > 1:
                roots[session.session_id] = pid
        return kernel_pids(roots) if roots else {}

    def kernels(self) -> dict[str, Any]:
        """The live kernels (``Sandbox.kernel()`` and forks): how many, how
        many per session (sessions holding one), the idle TTL, and how many
        were reaped for idleness."""
        per_session = {
            sid: len(pids) for sid, pids in self._kernel_pids(self.sessions.all()).items() if pids
        }
        return {
            "live": sum(per_session.values()),
            "sessions": per_session,
            "idle_ttl_s": self.kernel_ttl,
            "reaped": self.kernels_reaped,
        }

    async def _reap_kernels_forever(self) -> None:
        """Kill the kernels of sessions idle ``kernel_ttl`` seconds (a kernel
        is idle between cells, and each cell is an exec of its session)."""
        interval = min(max(self.kernel_ttl / 4.0, 0.05), 5.0)
        while True:
            await asyncio.sleep(interval)
            idle = self.sessions.idle_sessions(self.kernel_ttl)
            if not idle:
                continue  # (no thread hop while no session is idle)
            try:
                found = await asyncio.to_thread(self._kernel_pids, idle)
            except Exception:
                log.exception("looking for idle kernels failed")
                continue
            # (no await from here: a session that ran an exec meanwhile is spared)
            still_idle = {s.session_id for s in self.sessions.idle_sessions(self.kernel_ttl)}
            for sid, pids in found.items():
                if pids and sid in still_idle:
                    log.info("reaping %d idle kernel(s) of session %s", len(pids), sid)
                    kill_kernels(pids)
                    self.kernels_reaped += len(pids)

    async def _reap_forever(self) -> None:
        interval = min(max(self.session_ttl / 4.0, 0.05), 5.0)
        while True:
            await asyncio.sleep(interval)
            for session in self.sessions.idle_sessions(self.session_ttl):
                log.info("reaping idle session %s", session.session_id)
                try:
                    await self._destroy(session, tombstone=True)
                except Exception:
                    log.exception("reaping %s failed", session.session_id)
            self.sessions.expire_tombstones()

    def _exec_response(
        self,
        body: Any,
        job: ExecJob,
        outcome: ExecOutcome,
        clone_fork_s: float,
        started: float,
    ) -> dict[str, Any]:
        stdout = outcome.output.decode("utf-8", errors="replace")
        if outcome.timed_out and "timeout after" not in stdout:
            sep = "\n" if stdout and not stdout.endswith("\n") else ""
            stdout = f"{stdout}{sep}{format_timeout(job.timeout_s)}"
        req_id = body.get("id") if isinstance(body, Mapping) else None
        total_ms = _ms(time.perf_counter() - started)
        self.tally.record(
            exit_code=outcome.exit_code, timed_out=outcome.timed_out, total_ms=total_ms
        )
        return {
            "id": req_id if isinstance(req_id, str) and req_id else new_id("req"),
            "stdout": stdout,
            "stderr": "",
            "exit_code": -1 if outcome.timed_out else outcome.exit_code,
            "fork_time_ms": round(_ms(clone_fork_s) + outcome.fork_time_ms, 3),
            "exec_time_ms": round(outcome.exec_time_ms, 3),
            "total_time_ms": total_ms,
            "seed": job.seed,
            "seed_ack": outcome.seed_ack,
            "truncated": outcome.truncated,
        }
