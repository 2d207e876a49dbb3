"""The typed error family.

Every failure the SDK raises is a :class:`CollimateError` carrying the HTTP
``status`` and the server's ``error_code`` (``None`` when the failure never
reached a server). The split that matters to a trainer:

* :class:`CollimateTaskError`: the *candidate* failed inside the guest (a file
  it had to produce is missing, a frame was corrupted). It is a task outcome.
* every other :class:`CollimateError`: the *infrastructure* failed. A reward
  computed through it would be a lie, so callers resample instead of
  scoring 0.0.

This module knows nothing about HTTP libraries: the transports build these
from a parsed error envelope (see :mod:`collimate_rl.wire`).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CollimateError",
    "CollimateDrainingError",
    "CollimateTaskError",
    "GatewayError",
    "DemoTierLimit",
    "TemplateBakeFailed",
    "KubectlError",
    "KubectlNotFound",
    "ClusterUnreachable",
]


class CollimateError(RuntimeError):
    """A control-plane call failed (infrastructure, not the candidate)."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        error_code: str | None = None,
        *,
        body: Any = None,
        unsent: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_code = error_code
        self.body = body
        #: The transport's word that the request never left (the connection
        #: failed before a byte was sent): nothing can have happened.
        self.unsent = unsent

    def __str__(self) -> str:
        if self.status is None and self.error_code is None:
            return self.message
        where = " ".join(str(p) for p in (self.status, self.error_code) if p is not None)
        return f"{self.message} [{where}]"

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors cross process boundaries (Ray, multiprocessing): keep every field.
        return (_rebuild, (type(self), self.__dict__.copy()))


def _rebuild(cls: type[CollimateError], state: dict[str, Any]) -> CollimateError:
    err = cls.__new__(cls)
    RuntimeError.__init__(err, state.get("message", ""))
    err.__dict__.update(state)
    return err


class CollimateDrainingError(CollimateError):
    """The node is draining (rolling upgrade): it refused the work before
    admitting it, so the request is safe to send to another node."""


class CollimateTaskError(CollimateError):
    """The work ran and failed *inside the guest*: a task outcome, not infra.

    ``exit_code`` is the guest's exit status and ``output`` its merged
    transcript, so a grader can show what the candidate did.
    """

    def __init__(
        self,
        message: str,
        exit_code: int | None = None,
        output: str = "",
        *,
        status: int | None = None,
        error_code: str | None = None,
    ) -> None:
        super().__init__(message, status, error_code)
        self.exit_code = exit_code
        self.output = output


class GatewayError(CollimateError):
    """The managed gateway refused or failed a call.

    The gateway's envelope names its code ``code``; it is kept under that name
    and aliased as ``error_code`` so one ``except CollimateError`` handler
    reads both wires the same way.
    """

    def __init__(
        self,
        message: str,
        status: int | None = None,
        code: str | None = None,
        *,
        body: Any = None,
    ) -> None:
        super().__init__(message, status, code, body=body)

    @property
    def code(self) -> str | None:
        return self.error_code


class DemoTierLimit(GatewayError):
    """A demo-tier key hit its plan limit. ``message`` is the server's
    upgrade notice, verbatim, meant to be shown to the user as is."""


class TemplateBakeFailed(GatewayError):
    """A template bake reached phase ``Failed``; ``status`` is the
    :class:`~collimate_rl.TemplateStatus` that says why."""

    def __init__(self, message: str, status: Any) -> None:
        super().__init__(message, None, "template_bake_failed")
        self.template_status = status
        self.status = status

    def __str__(self) -> str:  # ``status`` is a TemplateStatus here, not an HTTP code
        return f"{self.message} [{self.error_code}]"


class KubectlError(CollimateError):
    """A ``kubectl`` command of :class:`~collimate_rl.Fleet` failed.

    ``command`` is the argv that ran, ``returncode`` and ``stderr`` what it
    answered (``None`` and ``""`` when it could not run at all).
    """

    def __init__(
        self,
        message: str,
        *,
        command: list[str] | None = None,
        returncode: int | None = None,
        stderr: str = "",
        error_code: str = "kubectl_failed",
    ) -> None:
        super().__init__(message, None, error_code)
        self.command = list(command or [])
        self.returncode = returncode
        self.stderr = stderr


class KubectlNotFound(KubectlError):
    """There is no ``kubectl`` to run: :class:`~collimate_rl.Fleet` drives a
    self-hosted control plane through it, so it must be installed (or named
    with ``Fleet(kubectl=...)``)."""


class ClusterUnreachable(KubectlError):
    """``kubectl`` ran but reached no cluster: no kubeconfig, a context that
    does not exist, or an API server that does not answer."""
