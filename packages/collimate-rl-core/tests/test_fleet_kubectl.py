"""``Fleet`` and ``RolloutHandle`` drive ``kubectl``: the exact command lines
they run, the manifests they pipe in, and what they make of the answers.

No cluster runs here, so ``kubectl`` is a stand-in: a small executable put
first on ``PATH`` that records each call (argv, stdin, environment) and
answers from a table of canned outputs. With no ``kubectl`` at all, or one
that reaches no cluster, the typed errors say which is missing.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from collimate_rl import (
    ClusterUnreachable,
    CollimateError,
    Fleet,
    KubectlError,
    KubectlNotFound,
    RolloutHandle,
)

STAND_IN = """\
#!{python}
import json, os, sys
args = sys.argv[1:]
stdin = sys.stdin.read() if args[-2:] == ["-f", "-"] else None
with open(os.environ["KUBECTL_RECORD"], "a") as rec:
    rec.write(json.dumps({{"argv": sys.argv, "stdin": stdin, "env": dict(os.environ)}}) + "\\n")
with open(os.environ["KUBECTL_ANSWERS"]) as f:
    answers = json.load(f)
key = " ".join(args)
answer = answers.get(key) or answers.get("*") or {{
    "rc": 1, "stderr": f'Error from server (NotFound): "{{key}}" not found'
}}
out = answer.get("stdout", "")
sys.stdout.write(out if isinstance(out, str) else json.dumps(out))
sys.stderr.write(answer.get("stderr", ""))
sys.exit(answer.get("rc", 0))
"""

REFUSED = (
    "The connection to the server localhost:8080 was refused - "
    "did you specify the right host or port?"
)


class StandIn:
    """The recording ``kubectl`` of one test."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.bin.mkdir()
        self.path = self.bin / "kubectl"
        self.path.write_text(STAND_IN.format(python=sys.executable))
        self.path.chmod(self.path.stat().st_mode | stat.S_IXUSR)
        self.record = root / "calls.jsonl"
        self.answers_file = root / "answers.json"
        self.table: dict[str, dict[str, Any]] = {}
        self._save()

    def _save(self) -> None:
        self.answers_file.write_text(json.dumps(self.table))

    def answer(self, args: str, stdout: Any = "", *, rc: int = 0, stderr: str = "") -> None:
        """What ``kubectl <args>`` prints (``"*"``: any other call)."""
        self.table[args] = {"stdout": stdout, "rc": rc, "stderr": stderr}
        self._save()

    def calls(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def argvs(self) -> list[list[str]]:
        """Each call's arguments (argv without the program)."""
        return [c["argv"][1:] for c in self.calls()]


@pytest.fixture
def kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StandIn:
    stand_in = StandIn(tmp_path)
    monkeypatch.setenv("PATH", f"{stand_in.bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("KUBECTL_RECORD", str(stand_in.record))
    monkeypatch.setenv("KUBECTL_ANSWERS", str(stand_in.answers_file))
    return stand_in


def ctpl(name: str, node_states: list[dict[str, Any]], converged: str) -> dict[str, Any]:
    """A ``Template`` resource as the operator leaves it."""
    return {
        "apiVersion": "collimate.ai/v1alpha1",
        "kind": "Template",
        "metadata": {"name": name},
        "status": {
            "clusterDesiredWarm": 4,
            "nodeStates": node_states,
            "assignments": [{"pod": "w-0", "node": "n1"}],
            "conditions": [{"type": "PoolConverged", "status": converged}],
        },
    }


PY_NODES = [
    {"node": "n1", "spares": 3, "cold": 1, "inUse": 2, "state": "Ready"},
    {"node": "n2", "spares": 1, "cold": 0, "inUse": 0, "state": "Warming"},
    {"spares": 9},  # a state without a node name is summed but not listed
]


def test_register_template_applies_the_manifest_and_reads_it_back(kubectl: StandIn) -> None:
    stored = ctpl("py", PY_NODES, "False")
    kubectl.answer("apply -f -", "template.collimate.ai/py configured\n")
    kubectl.answer("get ctpl py -o json", stored)
    fleet = Fleet()
    got = fleet.register_template(
        "py",
        "python:3.11",
        min_warm=4,
        cold_fraction=25,
        min_cold_per_node=1,
        refill_interval="30s",
        node_selector={"pool": "rl"},
        artifact_ref="oci://reg/py@sha256:ab",
    )
    assert got == stored
    assert kubectl.argvs() == [["apply", "-f", "-"], ["get", "ctpl", "py", "-o", "json"]]
    assert json.loads(kubectl.calls()[0]["stdin"]) == {
        "apiVersion": "collimate.ai/v1alpha1",
        "kind": "Template",
        "metadata": {"name": "py"},
        "spec": {
            "image": "python:3.11",
            "pool": {
                "minWarm": 4,
                "coldFraction": 25,
                "minColdPerNode": 1,
                "refillInterval": "30s",
            },
            "nodeSelector": {"pool": "rl"},
            "artifactRef": "oci://reg/py@sha256:ab",
        },
    }


def test_context_kubeconfig_and_a_several_word_kubectl(
    kubectl: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_TEST_MARK", "inherited")
    kubectl.answer(
        "--request-timeout=5s --context lab --kubeconfig /etc/kube/lab.yaml get ctpl -o json",
        {"items": [ctpl("py", [], "True"), ctpl("rs", [], "False")]},
    )
    fleet = Fleet(
        kubectl="kubectl --request-timeout=5s", context="lab", kubeconfig="/etc/kube/lab.yaml"
    )
    names = [t["metadata"]["name"] for t in fleet.list_templates()]
    assert names == ["py", "rs"]
    (call,) = kubectl.calls()
    assert call["argv"][0] == str(kubectl.path)  # found on PATH
    assert call["argv"][1:] == [
        "--request-timeout=5s",
        "--context",
        "lab",
        "--kubeconfig",
        "/etc/kube/lab.yaml",
        "get",
        "ctpl",
        "-o",
        "json",
    ]
    assert call["env"]["FLEET_TEST_MARK"] == "inherited"  # the caller's environment


def test_template_status_flattens_the_operators_status(kubectl: StandIn) -> None:
    kubectl.answer("get ctpl py -o json", ctpl("py", PY_NODES, "True"))
    assert Fleet().template_status("py") == {
        "name": "py",
        "clusterDesiredWarm": 4,
        "totalSpares": 13,
        "totalCold": 1,
        "totalInUse": 2,
        "nodes": {
            "n1": {"spares": 3, "cold": 1, "inUse": 2, "state": "Ready"},
            "n2": {"spares": 1, "cold": 0, "inUse": 0, "state": "Warming"},
        },
        "assignments": [{"pod": "w-0", "node": "n1"}],
        "conditions": {"PoolConverged": "True"},
    }
    assert Fleet().wait_converged("py", min_warm=13, poll=0)["totalSpares"] == 13
    with pytest.raises(CollimateError, match="did not converge"):
        Fleet().wait_converged("py", min_warm=14, timeout=0.2, poll=0.05)


def test_predistribute_patches_names_and_registers_mappings(kubectl: StandIn) -> None:
    kubectl.answer("*", "")
    kubectl.answer("get ctpl py -o json", ctpl("py", PY_NODES, "True"))
    kubectl.answer("get ctpl rs -o json", ctpl("rs", [], "True"))
    fleet = Fleet()
    out = fleet.predistribute(
        ["py", {"name": "rs", "image": "rust:1", "min_cold_per_node": 5, "wait": True}],
        min_cold_per_node=2,
        poll=0,
    )
    assert [s["name"] for s in out] == ["py", "rs"]
    argvs = kubectl.argvs()
    assert argvs[0] == [
        "patch",
        "ctpl",
        "py",
        "--type=merge",
        "--patch",
        '{"spec": {"pool": {"minColdPerNode": 2}}}',
    ]
    assert argvs[1:3] == [["apply", "-f", "-"], ["get", "ctpl", "rs", "-o", "json"]]
    pool = json.loads(kubectl.calls()[1]["stdin"])["spec"]["pool"]
    assert pool == {"minWarm": 0, "minColdPerNode": 5}  # the higher floor wins
    assert argvs[3:] == [["get", "ctpl", "py", "-o", "json"], ["get", "ctpl", "rs", "-o", "json"]]

    kubectl.answer("get ctpl rs -o json", ctpl("rs", [], "False"))
    with pytest.raises(CollimateError, match=r"1 template\(s\) did not converge.*\['rs'\]"):
        fleet.predistribute(["rs"], timeout=0.2, poll=0.05)


def test_nodes_and_status_show_what_collimate_found(kubectl: StandIn) -> None:
    kubectl.answer(
        "get nodes -o json",
        {
            "items": [
                {
                    "metadata": {
                        "name": "n1",
                        "annotations": {
                            "collimate.ai/free-slots": "12",
                            "node.alpha.kubernetes.io/ttl": "0",
                        },
                        "labels": {
                            "collimate.ai/tmpl-py": "warm",
                            "collimate.ai/tmpl-rs": "cold",
                            "kubernetes.io/os": "linux",
                        },
                    },
                    "status": {
                        "capacity": {"cpu": "16", "memory": "64Gi"},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                },
                {"metadata": {"name": "n2"}, "status": {"conditions": []}},
            ]
        },
    )
    kubectl.answer("get ctpl -o json", {"items": [ctpl("py", PY_NODES, "True")]})
    kubectl.answer("get ctpl py -o json", ctpl("py", PY_NODES, "True"))
    status = Fleet().status()
    assert status["nodesDiscovered"] == 2 and status["nodesReady"] == 1
    assert status["nodes"][0] == {
        "name": "n1",
        "cpu": "16",
        "memory": "64Gi",
        "ready": True,
        "collimateAnnotations": {"collimate.ai/free-slots": "12"},
        "warmTemplates": ["collimate.ai/tmpl-py"],
    }
    assert status["nodes"][1]["ready"] is False and status["nodes"][1]["warmTemplates"] == []
    assert [t["name"] for t in status["templates"]] == ["py"]
    assert kubectl.argvs() == [
        ["get", "nodes", "-o", "json"],
        ["get", "ctpl", "-o", "json"],
        ["get", "ctpl", "py", "-o", "json"],
    ]


def test_build_worker_pod_is_a_collimate_worker() -> None:
    fleet = Fleet("rl-ns", scheduler_name="sched", serve_socket_dir="/run/s")
    pod = fleet.build_worker_pod(
        "w-0",
        "py",
        group_size=8,
        image="trainer:1",
        command=["python"],
        args=["-m", "worker"],
        env={"SEED": "7"},
        extra_labels={"team": "rl"},
    )
    assert pod == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "w-0",
            "namespace": "rl-ns",
            "labels": {"collimate.ai/template": "py", "collimate.ai/group-size": "8", "team": "rl"},
        },
        "spec": {
            "schedulerName": "sched",
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "rollout-agent",
                    "image": "trainer:1",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    "command": ["python"],
                    "args": ["-m", "worker"],
                    "env": [
                        {"name": "SEED", "value": "7"},
                        {"name": "COLLIMATE_SERVE_SOCKET", "value": "/run/s/serve.sock"},
                    ],
                    "volumeMounts": [{"name": "serve-sock", "mountPath": "/run/s"}],
                }
            ],
            "volumes": [
                {"name": "serve-sock", "hostPath": {"path": "/run/s", "type": "Directory"}}
            ],
        },
    }
    bare = fleet.build_worker_pod("w-1", "py", group_size=1, image="t", mount_socket=False)
    assert "volumes" not in bare["spec"] and bare["spec"]["containers"][0]["env"] == []


