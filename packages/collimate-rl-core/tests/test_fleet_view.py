"""``FleetView`` over the gateway wire of a real local backend: what a key's
templates hold, summed and split by node; a foreign or deleted template is
``missing``, never shown; an outage is raised, never shown as zeros; the
watch loop's two modes. And the 0.8.0 names under ``collimate_rl``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import collimate_rl
from collimate_rl import (
    FleetStatus,
    FleetView,
    GatewayClient,
    GatewayError,
    NodePool,
    Template,
    TemplateHandle,
)
from collimate_rl.local_backend import LocalCollimateBackend

PRO = "col_pro_fleet-view"
OTHER = "col_pro_fleet-other"
FAST = 0.05


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[PRO, OTHER]) as be:
        yield be


@pytest.fixture(scope="module")
def pro(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as client:
        yield client


@pytest.fixture(scope="module")
def baked(pro: GatewayClient) -> Iterator[list[TemplateHandle]]:
    """Two live templates of the PRO tenant, widths 2 and 1."""
    handles = [
        Template.bake(pro, name="fleet-a", image="python:3.11", width=2),
        Template.bake(pro, name="fleet-b", image="python:3.11", width=1),
    ]
    for handle in handles:
        handle.wait(120, poll_interval=FAST)
    yield handles
    for handle in handles:
        pro.delete_template(handle.id)


def test_status_sums_the_tenants_templates_and_splits_them_by_node(
    pro: GatewayClient, baked: list[TemplateHandle]
) -> None:
    view = FleetView(pro)
    ids = [h.id for h in baked]
    assert view.template_ids() == ids  # the key's own rows, in listed order
    status = view.status()
    assert isinstance(status, FleetStatus)
    assert [t.id for t in status.templates] == ids
    assert [r["id"] for r in status.raw] == ids
    answers = [pro.get_template(i) for i in ids]
    assert status.declared == sum(a["declared"] for a in answers) == 3
    assert status.warm == sum(a["warm"] for a in answers) >= 3
    assert status.frozen == 0 and status.total == status.warm
    assert status.converged and status.missing == [] and status.warm_hit is None
    # the local backend is one node: every template's share lands on it
    assert [n.node for n in status.nodes] == ["local"] and status.nodes_reporting == 1
    node = status.nodes[0]
    assert isinstance(node, NodePool) and node.total == status.warm
    assert node.templates == {a["id"]: {"warm": a["warm"], "frozen": 0} for a in answers}
    assert status.summary() == (
        f"{status.warm} spares ({status.warm} warm / 0 frozen) of 3 declared — converged — "
        "1 node(s), 2 template(s)"
    )
    dumped = status.as_dict()
    assert dumped["total"] == status.warm and dumped["converged"] is True
    assert dumped["nodes"] == [
        {
            "node": "local",
            "warm": node.warm,
            "frozen": 0,
            "total": node.warm,
            "templates": node.templates,
        }
    ]
    assert [t["id"] for t in dumped["templates"]] == ids


def test_a_foreign_or_unknown_template_is_missing_not_shown(
    backend: LocalCollimateBackend, pro: GatewayClient, baked: list[TemplateHandle]
) -> None:
    with GatewayClient(api_key=OTHER, base_url=backend.base_url) as other:
        assert FleetView(other).status().templates == []  # sees none of PRO's
        status = FleetView(other, template_ids=[baked[0].id, "tpl_nope"]).status()
    assert status.templates == [] and status.missing == [baked[0].id, "tpl_nope"]
    assert status.summary().endswith("(+2 missing)") and not status.converged
    mixed = FleetView(pro, template_ids=["tpl_gone", baked[1].id]).status()
    assert [t.id for t in mixed.templates] == [baked[1].id] and mixed.missing == ["tpl_gone"]
    assert mixed.declared == 1


def test_an_outage_is_raised_never_shown_as_an_empty_fleet(
    backend: LocalCollimateBackend, baked: list[TemplateHandle]
) -> None:
    with (
        GatewayClient(api_key="col_pro_not-a-key", base_url=backend.base_url) as bad,
        pytest.raises(GatewayError) as info,
    ):
        FleetView(bad, template_ids=[baked[0].id]).status()
    assert info.value.code == "unauthorized"


def test_warm_hit_comes_only_from_the_callers_samples(
    pro: GatewayClient, baked: list[TemplateHandle]
) -> None:
    view = FleetView(pro, template_ids=[baked[0].id])
    samples: list[dict[str, Any]] = [{"warm_hit": True}, {"warm_hit": True}, {"warm_hit": False}]
    assert view.status(samples=samples).warm_hit == pytest.approx(2 / 3)
    assert view.status(samples=[{"error": "no create"}]).warm_hit is None
    assert view.status().warm_hit is None


def test_an_empty_or_unsized_fleet_is_never_converged(pro: GatewayClient) -> None:
    status = FleetView(pro, template_ids=[]).status()
    assert status.templates == [] and not status.converged
    assert status.summary() == "0 spares (0 warm / 0 frozen) of 0 declared — converging — " + (
        "0 node(s), 0 template(s)"
    )


def test_watch_until_converged_and_as_a_dashboard(
    pro: GatewayClient, baked: list[TemplateHandle]
) -> None:
    seen: list[FleetStatus] = []
    done = FleetView(pro).watch(on_update=seen.append, until_converged=True, timeout=60)
    assert done.converged and seen[-1] is done
    # a dashboard loop returns its last status at the timeout, converged or not
    empty = FleetView(pro, template_ids=[])
    assert empty.watch(timeout=0, on_update=seen.append).templates == []
    with pytest.raises(TimeoutError, match="did not converge"):
        empty.watch(until_converged=True, timeout=0)


class _Rows:
    """A reader listing a public catalog row beside the tenant's own (what
    the managed gateway lists; the local backend lists only the tenant's)."""

    def list_templates(self) -> list[dict[str, Any]]:
        return [
            {"id": "tpl_own", "visibility": "private"},
            {"id": "tpl_cat", "visibility": "public"},
            {"name": "no id"},
            {"id": "tpl_old"},  # a row with no visibility is the tenant's
        ]

    def get_template(self, template_id: str) -> dict[str, Any]:
        raise AssertionError("not polled in this test")


