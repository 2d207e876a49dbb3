"""Compatibility script: the published ``collimate-rl==0.8.0`` client runs
its README's gateway flows, and its ``FleetView``, against our local
backend's gateway wire.

Run with the PEER's interpreter (a venv holding collimate-rl 0.8.0), never
ours: ``<peer python> peer_gateway_080.py BASE_URL PRO_KEY DEMO_KEY``. It
uses only the peer's public API and the standard library (with the checks'
scaffolding from the sibling ``peer_checks.py``), prints one line per check,
and exits 0 only if every check passed. Written for Python 3.8+.

The README's connect-from-outside part (port forwards, a CDP browser) is
not checked here.
"""

import os
import sys

import collimate_rl
from collimate_rl import (
    FleetStatus,
    FleetView,
    GatewayClient,
    GatewayError,
    NodePool,
    PropertyReward,
    Ready,
    Template,
    connect,
    grade,
    open_session,
)

# -I keeps this folder off the path: put it back, after the peer's packages
sys.path.append(os.path.dirname(os.path.abspath(__file__)))
from peer_checks import check, expect_error, report

VOWELS = PropertyReward(
    reference="    return sum(c in 'aeiouAEIOU' for c in x)",
    generator="''.join(random.choice('abcdEIOUxyz') for _ in range(8))",
    k=16,
)
RIGHT = "def solve(x):\n    return sum(c in 'aeiouAEIOU' for c in x)\n"
WRONG = "def solve(x):\n    return len(x)\n"


def run(base_url, pro_key, demo_key):
    client = connect(api_key=pro_key, base_url=base_url)
    demo = connect(api_key=demo_key, base_url=base_url)
    state = {}

    @check("peer version is 0.8.x")
    def _():
        assert collimate_rl.__version__.startswith("0.8."), collimate_rl.__version__

    @check("connect(api_key=...) is the gateway; images() is the catalog")
    def _():
        assert isinstance(client, GatewayClient), type(client)
        ids = {row["id"] for row in client.images()}
        assert "dkr-python311" in ids, ids

    @check("grade over the gateway with the README's PropertyReward, pinned seed")
    def _():
        good = grade(client, "dkr-python311", RIGHT, VOWELS, seed="ab" * 32)
        bad = grade(client, "dkr-python311", WRONG, VOWELS, seed="ab" * 32)
        assert good.reward == 1.0 and bad.reward == 0.0, (good, bad)
        assert good.seed == "ab" * 32, good
        assert client.list_sandboxes() == []

    @check("client.env(catalog, width) -> env.sandbox() -> fork_group")
    def _():
        with client.env("python", width=4) as env, env.sandbox() as sess:
            sess.exec(command="echo parent > seed.txt")
            with sess.fork_group(4) as group:
                assert len(group) == 4
                outs = group.exec_each(command="cat seed.txt", concurrency=4)
                assert [o.stdout for o in outs] == ["parent\n"] * 4, outs
        assert client.list_sandboxes() == []

    @check("Template.bake to Live; expect_width / release_template")
    def _():
        handle = Template.bake(
            client, name="peer080-fleet", image="python:3.11", ready=Ready(cmd="true"), width=2
        )
        status = handle.wait(timeout=300, poll_interval=0.2)
        assert status.phase == "Live" and status.converged and status.declared == 2, status
        state["handle"] = handle
        answer = client.expect_width(handle.id, 3)
        assert answer == {"id": handle.id, "expected_width": 3}, answer
        released = client.release_template(handle.id)
        assert released["id"] == handle.id and released["released"] is True, released

    @check("client.env(own template id, width) declares the width, exit releases")
    def _():
        handle = state["handle"]
        with client.env(handle.id, width=2) as env:
            with env.sandbox() as sess:
                assert sess.exec(command="echo own").stdout == "own\n"
            assert client.get_template(handle.id).get("expected_width") == 2
        assert not client.get_template(handle.id).get("expected_width")

    @check("open_session(client, handle) as a context manager")
    def _():
        with open_session(client, state["handle"], label="peer080") as sess:
            assert sess.exec(code="print(6 * 7)").stdout == "42\n"
        assert client.list_sandboxes() == []

    @check("FleetView: the tenant's pools, summed and by node")
    def _():
        handle = state["handle"]
        view = FleetView(client)
        assert view.template_ids() == [handle.id], view.template_ids()
        fleet = view.status()
        assert isinstance(fleet, FleetStatus)
        assert [t.id for t in fleet.templates] == [handle.id]
        one = client.get_template(handle.id)
        assert fleet.declared == one["declared"] and fleet.warm == one["warm"], fleet
        assert fleet.frozen == one["frozen"] and fleet.total == fleet.warm + fleet.frozen
        assert fleet.converged and fleet.missing == [] and fleet.warm_hit is None
        assert len(fleet.nodes) == len(one["per_node"]) >= 1
        node = fleet.nodes[0]
        assert isinstance(node, NodePool) and node.templates[handle.id]["warm"] == node.warm
        assert "converged" in fleet.summary() and "1 template(s)" in fleet.summary()
        assert fleet.as_dict()["templates"][0]["id"] == handle.id

    @check("FleetView: unknown and foreign ids are missing; samples give warm_hit")
    def _():
        handle = state["handle"]
        fleet = FleetView(client, template_ids=[handle.id, "tpl_nope"]).status(
            samples=[{"warm_hit": True}, {"warm_hit": False}]
        )
        assert fleet.missing == ["tpl_nope"] and fleet.warm_hit == 0.5, fleet
        foreign = FleetView(demo, template_ids=[handle.id]).status()
        assert foreign.templates == [] and foreign.missing == [handle.id], foreign
        assert FleetView(demo).status().templates == []
        assert not FleetView(demo).status().converged  # nothing sized: never ready

    @check("FleetView.watch until converged")
    def _():
        seen = []
        done = FleetView(client).watch(
            on_update=seen.append, interval=0.5, timeout=60, until_converged=True
        )
        assert done.converged and seen and seen[-1] is done

    @check("a bad key is raised by FleetView, never an empty fleet")
    def _():
        bad = GatewayClient("col_pro_not-a-key", base_url)
        expect_error(
            lambda: FleetView(bad, template_ids=["tpl_x"]).status(),
            401,
            "unauthorized",
            GatewayError,
        )

    for tpl in client.list_templates():
        client.delete_template(tpl["id"])


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], sys.argv[3])
    sys.exit(report())
