"""A self-hosted Collimate control plane, driven from the trainer:
:class:`Fleet` and :class:`RolloutHandle`.

Whoever runs Collimate on their own Kubernetes cluster does three things from
the training process: register a ``Template`` custom resource (an image and a
warm-pool policy, which the operator bakes and keeps warm), launch rollout
worker pods that the Collimate scheduler places next to warm spares, and watch
both. All of it is ``kubectl`` (see :mod:`collimate_rl.kubectl` for why, and
for the errors that say whether ``kubectl`` or the cluster is missing).

A managed (``col_*`` key) customer has no cluster access; its read-only view
is :class:`collimate_rl.FleetView`, over the gateway.

The API (names, arguments, manifests and ``kubectl`` command lines) is that of
the 0.8.0 release, so code written for it runs unchanged.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import ClusterUnreachable, CollimateError, KubectlError, KubectlNotFound
from .kubectl import Kubectl

__all__ = ["GROUP_SIZE_LABEL", "TEMPLATE_LABEL", "Fleet", "RolloutHandle"]

#: Pod label naming the template a worker forks from (the scheduler places
#: the pod on a node that holds it warm).
TEMPLATE_LABEL = "collimate.ai/template"
#: Pod label declaring how many sandboxes the worker forks at once.
GROUP_SIZE_LABEL = "collimate.ai/group-size"

#: ``register_template`` keyword -> ``spec.pool`` field; a zero / empty
#: value is left out, so the operator's default applies.
_POOL_FIELDS: tuple[tuple[str, str, bool], ...] = (
    # (keyword, field, is an integer)
    ("max_warm_per_node", "maxWarmPerNode", True),
    ("cold_fraction", "coldFraction", True),
    ("min_cold_per_node", "minColdPerNode", True),
    ("max_live_spares_per_core", "maxLiveSparesPerCore", True),
    ("safety_percent", "safetyPercent", True),
    ("backfill_headroom", "backfillHeadroom", True),
    ("refill_interval", "refillInterval", False),
    ("freeze_idle", "freezeIdle", False),
    ("shrink_cooldown", "shrinkCooldown", False),
)

#: Failures a best-effort step must not swallow: nothing can have happened.
_NOTHING_REACHED = (KubectlNotFound, ClusterUnreachable)


class Fleet:
    """One self-hosted Collimate control plane, through ``kubectl``.

    ``namespace`` is the control plane's (the Helm release's);
    ``scheduler_name`` the scheduler worker pods opt into;
    ``serve_socket_dir`` the host directory of the node's *session* socket
    (sessions and exec only: never the admin socket's directory), mounted
    into worker pods. ``kubectl`` may be several words (``"sudo k3s
    kubectl"``); ``context`` and ``kubeconfig`` are passed to every call.
    Nothing runs until a method needs the cluster.
    """

    def __init__(
        self,
        namespace: str = "collimate-system",
        *,
        scheduler_name: str = "collimate-scheduler",
        serve_socket_dir: str = "/run/collimate-session",
        kubectl: str | Sequence[str] = "kubectl",
        context: str | None = None,
        kubeconfig: str | None = None,
    ) -> None:
        self.namespace = namespace
        self.scheduler_name = scheduler_name
        self.serve_socket_dir = serve_socket_dir
        self.kubectl = Kubectl(kubectl, context=context, kubeconfig=kubeconfig)

    # -- kubectl ---------------------------------------------------------------

    def _run(self, args: list[str], *, stdin: str | None = None) -> str:
        return self.kubectl.run(args, stdin=stdin)

    def _apply(self, manifest: Mapping[str, Any]) -> None:
        self._run(["apply", "-f", "-"], stdin=json.dumps(manifest))

    def _get_json(self, args: list[str]) -> dict[str, Any]:
        out = self._run([*args, "-o", "json"])
        try:
            parsed = json.loads(out)
        except ValueError as err:
            raise KubectlError(
                f"kubectl {' '.join(args)} -o json printed no JSON: {out[:200]!r}",
                command=self.kubectl.command([*args, "-o", "json"]),
            ) from err
        return parsed if isinstance(parsed, dict) else {}

    # -- templates -------------------------------------------------------------

    def register_template(
        self,
        name: str,
        image: str,
        *,
        min_warm: int = 0,
        max_warm_per_node: int = 0,
        cold_fraction: int = 0,
        min_cold_per_node: int = 0,
        max_live_spares_per_core: int = 0,
        safety_percent: int = 0,
        backfill_headroom: int = 0,
        refill_interval: str | None = None,
        freeze_idle: str | None = None,
        shrink_cooldown: str | None = None,
        node_selector: Mapping[str, str] | None = None,
        artifact_ref: str | None = None,
        wait: bool = False,
        wait_timeout: float = 180.0,
    ) -> dict[str, Any]:
        """Create or update the ``Template`` resource ``name`` (``kubectl
        apply``, so calling it again is harmless).

        The pool keywords map one to one onto ``spec.pool`` (the CRD says
        what each means); a zero or unset one is left to the operator. With
        ``wait`` it returns :meth:`wait_converged`'s status, else the
        resource as the cluster stores it.
        """
        given = {
            "max_warm_per_node": max_warm_per_node,
            "cold_fraction": cold_fraction,
            "min_cold_per_node": min_cold_per_node,
            "max_live_spares_per_core": max_live_spares_per_core,
            "safety_percent": safety_percent,
            "backfill_headroom": backfill_headroom,
            "refill_interval": refill_interval,
            "freeze_idle": freeze_idle,
            "shrink_cooldown": shrink_cooldown,
        }
        pool: dict[str, Any] = {"minWarm": int(min_warm)}
        for keyword, wire_name, is_int in _POOL_FIELDS:
            value = given[keyword]
            if value:
                pool[wire_name] = int(value) if is_int else value
        spec: dict[str, Any] = {"image": image, "pool": pool}
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        if artifact_ref:
            spec["artifactRef"] = artifact_ref
        self._apply(
            {
                "apiVersion": "collimate.ai/v1alpha1",
                "kind": "Template",
                "metadata": {"name": name},
                "spec": spec,
            }
        )
        if wait:
            return self.wait_converged(name, min_warm=min_warm, timeout=wait_timeout)
        return self.get_template(name)

    def get_template(self, name: str) -> dict[str, Any]:
        return self._get_json(["get", "ctpl", name])

    def list_templates(self) -> list[dict[str, Any]]:
        return list(self._get_json(["get", "ctpl"]).get("items", []))

    def delete_template(self, name: str, *, ignore_missing: bool = True) -> None:
        """Delete the resource; a failed delete is ignored with
        ``ignore_missing`` unless no cluster was reached at all."""
        try:
            self._run(["delete", "ctpl", name])
        except _NOTHING_REACHED:
            raise
        except KubectlError:
            if not ignore_missing:
                raise

    def release(self, name: str) -> None:
        """End the current session on template ``name``: stamp
        ``collimate.ai/released-at`` and drop ``collimate.ai/expected-width``,
        so the operator relaxes the learned warm floor to ``spec.pool.minWarm``
        now rather than decaying to it over the next hour (the gateway's
        ``POST /v1/templates/{id}/release``, self-hosted).

        Best effort: the decay happens anyway, so a refused annotation is
        ignored. A missing ``kubectl`` is still raised: nothing could run.
        """
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        for args in (
            ["annotate", "ctpl", name, "--overwrite", f"collimate.ai/released-at={now}"],
            # on its own: removing an absent annotation fails on some kubectl
            # versions, and must not undo the stamp
            ["annotate", "ctpl", name, "collimate.ai/expected-width-"],
        ):
            try:
                self._run(args)
            except KubectlNotFound:
                raise
            except CollimateError:
                pass

    def template_status(self, name: str) -> dict[str, Any]:
        """The template's ``status``, flattened: the warm depth the operator
        wants, the spares per node and in total, and the conditions by type."""
        status = self.get_template(name).get("status") or {}
        node_states = status.get("nodeStates") or []
        return {
            "name": name,
            "clusterDesiredWarm": status.get("clusterDesiredWarm", 0),
            "totalSpares": sum(n.get("spares", 0) for n in node_states),
            "totalCold": sum(n.get("cold", 0) for n in node_states),
            "totalInUse": sum(n.get("inUse", 0) for n in node_states),
            "nodes": {
                n["node"]: {
                    "spares": n.get("spares", 0),
                    "cold": n.get("cold", 0),
                    "inUse": n.get("inUse", 0),
                    "state": n.get("state", ""),
                }
                for n in node_states
                if "node" in n
            },
            "assignments": status.get("assignments", []),
            "conditions": {c["type"]: c["status"] for c in status.get("conditions", [])},
        }

    def wait_converged(
        self,
        name: str,
        *,
        min_warm: int | None = None,
        timeout: float = 180.0,
        poll: float = 2.0,
    ) -> dict[str, Any]:
        """Wait for the operator's ``PoolConverged`` condition (and, with
        ``min_warm``, that many spares fleet-wide); return the status, or
        raise :class:`CollimateError` with the last one at ``timeout``."""
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            last = self.template_status(name)
            converged = last["conditions"].get("PoolConverged") == "True"
            if converged and (min_warm is None or last["totalSpares"] >= int(min_warm)):
                return last
            time.sleep(poll)
        raise CollimateError(f"template {name} did not converge within {timeout}s; last={last}")

    def predistribute(
        self,
        templates: Sequence[str | Mapping[str, Any]],
        min_cold_per_node: int = 1,
        wait: bool = True,
        timeout: float = 300.0,
        poll: float = 3.0,
    ) -> list[dict[str, Any]]:
        """Stage at least ``min_cold_per_node`` cold spares of every template
        on every eligible node before the first rollout, so none of them
        starts cold.

        A name patches an already registered template; a mapping is
        :meth:`register_template`'s keywords (``name`` and ``image``
        required; its own ``min_cold_per_node`` wins if higher). With
        ``wait`` it returns once every template is ``PoolConverged``, or
        raises :class:`CollimateError` naming the ones that were not by
        ``timeout``. Returns one :meth:`template_status` per template, in
        order.
        """
        floor = int(min_cold_per_node)
        names: list[str] = []
        for template in templates:
            if isinstance(template, str):
                patch = {"spec": {"pool": {"minColdPerNode": floor}}}
                self._run(["patch", "ctpl", template, "--type=merge", "--patch", json.dumps(patch)])
                names.append(template)
                continue
            kwargs = dict(template)
            name, image = str(kwargs.pop("name")), str(kwargs.pop("image"))
            kwargs["min_cold_per_node"] = max(int(kwargs.get("min_cold_per_node", 0)), floor)
            kwargs.pop("wait", None)  # the wait is predistribute's, over all of them
            kwargs.pop("wait_timeout", None)
            self.register_template(name, image, **kwargs)
            names.append(name)
        if not wait:
            return [self.template_status(n) for n in names]

        deadline = time.monotonic() + timeout
        pending = list(names)
        last: dict[str, dict[str, Any]] = {}
        while pending and time.monotonic() < deadline:
            for n in pending:
                last[n] = self.template_status(n)
            pending = [n for n in pending if last[n]["conditions"].get("PoolConverged") != "True"]
            if pending:
                time.sleep(poll)
        if pending:
            stuck = {n: last.get(n, {}) for n in pending}
            raise CollimateError(
                f"predistribute: {len(pending)} template(s) did not converge within "
                f"{timeout}s: {sorted(pending)}; last_status={stuck}"
            )
        return [last.get(n) or self.template_status(n) for n in names]

    # -- rollout workers -------------------------------------------------------

    def build_worker_pod(
        self,
        name: str,
        template: str,
        *,
        group_size: int,
        image: str,
        command: Sequence[str] | None = None,
        args: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        cpu_request: str = "100m",
        mem_request: str = "128Mi",
        mount_socket: bool = True,
        extra_labels: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """The manifest of one rollout worker pod (nothing is sent).

        What makes it a Collimate worker: ``schedulerName`` (the Collimate
        scheduler places it), the template and group-size labels (what it
        will fork, and how wide), and, with ``mount_socket``, the node's
        session socket mounted in and named by ``$COLLIMATE_SERVE_SOCKET``
        for :class:`~collimate_rl.Sandbox`. The rest is the caller's.
        """
        labels = {TEMPLATE_LABEL: template, GROUP_SIZE_LABEL: str(group_size)}
        labels.update(extra_labels or {})
        container: dict[str, Any] = {
            "name": "rollout-agent",
            "image": image,
            "resources": {"requests": {"cpu": cpu_request, "memory": mem_request}},
        }
        if command:
            container["command"] = list(command)
        if args:
            container["args"] = list(args)
        container["env"] = [{"name": k, "value": v} for k, v in (env or {}).items()]
        spec: dict[str, Any] = {
            "schedulerName": self.scheduler_name,
            "restartPolicy": "Never",
            "containers": [container],
        }
        if mount_socket:
            container["env"].append(
                {"name": "COLLIMATE_SERVE_SOCKET", "value": f"{self.serve_socket_dir}/serve.sock"}
            )
            container["volumeMounts"] = [{"name": "serve-sock", "mountPath": self.serve_socket_dir}]
            spec["volumes"] = [
                {
                    "name": "serve-sock",
                    "hostPath": {"path": self.serve_socket_dir, "type": "Directory"},
                }
            ]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": labels},
            "spec": spec,
        }

    def submit_rollout(
        self,
        template: str,
        *,
        group_size: int,
        image: str,
        replicas: int = 1,
        name_prefix: str | None = None,
        command: Sequence[str] | None = None,
        args: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        extra_labels: Mapping[str, str] | None = None,
    ) -> RolloutHandle:
        """Apply ``replicas`` worker pods, ``<prefix>-0`` onwards (prefix
        ``rollout-<template>`` by default), each one rollout group of
        ``group_size``; the handle watches and removes them."""
        prefix = name_prefix or f"rollout-{template}"
        pods: list[str] = []
        for i in range(replicas):
            pod = f"{prefix}-{i}"
            self._apply(
                self.build_worker_pod(
                    pod,
                    template,
                    group_size=group_size,
                    image=image,
                    command=command,
                    args=args,
                    env=env,
                    extra_labels=extra_labels,
                )
            )
            pods.append(pod)
        return RolloutHandle(self, pods, template=template)

    # -- discovery -------------------------------------------------------------

    def nodes(self) -> list[dict[str, Any]]:
        """Every node with what Collimate found on it: capacity, readiness,
        the annotations Collimate put on it (the daemon's free slots,
        among others) and the templates labelled warm there."""
        found = []
        for node in self._get_json(["get", "nodes"]).get("items", []):
            meta = node.get("metadata", {})
            annotations = meta.get("annotations") or {}
            labels = meta.get("labels") or {}
            status = node.get("status", {})
            capacity = status.get("capacity", {})
            found.append(
                {
                    "name": meta.get("name"),
                    "cpu": capacity.get("cpu"),
                    "memory": capacity.get("memory"),
                    "ready": any(
                        c.get("type") == "Ready" and c.get("status") == "True"
                        for c in status.get("conditions", [])
                    ),
                    "collimateAnnotations": {
                        k: v for k, v in annotations.items() if k.startswith("collimate.ai/")
                    },
                    "warmTemplates": [
                        k
                        for k, v in labels.items()
                        if k.startswith("collimate.ai/tmpl-") and v == "warm"
                    ],
                }
            )
        return found

    def status(self) -> dict[str, Any]:
        """The nodes found and every template's :meth:`template_status`."""
        nodes = self.nodes()
        return {
            "nodesDiscovered": len(nodes),
            "nodesReady": sum(1 for n in nodes if n["ready"]),
            "nodes": nodes,
            "templates": [
                self.template_status(t["metadata"]["name"]) for t in self.list_templates()
            ],
        }