def test_public_rows_are_left_out_unless_asked_for(
    pro: GatewayClient, baked: list[TemplateHandle]
) -> None:
    assert FleetView(_Rows()).template_ids() == ["tpl_own", "tpl_old"]
    assert FleetView(_Rows(), include_public=True).template_ids() == [
        "tpl_own",
        "tpl_cat",
        "tpl_old",
    ]
    # the local backend marks a bake as the tenant's own
    assert {row["visibility"] for row in pro.list_templates()} == {"private"}


#: 0.8.0's ``collimate_rl.__all__``, as released.
ALL_080 = {
    "connect", "SessionClient", "CollimateClient", "CollimateError",
    "CollimateDrainingError", "GatewayClient", "GatewayError", "DemoTierLimit",
    "Ready", "Template", "TemplateHandle", "TemplateStatus", "TemplateBakeFailed",
    "Session", "Env", "ForkGroup", "open_session", "Fleet", "RolloutHandle",
    "FleetView", "FleetStatus", "NodePool", "Sandbox", "ExecResult",
    "CollimateTaskError", "rollout_once", "connect_browser", "PortForward",
    "open_port_forward", "RewardSpec", "PropertyReward", "UnitTestReward",
    "GradeResult", "grade", "grade_batch", "reward_spec_from_ground_truth",
    "extract_code", "fresh_seed", "group_seeds", "seed_from_key", "is_valid_seed",
    "DET_SEED",
}  # fmt: skip


def test_every_name_of_080_is_exported() -> None:
    assert ALL_080 - set(collimate_rl.__all__) == set()
    for name in ALL_080:
        assert getattr(collimate_rl, name) is not None, name
    from collimate_rl.fleet import Fleet, RolloutHandle
    from collimate_rl.fleetview import FleetStatus as Status
    from collimate_rl.fleetview import FleetView as View
    from collimate_rl.fleetview import NodePool as Row
    from collimate_rl.template import open_session

    # the 0.8.0 module paths name the same objects
    assert (View, Status, Row) == (FleetView, FleetStatus, NodePool)
    assert (Fleet, RolloutHandle, open_session) == (
        collimate_rl.Fleet,
        collimate_rl.RolloutHandle,
        collimate_rl.open_session,
    )


def test_open_session_opens_a_session_on_a_handle(
    pro: GatewayClient, baked: list[TemplateHandle]
) -> None:
    with collimate_rl.open_session(pro, baked[0], label="fleet") as sess:
        assert sess.exec("print(6 * 7)").stdout == "42\n"
    with pytest.raises(NotImplementedError, match="secret_refs"):
        collimate_rl.open_session(pro, baked[0].id, secret_refs=["db-password"])
