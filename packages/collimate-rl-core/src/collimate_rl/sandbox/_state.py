"""What both sandboxes share: :class:`ExecResult`, reading a created
session, and ``SandboxState`` (what a sandbox holds and how it builds an
exec). ``AsyncSandbox`` is written in ``collimate_rl/sandbox/_async.py``,
``Sandbox`` generated from it; the public module is ``collimate_rl.sandbox``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..egress import egress_policy
from ..errors import CollimateError
from ..seeds import check_seed

__all__ = [
    "WARM_FORK_MS",
    "ExecResult",
    "SandboxState",
    "exec_kwargs",
    "session_fields",
    "template_of",
    "wire_number",
]

#: ``fork_time_ms`` at or under this means the clone was served warm.
WARM_FORK_MS = 1.0


_N = TypeVar("_N", int, float)


def wire_number(value: Any, kind: type[_N]) -> _N:
    """A number of an answer as ``kind`` (``int`` or ``float``): 0 when it
    is missing or is not a number."""
    try:
        return kind(value) if value is not None else kind(0)
    except (TypeError, ValueError):
        return kind(0)


@dataclass
class ExecResult:
    """One exec's answer. ``stdout`` is the guest's merged stdout+stderr
    (``stderr`` is always ``""`` on this contract); ``raw`` is the whole
    response."""

    stdout: str
    stderr: str
    exit_code: int
    fork_time_ms: float
    exec_time_ms: float
    total_time_ms: float
    seed: str | None
    seed_ack: str | None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The command exited 0 (a timeout is exit code -1)."""
        return self.exit_code == 0

    @classmethod
    def from_response(cls, r: Mapping[str, Any]) -> ExecResult:
        code = r.get("exit_code")
        return cls(
            stdout=str(r.get("stdout") or ""),
            stderr=str(r.get("stderr") or ""),
            exit_code=code if isinstance(code, int) else -1,
            fork_time_ms=wire_number(r.get("fork_time_ms"), float),
            exec_time_ms=wire_number(r.get("exec_time_ms"), float),
            total_time_ms=wire_number(r.get("total_time_ms"), float),
            seed=r.get("seed"),
            seed_ack=r.get("seed_ack"),
            raw=dict(r),
        )


def session_fields(created: Mapping[str, Any]) -> tuple[str, float | None, dict[str, str]]:
    session_id = created.get("session_id") or created.get("id")
    if not isinstance(session_id, str) or not session_id:
        raise CollimateError(f"create_session answered without a session id: {created!r:.200}")
    fork = created.get("fork_time_ms")
    endpoints = created.get("endpoints") or {}
    return (
        session_id,
        float(fork) if isinstance(fork, (int, float)) else None,
        {str(k): str(v) for k, v in dict(endpoints).items()},
    )


def template_of(info: Mapping[str, Any], fallback: str) -> str:
    template = info.get("template_id") or info.get("template") or fallback
    return str(template)


def exec_kwargs(
    code: str | None,
    command: str | None,
    commands: Sequence[Sequence[str]] | None,
    files: Sequence[Mapping[str, str]] | None,
    timeout_seconds: int | None,
    seed: str | None,
    default_timeout: int,
) -> dict[str, Any]:
    """The keyword arguments of one exec of a sandbox or a gateway session
    (``timeout_seconds`` None is ``default_timeout``); a call naming no
    ``code``, ``command`` or ``commands``, or a bad seed, raises here."""
    if code is None and command is None and commands is None:
        raise ValueError("exec needs one of code, command= or commands=")
    check_seed(seed)
    return {
        "code": code,
        "command": command,
        "commands": commands,
        "files": files,
        "timeout_seconds": default_timeout if timeout_seconds is None else timeout_seconds,
        "seed": seed,
    }


class SandboxState:
    """What both sandboxes hold and how they build an exec."""

    def __init__(
        self,
        template: str,
        *,
        egress: Mapping[str, Any] | None,
        default_timeout: int,
        keep_on_error: bool,
        default_seed: str | None,
    ) -> None:
        check_seed(default_seed)
        self.template = template
        self.egress = egress_policy(egress)  # checked here, not as a 400 later
        self.default_timeout = default_timeout
        self.keep_on_error = keep_on_error
        self.default_seed = default_seed
        self.session_id: str | None = None
        self.fork_time_ms: float | None = None
        self.endpoints: dict[str, str] = {}
        self._owns_client = False

    @property
    def warm_hit(self) -> bool:
        """The clone was served from a warm template (``fork_time_ms`` <= 1 ms)."""
        return self.fork_time_ms is not None and self.fork_time_ms <= WARM_FORK_MS

    @property
    def started(self) -> bool:
        return self.session_id is not None

    def _ingress_client(self, what: str) -> Any:
        """The client, if it can mint connect URLs (a gateway client); the
        node-local daemon has no way in from outside, said plainly."""
        client = getattr(self, "client", None)
        if not callable(getattr(client, "connect_url", None)):
            raise CollimateError(
                f"{what} needs a gateway client (a col_* API key): the node-local "
                "daemon has no host->guest ingress. Give the sandbox a GatewayClient."
            )
        return client

    def _adopted(self, session_id: str) -> None:
        self.session_id = session_id
        self.fork_time_ms = None

    def __repr__(self) -> str:
        state = self.session_id or "not started"
        return f"{type(self).__name__}({self.template!r}, session={state})"