def test_a_rollout_is_applied_placed_and_torn_down(kubectl: StandIn) -> None:
    kubectl.answer("*", "")
    kubectl.answer("get pod -n collimate-system rollout-py-0 -o json", {"spec": {"nodeName": "n1"}})
    kubectl.answer("get pod -n collimate-system rollout-py-1 -o json", {"spec": {}})
    fleet = Fleet()
    handle = fleet.submit_rollout("py", group_size=4, image="trainer:1", replicas=2)
    assert isinstance(handle, RolloutHandle)
    assert handle.pods == ["rollout-py-0", "rollout-py-1"] and handle.template == "py"
    applied = [json.loads(c["stdin"]) for c in kubectl.calls()]
    assert [p["metadata"]["name"] for p in applied] == handle.pods
    assert applied[0] == fleet.build_worker_pod(
        "rollout-py-0", "py", group_size=4, image="trainer:1"
    )
    assert kubectl.argvs() == [["apply", "-f", "-"]] * 2

    assert handle.placement() == {"rollout-py-0": "n1", "rollout-py-1": None}
    assert handle.wait_scheduled(timeout=0.2, poll=0.05) == {
        "rollout-py-0": "n1",
        "rollout-py-1": None,
    }
    kubectl.answer("get pod -n collimate-system rollout-py-1 -o json", {"spec": {"nodeName": "n2"}})
    assert handle.wait_scheduled(timeout=5, poll=0.05) == {
        "rollout-py-0": "n1",
        "rollout-py-1": "n2",
    }
    del kubectl.table["get pod -n collimate-system rollout-py-0 -o json"]
    kubectl._save()
    assert handle.placement()["rollout-py-0"] is None  # gone: "not found" is no node

    before = len(kubectl.calls())
    kubectl.answer("annotate ctpl py collimate.ai/expected-width-", rc=1, stderr="not found")
    handle.delete()  # a refused release step is best effort
    argvs = kubectl.argvs()[before:]
    assert argvs[:2] == [
        ["delete", "pod", "-n", "collimate-system", p, "--ignore-not-found"] for p in handle.pods
    ]
    stamp, drop = argvs[2:]
    assert stamp[:4] == ["annotate", "ctpl", "py", "--overwrite"] and len(stamp) == 5
    assert re.fullmatch(r"collimate\.ai/released-at=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp[4])
    assert drop == ["annotate", "ctpl", "py", "collimate.ai/expected-width-"]


def test_delete_template_ignores_a_missing_one_unless_asked(kubectl: StandIn) -> None:
    fleet = Fleet()
    fleet.delete_template("gone")  # the stand-in answers NotFound
    with pytest.raises(KubectlError, match="NotFound") as info:
        fleet.delete_template("gone", ignore_missing=False)
    assert info.value.returncode == 1 and info.value.command[1:] == ["delete", "ctpl", "gone"]
    assert "NotFound" in info.value.stderr and not isinstance(info.value, ClusterUnreachable)
    assert kubectl.argvs() == [["delete", "ctpl", "gone"]] * 2


def test_no_kubectl_on_path_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    fleet = Fleet()
    with pytest.raises(KubectlNotFound, match=r"'kubectl' was not found on PATH") as info:
        fleet.list_templates()
    assert isinstance(info.value, CollimateError) and info.value.error_code == "kubectl_not_found"
    handle = RolloutHandle(fleet, ["w-0"], template="py")
    with pytest.raises(KubectlNotFound):
        handle.placement()  # never "not placed yet"
    with pytest.raises(KubectlNotFound):
        handle.delete()
    with pytest.raises(KubectlNotFound):
        fleet.release("py")
    with pytest.raises(KubectlNotFound, match="'kubectl-nope'"):
        Fleet(kubectl="kubectl-nope").nodes()


def test_no_cluster_behind_kubectl_says_so(kubectl: StandIn) -> None:
    kubectl.answer("*", rc=1, stderr=REFUSED)
    fleet = Fleet()
    with pytest.raises(ClusterUnreachable, match="No Kubernetes cluster answered") as info:
        fleet.nodes()
    assert info.value.error_code == "cluster_unreachable" and info.value.stderr == REFUSED
    assert info.value.command[1:] == ["get", "nodes", "-o", "json"]
    handle = RolloutHandle(fleet, ["w-0"])
    with pytest.raises(ClusterUnreachable):
        handle.placement()
    with pytest.raises(ClusterUnreachable):
        handle.delete()
    with pytest.raises(ClusterUnreachable):
        fleet.delete_template("py")
    fleet.release("py")  # best effort, as in 0.8.0: the operator's decay is the safety net
    kubectl.answer(
        "*", rc=1, stderr="error: no configuration has been provided, try setting KUBERNETES_MASTER"
    )
    with pytest.raises(ClusterUnreachable, match="no configuration"):
        fleet.get_template("py")


def test_output_that_is_not_json_is_a_kubectl_error(kubectl: StandIn) -> None:
    kubectl.answer("get ctpl py -o json", "<html>proxy</html>")
    with pytest.raises(KubectlError, match="printed no JSON"):
        Fleet().get_template("py")
