"""A node lost in the middle of a batch of 1,000 candidates: every answered
reward is right, every other candidate is a typed infrastructure error
(never a 0.0), and none is graded twice, by the graders' own counters.

The node is lost as a machine is: its grader process SIGKILLed and its
raylet removed without a goodbye, while the pool has requests in flight on
it. Those may have run, so the pool never sends them elsewhere (they come
back as ``CollimateError`` with no HTTP status); those the dead node
refused untouched (connection refused) are sent to the other graders.
"""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from collimate_rl import connect
from collimate_rl.errors import CollimateError
from collimate_rl.ray import kv, status
from collimate_rl.ray.control import grader_client
from collimate_rl.ray.registry import alive_nodes
from collimate_rl.ray.testing import RayCluster, wait_for

CANDIDATES = 1000
#: the node goes once this many candidates are answered
LOSE_AFTER = 250
WORKERS = 12


def _reward(client: Any, i: int) -> float | CollimateError:
    """The candidate's reward: 1.0 when its program prints what it must
    (every candidate is right, so any 0.0 would be a wrong reward), or the
    infrastructure error that kept it from being graded."""
    try:
        out = client.exec_once("py", code=f"print({i} * {i} + 1)")
    except CollimateError as err:
        return err
    return 1.0 if out["stdout"] == f"{i * i + 1}\n" and out["exit_code"] == 0 else 0.0


def test_a_node_lost_mid_batch(ray_cluster: RayCluster) -> None:
    node = ray_cluster.add_node()
    wait_for(
        lambda: any(s.node_id == node.node_id and s.health == "ok" for s in status()),
        what="a grader on the new node",
    )
    lost = kv.grader_records()[node.node_id]
    before = {s.node_id: s.execs_run for s in status()}
    client = connect()
    urls = [n["endpoint"] for n in client.nodes()]
    assert lost["url"] in urls and len(urls) == 4

    # the lost grader's own count, as last reported before it went
    reported = {"execs_run": before[node.node_id]}
    stop_polling = threading.Event()

    def poll() -> None:
        with grader_client(lost["url"], timeout=2.0) as probe:
            while not stop_polling.is_set():
                try:
                    reported["execs_run"] = probe.health()["execs_run"]
                except CollimateError:
                    return
                stop_polling.wait(0.05)

    answered = threading.Semaphore(0)

    def grade(i: int) -> float | CollimateError:
        result = _reward(client, i)
        if not isinstance(result, CollimateError):
            answered.release()
        return result

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    with ThreadPoolExecutor(WORKERS) as pool:
        futures = [pool.submit(grade, i) for i in range(CANDIDATES)]
        for _ in range(LOSE_AFTER):
            answered.acquire()
        at_loss = {n["endpoint"]: n["answered"] for n in client.nodes()}
        os.kill(lost["pid"], signal.SIGKILL)
        ray_cluster.cluster.remove_node(node, allow_graceful=False)
        results = [f.result() for f in futures]
    stop_polling.set()
    poller.join(5)

    rewards = [r for r in results if not isinstance(r, CollimateError)]
    errors = [r for r in results if isinstance(r, CollimateError)]
    assert len(rewards) + len(errors) == CANDIDATES
    assert rewards and all(r == 1.0 for r in rewards)  # every answered reward right
    # every other one a typed infrastructure error: a request that may have
    # run on the lost node, not an answer
    assert all(e.status is None and not e.unsent for e in errors), errors[:3]
    assert at_loss[lost["url"]] > 0  # the lost node was grading when it went
    assert len(rewards) > LOSE_AFTER  # and the batch went on without it

    seen = {n["endpoint"]: n for n in client.nodes()}
    client.close()
    # the GCS notices the raylet's death by its missed health checks
    wait_for(lambda: node.node_id not in alive_nodes(), what="Ray to see the node gone")
    after = {s.node_id: s.execs_run for s in status()}
    assert node.node_id not in after
    records = {r["url"]: n for n, r in kv.grader_records().items()}
    # None graded twice: each surviving grader ran exactly the candidates
    # the pool got answers for from it...
    for url, entry in seen.items():
        if url == lost["url"]:
            continue
        node_id = records[url]
        assert after[node_id] - before[node_id] == entry["answered"], (url, entry)
    # ... and what the lost one ran (as it last said) is no more than it
    # answered plus the candidates that came back as errors
    ran_lost = reported["execs_run"] - before[node.node_id]
    assert ran_lost <= seen[lost["url"]]["answered"] + len(errors)
    assert sum(e["answered"] for e in seen.values()) >= len(rewards)
    print(
        f"node lost after {LOSE_AFTER} answers: {len(rewards)} rewards, {len(errors)} "
        f"infra errors; the lost grader ran {ran_lost} (last report), answered "
        f"{seen[lost['url']]['answered']}, refused {seen[lost['url']]['refused']}"
    )
