"""Compatibility script: the published ``collimate-rl==0.5.0`` client against
our local backend.

Run with the PEER's interpreter (a venv holding collimate-rl 0.5.0), never
ours: ``<peer python> peer_compat.py http://127.0.0.1:PORT [UNIX_SOCKET]``.
It uses only the peer's public API and the standard library (with the
checks' scaffolding from the sibling ``peer_checks.py``), prints one line per
check, and exits 0 only if every check passed. Written for Python 3.8+.
"""

import functools
import os
import sys

import collimate_rl
from collimate_rl import CollimateClient, CollimateError

# -I keeps this folder off the path: put it back, after the peer's packages
sys.path.append(os.path.dirname(os.path.abspath(__file__)))
import peer_checks
from peer_checks import check, report

SEED = "ab" * 32
DRAWS = "import random\nprint([random.random() for _ in range(5)])"
#: every refusal this script expects is raised as the daemon client's typed error
expect_error = functools.partial(peer_checks.expect_error, error_type=CollimateError)


def run(client):
    @check("peer version is 0.5.x")
    def _():
        assert collimate_rl.__version__.startswith("0.5"), collimate_rl.__version__

    @check("health")
    def _():
        h = client.health()
        assert h["status"] == "ok", h
        for key in ("sessions", "running", "max_inflight", "queued", "templates", "version"):
            assert key in h, key
        assert "py" in client.templates()

    @check("one-shot exec, merged stderr, empty stderr field")
    def _():
        r = client.exec_once("sh", command="echo out; echo err 1>&2; exit 7")
        assert r["stdout"] == "out\nerr\n", r
        assert r["stderr"] == "" and r["exit_code"] == 7, r
        for key in ("fork_time_ms", "exec_time_ms", "total_time_ms", "seed", "seed_ack"):
            assert key in r, key

    @check("seed echo (sent and fresh)")
    def _():
        r = client.exec_once("py", code="print(1)", seed=SEED)
        assert r["seed"] == SEED, r
        fresh = client.exec_once("py", code="print(1)")
        assert len(fresh["seed"]) == 64 and fresh["seed"] != SEED
        int(fresh["seed"], 16)

    @check("CRN reproducibility: same seed -> same random draws")
    def _():
        a = client.exec_once("py", code=DRAWS, seed=SEED)["stdout"]
        b = client.exec_once("py", code=DRAWS, seed=SEED)["stdout"]
        c = client.exec_once("py", code=DRAWS, seed="cd" * 32)["stdout"]
        assert a == b and a != c, (a, b, c)
        import random

        rng = random.Random(int(SEED, 16))
        assert a.strip() == repr([rng.random() for _ in range(5)]), a

    @check("timeout as exit -1 with a message")
    def _():
        r = client.exec_once("sh", command="echo start; sleep 20", timeout_seconds=1)
        assert r["exit_code"] == -1, r
        assert "timeout after" in r["stdout"], r

    @check("files and commands")
    def _():
        r = client.exec_once(
            "sh",
            commands=[["cat", "in.txt"], ["echo", "a b"]],
            files=[{"path": "in.txt", "content": "no-newline"}],
        )
        assert r["stdout"] == "no-newline\na b\n", r

    @check("session create / exec / get / list / delete")
    def _():
        created = client.create_session("py")
        sid = created["session_id"]
        assert created["template_id"] == "py"
        assert "fork_time_ms" in created and "create_time_ms" in created
        try:
            r1 = client.session_exec(sid, command="echo persisted > f.txt")
            assert r1["exit_code"] == 0, r1
            r2 = client.session_exec(sid, command="cat f.txt")
            assert r2["stdout"] == "persisted\n", r2
            r3 = client.session_exec(sid, code=DRAWS, seed=SEED)
            assert r3["seed"] == SEED
            info = client.get_session(sid)
            assert info["session_id"] == sid and info["exec_count"] == 3, info
            for key in ("template_id", "age_secs", "idle_secs"):
                assert key in info, key
            assert sid in [s["session_id"] for s in client.list_sessions()]
        finally:
            deleted = client.delete_session(sid)
        assert deleted.get("deleted") is True, deleted
        assert sid not in [s["session_id"] for s in client.list_sessions()]
        client.delete_session(sid)  # idempotent teardown: must not raise
        expect_error(lambda: client.get_session(sid), 404, "no_such_session")

    @check("error codes")
    def _():
        expect_error(lambda: client.exec_once("nope", code="1"), 404, "no_template")
        expect_error(lambda: client.exec_once("py", code="1", seed="xyz"), 400, "invalid_seed")
        expect_error(lambda: client.exec_once("", code="1"), 400, "template_id_required")
        expect_error(
            lambda: client.exec_once("py", code="1", timeout_seconds=5000), 400, "bad_request"
        )
        expect_error(lambda: client.create_session("nope"), 404, "no_template")
        expect_error(lambda: client.get_session("sess_missing"), 404, "no_such_session")
        expect_error(
            lambda: client.session_exec("sess_missing", command="true"), 404, "no_such_session"
        )
        expect_error(
            lambda: client.exec_once("py", code="1", egress={"mode": "none"}), 400, "bad_request"
        )


def main(argv):
    url = argv[1]
    run(CollimateClient(url, retries=0))
    if len(argv) > 2:
        print("-- over the unix socket", argv[2])
        run(CollimateClient(unix_socket=argv[2], retries=0))
    return report()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