class RolloutHandle:
    """The worker pods one :meth:`Fleet.submit_rollout` launched."""

    def __init__(self, fleet: Fleet, pods: list[str], template: str = "") -> None:
        self.fleet = fleet
        self.pods = pods
        self.template = template

    def placement(self) -> dict[str, str | None]:
        """Pod -> the node it was scheduled on (``None`` while unscheduled,
        or if the pod cannot be read). No ``kubectl`` or no cluster is
        raised: "not placed yet" would be a lie."""
        out: dict[str, str | None] = {}
        for pod in self.pods:
            try:
                body = self.fleet._get_json(["get", "pod", "-n", self.fleet.namespace, pod])
            except _NOTHING_REACHED:
                raise
            except CollimateError:
                out[pod] = None
                continue
            out[pod] = (body.get("spec") or {}).get("nodeName")
        return out

    def wait_scheduled(self, *, timeout: float = 60.0, poll: float = 1.0) -> dict[str, str | None]:
        """Poll :meth:`placement` until every pod has a node or ``timeout``
        passes; returns the last placement either way."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            placement = self.placement()
            if all(placement.values()):
                return placement
            time.sleep(poll)
        return self.placement()

    def delete(self) -> None:
        """Delete the pods (already gone is fine), then :meth:`Fleet.release`
        the template: the rollout's session is over."""
        for pod in self.pods:
            try:
                self.fleet._run(
                    ["delete", "pod", "-n", self.fleet.namespace, pod, "--ignore-not-found"]
                )
            except _NOTHING_REACHED:
                raise
            except CollimateError:
                pass
        if self.template:
            self.fleet.release(self.template)
