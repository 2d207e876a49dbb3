"""Keys, tenants and the tier table of the gateway wire on the real local
backend: every rule of docs/wire.md §3 answered as the typed error it maps to."""

from __future__ import annotations

import logging
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from collimate_rl import GatewayClient
from collimate_rl.errors import CollimateDrainingError, DemoTierLimit, GatewayError
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.cli import build_parser, config_from_args
from collimate_rl.local_backend.tenants import KeyRing
from collimate_rl.local_backend.tiers import DEMO_LIMIT_MESSAGE
from collimate_rl.testing.procs import serve_with_banner

DEMO, PRO, ENT = "col_demo_tiers_d", "col_pro_tiers_p", "col_ent_tiers_e"
NETWORKED = {"id": "py-net", "kind": "python", "networked": True}


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(templates=[NETWORKED], api_keys=[DEMO, PRO, ENT]) as b:
        yield b


@pytest.fixture
def demo(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    with GatewayClient(DEMO, backend.base_url) as c:
        yield c
        for sb in c.list_sandboxes():
            c.delete_sandbox(sb["id"])


@pytest.fixture
def pro(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    with GatewayClient(PRO, backend.base_url) as c:
        yield c
        for sb in c.list_sandboxes():
            c.delete_sandbox(sb["id"])


def test_the_ninth_demo_sandbox_is_a_demo_tier_limit_with_the_servers_message(
    demo: GatewayClient,
) -> None:
    for _ in range(8):
        demo.create_sandbox("sh")
    with pytest.raises(DemoTierLimit) as got:
        demo.create_sandbox("sh")
    assert got.value.code == "demo_tier_limit"
    assert got.value.status in (403, 429)
    assert got.value.message == DEMO_LIMIT_MESSAGE.format(limit=8, running=8)
    assert len(demo.list_sandboxes()) == 8  # refused before anything was forked
    # a fork over the cap is refused the same way
    first = demo.list_sandboxes()[0]["id"]
    with pytest.raises(DemoTierLimit):
        demo.fork(first, count=1)


def test_fork_caps_per_call(
    demo: GatewayClient, pro: GatewayClient, backend: LocalCollimateBackend
) -> None:
    parent = demo.create_sandbox("sh")["id"]
    with pytest.raises(GatewayError) as got:
        demo.fork(parent, count=5)
    assert (got.value.status, got.value.code) == (400, "bad_request")
    assert len(demo.fork(parent, count=4)["children"]) == 4
    big = pro.create_sandbox("sh")["id"]
    with pytest.raises(GatewayError) as got:
        pro.fork(big, count=33)
    assert (got.value.status, got.value.code) == (400, "bad_request")
    with GatewayClient(ENT, backend.base_url) as ent:
        top = ent.create_sandbox("sh")["id"]
        try:
            with pytest.raises(GatewayError) as got:
                ent.fork(top, count=65)
            assert (got.value.status, got.value.code) == (400, "bad_request")
        finally:
            ent.delete_sandbox(top)


def test_a_networked_demo_bake_is_network_requires_pro(demo: GatewayClient) -> None:
    for ready in ({"network": True}, {"ports": [8080]}, {"http": "http://localhost:8080/"}):
        with pytest.raises(GatewayError) as got:
            demo.create_template(name="net", image="python:3.11", ready=ready, width=1)
        assert (got.value.status, got.value.code) == (403, "network_requires_pro")


def test_demo_keys_do_not_bake_expect_or_release(demo: GatewayClient) -> None:
    with pytest.raises(GatewayError) as got:
        demo.create_template(name="plain", image="python:3.11", width=1)
    assert (got.value.status, got.value.code) == (403, "forbidden")
    for call in (lambda: demo.expect_width("py", 4), lambda: demo.release_template("py")):
        with pytest.raises(GatewayError) as got:
            call()
        assert (got.value.status, got.value.code) == (403, "forbidden")


def test_demo_keys_cannot_use_a_networked_catalog_template(demo: GatewayClient) -> None:
    rows = {row["id"]: row for row in demo.images()}
    assert rows["py-net"]["tier"] == "pro" and rows["py"]["tier"] == "demo"
    with pytest.raises(GatewayError) as got:
        demo.create_sandbox("py-net")
    assert (got.value.status, got.value.code) == (403, "network_requires_pro")


def test_egress_on_a_vsock_only_template_is_its_400(
    demo: GatewayClient, pro: GatewayClient
) -> None:
    for client in (demo, pro):
        with pytest.raises(GatewayError) as got:
            client.create_sandbox("py", egress={"mode": "none"})
        assert got.value.status == 400
        assert got.value.message == "template is vsock-only"


def test_egress_on_a_networked_template(pro: GatewayClient) -> None:
    none = pro.create_sandbox("py-net", egress={"mode": "none"})
    assert none["egress"]["enforced"] == "none"
    leak = pro.create_sandbox("py-net", egress={"preset": "rl-leakage"})
    assert leak["egress"] == {**leak["egress"], "requested": "denylist", "enforced": "none"}
    opened = pro.create_sandbox("py-net")
    assert "egress" not in opened
    with pytest.raises(GatewayError) as got:
        pro.create_sandbox("py-net", egress={"preset": "no-such-preset"})
    assert got.value.code == "bad_request"


def test_catalog_lists_the_public_templates(
    pro: GatewayClient, backend: LocalCollimateBackend
) -> None:
    rows = pro.images()
    assert {r["id"] for r in rows} == set(backend.health()["templates"])
    for row in rows:
        assert set(row) >= {"id", "name", "image", "visibility", "tier", "description"}
        assert row["visibility"] == "public"


def test_keys_are_required_and_checked(backend: LocalCollimateBackend) -> None:
    with httpx.Client(base_url=backend.base_url) as raw:
        assert raw.get("/v1/health").json()["status"] == "ok"  # no key needed
        missing = raw.get("/v1/sandboxes")
        assert missing.status_code == 401 and missing.json()["code"] == "unauthorized"
        wrong = raw.get("/v1/images", headers={"Authorization": "Bearer col_pro_not_a_key_here"})
        assert wrong.status_code == 401 and wrong.json()["code"] == "unauthorized"
        # the daemon wire is untouched beside it
        assert raw.get("/v1/sessions").status_code == 200


def test_keys_never_reach_the_logs(
    backend: LocalCollimateBackend, pro: GatewayClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        sid = pro.create_sandbox("py")["id"]
        pro.exec(sid, command="true")
        with httpx.Client(base_url=backend.base_url) as raw:
            raw.get("/v1/images", headers={"Authorization": "Bearer col_pro_wrong_key_zz"})
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert PRO not in text and "col_pro_wrong_key_zz" not in text


def test_generated_keys_when_none_is_given() -> None:
    with LocalCollimateBackend(gateway_max_warm=0) as b:
        keys = b.generated_keys
        assert set(keys) == {"demo", "pro"}
        assert keys["demo"].startswith("col_demo_") and keys["pro"].startswith("col_pro_")
        with GatewayClient(keys["pro"], b.base_url) as c:
            assert c.list_sandboxes() == []
    with LocalCollimateBackend(api_keys=[PRO]) as b:
        assert b.generated_keys == {}


def test_a_server_takes_its_keys_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    path.write_text("col_pro_file_one  team\ncol_demo_file_two team\n")
    with LocalCollimateBackend(api_keys_file=path, gateway_max_warm=0) as b:
        assert b.generated_keys == {}
        with GatewayClient("col_pro_file_one", b.base_url) as one:
            sid = one.create_sandbox("sh")["id"]
            with GatewayClient("col_demo_file_two", b.base_url) as two:
                # one tenant, two keys: the demo key sees the pro key's sandbox
                assert sid in {s["id"] for s in two.list_sandboxes()}
            one.delete_sandbox(sid)
    with pytest.raises(ValueError, match="keys file"):
        LocalCollimateBackend(api_keys_file=tmp_path / "missing").start()


def test_keys_file_and_cli_flags(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text("# team keys\ncol_pro_a_1  team-a\ncol_ent_a_2 team-a\n\ncol_demo_b_1\n")
    ring = KeyRing()
    ring.add_file(path)
    a1 = ring.tenant_for("Bearer col_pro_a_1")
    a2 = ring.tenant_for("Bearer col_ent_a_2")
    assert a1.id == a2.id == "team-a"
    assert (a1.tier.name, a2.tier.name) == ("pro", "ent")
    assert ring.tenant_for("Bearer col_demo_b_1").id.startswith("t_")
    path.write_text("col_gold_x_1\n")
    with pytest.raises(ValueError, match=r"keys:1: not an API key \(col_gold_\.\.\.\)"):
        KeyRing().add_file(path)
    args = build_parser().parse_args(
        ["--api-key", "col_pro_x_1", "--api-key", "col_demo_y_2", "--api-keys-file", str(path)]
    )
    cfg = config_from_args(args)
    assert cfg.api_keys == ("col_pro_x_1", "col_demo_y_2")
    assert cfg.api_keys_file == str(path)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_the_server_prints_the_keys_it_made_up_and_drains_gateway_work() -> None:
    proc, banner = serve_with_banner("--port", "0")
    try:
        url = re.search(r"listening on (http://127\.0\.0\.1:\d+)", banner)
        keys = dict(re.findall(r"generated (demo|pro) key \(shown once\): (col_\S+)", banner))
        assert url and set(keys) == {"demo", "pro"}, banner
        with GatewayClient(keys["pro"], url.group(1), retries=0) as client:
            sid = client.create_sandbox("sh")["id"]
            assert client.exec(sid, command="echo up")["stdout"] == "up\n"
            slow: list[str] = []
            t = threading.Thread(
                target=lambda: slow.append(client.exec(sid, command="sleep 3; echo done")["stdout"])
            )
            t.start()
            deadline = time.monotonic() + 30
            while client.health()["running"] < 1:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            proc.send_signal(signal.SIGTERM)  # drain: new gateway work is refused too
            while client.health()["status"] != "draining":
                assert time.monotonic() < deadline
                time.sleep(0.02)
            with pytest.raises(CollimateDrainingError):
                client.create_sandbox("sh")
            t.join(60)
            assert slow == ["done\n"]  # the exec in flight finished
        assert proc.wait(60) == 0
    finally:
        _stop(proc)
    proc, banner = serve_with_banner("--port", "0", "--api-key", PRO)
    try:
        assert "generated" not in banner and "1 API key(s)" in banner
        assert PRO not in banner
    finally:
        _stop(proc)
