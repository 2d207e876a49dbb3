"""Running ``kubectl`` for :class:`~collimate_rl.Fleet`, with failures told
apart.

A self-hosted control plane is driven through ``kubectl`` rather than the
Kubernetes client library: it is already on every machine that can reach
the cluster, knows the user's kubeconfig and contexts, and adds no
dependency. What goes wrong is then one of three things, each its own
error: no ``kubectl`` at all (:class:`~collimate_rl.errors.KubectlNotFound`),
``kubectl`` with no cluster behind it
(:class:`~collimate_rl.errors.ClusterUnreachable`), or a command the
cluster refused (:class:`~collimate_rl.errors.KubectlError`).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Sequence

from .errors import ClusterUnreachable, KubectlError, KubectlNotFound

__all__ = ["Kubectl", "NO_CLUSTER_MARKERS"]

#: What ``kubectl`` prints (lower-cased) when it has no cluster to talk to,
#: as opposed to a cluster refusing the command.
NO_CLUSTER_MARKERS: tuple[str, ...] = (
    "unable to connect to the server",
    "the connection to the server",
    "connection refused",
    "no configuration has been provided",
    "context was not found",
    "no context exists",
    "couldn't get current server api group list",
    "invalid configuration",
    "i/o timeout",
    "no such host",
)


class Kubectl:
    """One ``kubectl`` invocation prefix (binary, context, kubeconfig).

    ``binary`` may be several words (``"sudo k3s kubectl"``) or a list.
    """

    def __init__(
        self,
        binary: str | Sequence[str] = "kubectl",
        *,
        context: str | None = None,
        kubeconfig: str | None = None,
    ) -> None:
        self.binary = shlex.split(binary) if isinstance(binary, str) else list(binary)
        if not self.binary:
            raise ValueError("kubectl: the command is empty")
        self.context = context
        self.kubeconfig = kubeconfig

    def command(self, args: Sequence[str]) -> list[str]:
        """The full argv for ``args``: the prefix, then the kube flags."""
        cmd = list(self.binary)
        if self.context:
            cmd += ["--context", self.context]
        if self.kubeconfig:
            cmd += ["--kubeconfig", self.kubeconfig]
        return cmd + list(args)

    def run(self, args: Sequence[str], *, stdin: str | None = None) -> str:
        """Run ``kubectl args`` and return its stdout; raise the error that
        says what is missing or what the cluster answered."""
        cmd = self.command(args)
        if shutil.which(cmd[0]) is None:
            raise KubectlNotFound(
                f"{cmd[0]!r} was not found on PATH: Fleet drives a self-hosted "
                "Collimate control plane through kubectl; install it, or name it "
                "with Fleet(kubectl=...). A managed (col_* key) fleet is read with "
                "FleetView instead",
                command=cmd,
                error_code="kubectl_not_found",
            )
        try:
            done = subprocess.run(
                cmd,
                input=stdin.encode() if stdin is not None else None,
                capture_output=True,
                check=False,
            )
        except OSError as err:  # found, yet not runnable (permissions, format)
            raise KubectlNotFound(
                f"{cmd[0]!r} could not be run: {err}",
                command=cmd,
                error_code="kubectl_not_found",
            ) from err
        if done.returncode == 0:
            return done.stdout.decode()
        stderr = done.stderr.decode(errors="replace").strip()
        what = f"kubectl {' '.join(args)} failed ({done.returncode}): {stderr}"
        if any(marker in stderr.lower() for marker in NO_CLUSTER_MARKERS):
            raise ClusterUnreachable(
                f"{what}. No Kubernetes cluster answered: check the kubeconfig "
                "and context (kubectl config current-context)",
                command=cmd,
                returncode=done.returncode,
                stderr=stderr,
                error_code="cluster_unreachable",
            )
        raise KubectlError(what, command=cmd, returncode=done.returncode, stderr=stderr)
