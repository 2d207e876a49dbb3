"""The graders on a real three-node Ray cluster: one a node, found from a
task on each node through its own node's grader, refused without the
secret, restarted when they crash, never left behind by their actor, and
given to a node that joins."""

from __future__ import annotations

import os
import signal

import pytest
import ray

from collimate_rl import CollimateClient, connect
from collimate_rl.errors import CollimateError
from collimate_rl.local_backend.cluster_secret import SECRET_HEADER
from collimate_rl.ray import kv, status
from collimate_rl.ray.names import NAMESPACE, grader_name
from collimate_rl.ray.pool import RayGraderPool
from collimate_rl.ray.testing import (
    RayCluster,
    grader_counters,
    pin,
    process_gone,
    wait_for,
)


def _record(node_id: str) -> dict:
    return kv.grader_records()[node_id]


def test_one_grader_per_node(ray_cluster: RayCluster) -> None:
    rows = {s.node_id: s for s in status()}
    assert set(ray_cluster.node_ids) <= set(rows)
    base = [rows[n] for n in ray_cluster.node_ids]
    assert all(s.health == "ok" for s in base), base
    assert len({s.url for s in base}) == 3 and len({s.pid for s in base}) == 3
    for node_id in ray_cluster.node_ids:
        actor = ray.get_actor(grader_name(node_id), namespace=NAMESPACE)
        info = ray.get(actor.info.remote())
        assert info["node_id"] == node_id and info["alive"]


@ray.remote(num_cpus=0)
def _grade_here(rounds: int) -> tuple[str, list[str], bool]:
    """On whichever node it is pinned to: connect() with nothing set, grade."""
    here = ray.get_runtime_context().get_node_id()
    named = any(os.environ.get(k) for k in ("COLLIMATE_SERVE_URL", "COLLIMATE_SERVE_SOCKET"))
    client = connect()
    outs = [client.exec_once("py", code=f"print({i} * {i})")["stdout"] for i in range(rounds)]
    client.close()
    return here, outs, named


def test_a_task_on_each_node_grades_through_its_own_grader(ray_cluster: RayCluster) -> None:
    rounds = 3
    for node_id in ray_cluster.node_ids:
        before = grader_counters()
        here, outs, named = ray.get(
            _grade_here.options(scheduling_strategy=pin(node_id)).remote(rounds)
        )
        after = grader_counters()
        assert here == node_id and not named
        assert outs == [f"{i * i}\n" for i in range(rounds)]
        grew = {n: after[n] - before.get(n, 0) for n in ray_cluster.node_ids}
        # the graders' own counters: this node's grader ran all of them
        assert grew == {n: rounds if n == node_id else 0 for n in ray_cluster.node_ids}


def test_a_request_without_the_secret_is_refused(ray_cluster: RayCluster) -> None:
    url = _record(ray_cluster.node_ids[1])["url"]
    for headers in (None, {SECRET_HEADER: "not-the-secret"}):
        with CollimateClient(url, retries=0, headers=headers) as client:
            with pytest.raises(CollimateError) as caught:
                client.exec_once("py", code="print(1)")
            assert caught.value.status == 401
            assert caught.value.error_code == "unauthorized"
    with CollimateClient(
        url, retries=0, headers={SECRET_HEADER: kv.secret(create=False)}
    ) as client:
        assert client.exec_once("py", code="print(1)")["stdout"] == "1\n"


def test_a_killed_grader_comes_back(ray_cluster: RayCluster) -> None:
    node_id = ray_cluster.node_ids[2]
    old = _record(node_id)
    os.kill(old["pid"], signal.SIGKILL)
    fresh = wait_for(
        lambda: next(
            (
                s
                for s in status()
                if s.node_id == node_id and s.pid != old["pid"] and s.health == "ok"
            ),
            None,
        ),
        what="a new grader on the node",
    )
    assert fresh.restarted  # by Ray's actor restart
    assert process_gone(old["pid"])


def test_a_killed_actor_leaves_no_grader_process(ray_cluster: RayCluster) -> None:
    node_id = ray_cluster.node_ids[1]
    old = _record(node_id)
    os.kill(old["actor_pid"], signal.SIGKILL)
    wait_for(lambda: process_gone(old["pid"]), timeout=30, what="the orphaned grader to exit")
    # and Ray's restart gives the node a grader again
    wait_for(
        lambda: any(
            s.node_id == node_id and s.pid != old["pid"] and s.health == "ok" for s in status()
        ),
        what="the restarted actor's grader",
    )


def test_a_node_that_joins_gets_a_grader_and_one_that_leaves_loses_it(
    ray_cluster: RayCluster,
) -> None:
    made_before = connect()  # a pool made before the node joined...
    urls = [n["endpoint"] for n in made_before.nodes()]
    secret = {SECRET_HEADER: kv.secret(create=False) or ""}
    eager = RayGraderPool(urls, refresh_s=0.0, headers=secret)
    node = ray_cluster.add_node()
    row = wait_for(
        lambda: next((s for s in status() if s.node_id == node.node_id and s.health == "ok"), None),
        what="a grader on the new node",
    )
    pid = row.pid
    # ... takes in its grader: when asked, or by itself before its next one-shot
    assert isinstance(made_before, RayGraderPool)
    assert made_before.refresh() == [row.url]
    assert eager.exec_once("py", code="print(5)")["stdout"] == "5\n"
    assert row.url in [n["endpoint"] for n in eager.nodes()]
    made_before.close()
    eager.close()
    ray_cluster.cluster.remove_node(node)
    wait_for(lambda: node.node_id not in kv.grader_records(), what="the gone node's record to go")
    wait_for(lambda: process_gone(pid), timeout=30, what="the gone node's grader to exit")
