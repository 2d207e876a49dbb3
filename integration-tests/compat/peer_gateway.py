"""Compatibility script: the published ``collimate-rl==0.5.0`` GatewayClient
against our local backend's gateway wire.

Run with the PEER's interpreter (a venv holding collimate-rl 0.5.0), never
ours: ``<peer python> peer_gateway.py BASE_URL PRO_KEY DEMO_KEY``. It uses only
the peer's public API and the standard library (with the checks' scaffolding
from the sibling ``peer_checks.py``), prints one line per check, and exits 0
only if every check passed. Written for Python 3.8+.
"""

import os
import sys

import collimate_rl
from collimate_rl.gateway import DemoTierLimit, GatewayClient, GatewayError
from collimate_rl.template import Ready, Template

# -I keeps this folder off the path: put it back, after the peer's packages
sys.path.append(os.path.dirname(os.path.abspath(__file__)))
from peer_checks import check, expect_error, report


def run(base_url, pro_key, demo_key):
    pro = GatewayClient(pro_key, base_url)
    demo = GatewayClient(demo_key, base_url)

    @check("peer version is 0.5.x")
    def _():
        assert collimate_rl.__version__.startswith("0.5"), collimate_rl.__version__

    @check("images: the public catalog")
    def _():
        rows = pro.images()
        ids = {r["id"] for r in rows}
        assert {"py", "sh"} <= ids, ids
        for r in rows:
            assert r["visibility"] == "public", r
            for key in ("id", "name", "image", "tier", "description"):
                assert key in r, (key, r)

    @check("create_session / session_exec / delete_session")
    def _():
        s = pro.create_session("py")
        sid = s["session_id"]
        assert s["id"] == sid and s["fork_time_ms"] >= 0, s
        r = pro.session_exec(sid, command="echo out; echo err 1>&2; exit 4")
        assert r["stdout"] == "out\nerr\n" and r["exit_code"] == 4 and r["stderr"] == "", r
        assert sid in {x["session_id"] for x in pro.list_sessions()}
        assert pro.get_session(sid)["template_id"] == "py"
        assert pro.delete_session(sid)["deleted"] is True
        assert pro.delete_session(sid)["deleted"] is False

    @check("exec_once: create -> exec -> delete, nothing left")
    def _():
        r = pro.exec_once("py", code="print(6 * 7)", seed="ab" * 32)
        assert r["stdout"] == "42\n" and r["seed"] == "ab" * 32, r
        assert pro.list_sandboxes() == []

    @check("fork_group(64) on a pro key: two chunks of 32, inherit then diverge")
    def _():
        with pro.session("sh") as sess:
            sess.exec(command="echo from-parent > seed.txt")
            calls = []
            real_fork = pro.fork

            def counting_fork(sandbox_id, **kw):
                out = real_fork(sandbox_id, **kw)
                calls.append(len(out["children"]))
                return out

            pro.fork = counting_fork
            try:
                with sess.fork_group(64) as group:
                    assert calls == [32, 32], calls
                    assert len(group) == 64
                    outs = group.exec_each(
                        command="cat seed.txt; echo $COLLIMATE_SEED", concurrency=8
                    )
                    assert all(o.stdout.startswith("from-parent\n") for o in outs)
                    seeds = {o.stdout.split("\n")[1] for o in outs}
                    assert len(seeds) == 1, seeds  # crn: one shared seed in the group
                    group[0].exec(command="echo changed > seed.txt")
                    assert group[1].exec(command="cat seed.txt").stdout == "from-parent\n"
                    assert len(pro.list_sandboxes()) == 65
            finally:
                del pro.fork
        assert pro.list_sandboxes() == []

    @check("a single fork over the pro cap is a 400")
    def _():
        sid = pro.create_sandbox("sh")["id"]
        try:
            expect_error(lambda: pro.fork(sid, count=33), 400, "bad_request", GatewayError)
        finally:
            pro.delete_sandbox(sid)

    @check("bake and wait to Live")
    def _():
        handle = Template.bake(
            pro,
            name="peer-json",
            image="python:3.11",
            ready=Ready(cmd="python3 -c 'import json'"),
            width=2,
        )
        phases = []
        status = handle.wait(
            timeout=300, poll_interval=0.2, on_update=lambda s: phases.append(s.phase)
        )
        assert status.phase == "Live" and status.converged, status
        assert status.warm >= 2 and status.declared == 2, status
        assert phases[-1] == "Live", phases
        again = Template.attach(pro, handle.id)
        assert again.status().phase == "Live"
        with pro.session(handle) as sess:
            assert sess.exec(code="print(1 + 1)").stdout == "2\n"

    @check("a failing bake ends Failed (TemplateBakeFailed)")
    def _():
        from collimate_rl.template import TemplateBakeFailed

        handle = Template.bake(
            pro, name="peer-broken", image="python:3.11", ready=Ready(cmd="exit 9"), width=1
        )
        try:
            handle.wait(timeout=300, poll_interval=0.2)
        except TemplateBakeFailed as exc:
            assert exc.status.build_fails == 2 and "exited 9" in exc.status.error, exc.status
        else:
            raise AssertionError("no TemplateBakeFailed")
        pro.delete_template(handle.id)

    @check("expect / release on an own template, env() context")
    def _():
        tid = pro.create_template(name="peer-env", image="python:3.11", width=1)["id"]
        answer = pro.expect_width(tid, 8)
        assert answer == {"id": tid, "expected_width": 8}, answer
        rel = pro.release_template(tid)
        assert rel["id"] == tid and rel["released"] is True and rel["released_at"], rel
        with pro.env("py", width=2) as env, env.sandbox() as sess:
            assert sess.exec(command="echo env").stdout == "env\n"
        # a catalog row takes no expect
        expect_error(lambda: pro.expect_width("py", 4), 403, "forbidden", GatewayError)

    @check("suspend / resume")
    def _():
        with pro.session("sh") as sess:
            assert sess.suspend()["state"] == "suspended"
            assert sess.resume()["state"] == "running"
            assert sess.exec(command="echo back").stdout == "back\n"

    @check("usage")
    def _():
        u = pro.usage()
        assert set(u) >= {"from", "to", "totals"}, u
        assert u["totals"]["sandboxes"] >= 66 and u["totals"]["execs"] >= 66, u

    @check("demo: the 9th sandbox is DemoTierLimit with the server's message")
    def _():
        made = [demo.create_sandbox("sh")["id"] for _ in range(8)]
        try:
            demo.create_sandbox("sh")
        except DemoTierLimit as exc:
            assert exc.code == "demo_tier_limit" and "8 sandboxes" in str(exc), exc
        else:
            raise AssertionError("no DemoTierLimit")
        finally:
            for sid in made:
                demo.delete_sandbox(sid)

    @check("demo: a networked bake is network_requires_pro")
    def _():
        expect_error(
            lambda: Template.bake(
                demo, name="n", image="python:3.11", ready=Ready(network=True), width=1
            ),
            403,
            "network_requires_pro",
            GatewayError,
        )

    for tpl in pro.list_templates():
        pro.delete_template(tpl["id"])


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], sys.argv[3])
    sys.exit(report())
