"""The Ray route against a direct URL, on one node: what finding the
grader through Ray costs a call.

A one-node Ray cluster on this machine (object store capped), its grader
started by ``collimate_rl.ray.up()``. Two clients of that one grader, both
carrying the cluster's secret: the one ``connect()`` returns inside the
Ray job (the cluster step: a ``MultiNodeClient`` over the node's grader,
its own node preferred) and a ``CollimateClient`` given the grader's URL.
Each round sends ``--calls`` sequential default calls (a one-shot
``exec_once("py", code="print(1)")``) through each, call by call in turn,
after a warm-up; a round's figure is the ratio of its two medians, the
result the median over ``--rounds`` paired rounds (a machine's drift
moves both sides of a round alike). Target: the Ray route within 10% of
the direct URL. ``connect()``'s cost of finding the graders (the registry
lookup and the records read from Ray), once per client, is reported
apart: the first time in a process and after.

    hatch run bench:one benchmarks/bench_ray_route.py [--rounds 15 --calls 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from _results import add_out_option, write_results

TARGET = 1.10


def _one_call(client: Any) -> float:
    started = time.perf_counter()
    out = client.exec_once("py", code="print(1)")
    took = time.perf_counter() - started
    assert out["stdout"] == "1\n", out
    return took


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="paired rounds")
    parser.add_argument("--calls", type=int, default=30, help="calls per client per round")
    parser.add_argument("--warmup", type=int, default=20, help="calls per client first")
    add_out_option(parser)
    args = parser.parse_args(argv)
    try:
        import ray
        from ray.cluster_utils import Cluster
    except ImportError:
        print("Ray is not installed here: run it where it is (hatch run bench:one ...)")
        return 2

    from collimate_rl import CollimateClient, connect
    from collimate_rl.local_backend.cluster_secret import SECRET_HEADER
    from collimate_rl.ray import down, kv, up

    for name in ("COLLIMATE_SERVE_URL", "COLLIMATE_SERVE_SOCKET", "COLLIMATE_API_KEY"):
        os.environ.pop(name, None)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "object_store_memory": 100 * 1024 * 1024,
            "include_dashboard": False,
        },
    )
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        (grader,) = up()
        started = time.perf_counter()
        routed = connect()
        found_ms = (time.perf_counter() - started) * 1000
        again = []
        for _ in range(10):
            started = time.perf_counter()
            connect().close()
            again.append((time.perf_counter() - started) * 1000)
        again_ms = statistics.median(again)
        direct = CollimateClient(grader.url, headers={SECRET_HEADER: kv.secret(create=False) or ""})
        assert [n["endpoint"] for n in routed.nodes()] == [grader.url]
        for _ in range(args.warmup):
            _one_call(routed)
            _one_call(direct)
        ratios, ray_ms, direct_ms = [], [], []
        for i in range(args.rounds):
            # call by call, in turn (the first of each pair alternating by
            # round): a drift of the machine moves both sides alike
            pair = [(routed, []), (direct, [])] if i % 2 == 0 else [(direct, []), (routed, [])]
            for _ in range(args.calls):
                for client, times in pair:
                    times.append(_one_call(client))
            timed = {id(client): statistics.median(times) * 1000 for client, times in pair}
            ray_ms.append(timed[id(routed)])
            direct_ms.append(timed[id(direct)])
            ratios.append(ray_ms[-1] / direct_ms[-1])
        routed.close()
        direct.close()
    finally:
        down()
        ray.shutdown()
        cluster.shutdown()

    ratio = statistics.median(ratios)
    figures = {
        "ratio_median": round(ratio, 4),
        "target_ratio": TARGET,
        "met": ratio <= TARGET,
        "ray_route_ms_median": round(statistics.median(ray_ms), 3),
        "direct_ms_median": round(statistics.median(direct_ms), 3),
        "connect_finds_graders_ms_first": round(found_ms, 1),
        "connect_finds_graders_ms_again": round(again_ms, 2),
        "ratios": [round(r, 4) for r in ratios],
    }
    print(
        f"default call (exec_once print(1)), median of {args.rounds} paired rounds of "
        f"{args.calls}: Ray route {figures['ray_route_ms_median']} ms, direct URL "
        f"{figures['direct_ms_median']} ms, ratio {ratio:.3f} (target <= {TARGET}): "
        f"{'met' if figures['met'] else 'NOT met'}; connect() found the graders in "
        f"{found_ms:.1f} ms the first time in the process, {again_ms:.1f} ms after (median of 10)"
    )
    write_results(__file__, args, figures, [])
    return 0 if figures["met"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
