"""The pool's home node (``MultiNodeClient(prefer=i)``, the caller's own
node on a cluster): taken while it has a free run slot, else the least
loaded; never while it is out; kept across a pickle."""

from __future__ import annotations

import pickle

import pytest

from collimate_rl import CollimateDrainingError, MultiNodeClient
from collimate_rl.nodes.router import Router


def test_home_is_taken_while_it_has_a_free_slot() -> None:
    router = Router.of(["a", "b", "c"], home=2)
    router.nodes[2].slots = 2
    first, second, third = router.pick(set()), router.pick(set()), router.pick(set())
    assert [first.index, second.index] == [2, 2]  # both its slots
    assert third is not None and third.index in (0, 1)  # full: spilled by load
    router.done(first)
    assert router.pick(set()).index == 2  # a slot free again


def test_home_out_or_tried_is_passed_over() -> None:
    router = Router.of(["a", "b"], home=0)
    node = router.pick(set())
    assert node.index == 0
    router.done(node, CollimateDrainingError("draining", 503, "draining"))
    assert router.pick(set()).index == 1
    assert router.pick({1}).index == 0  # every other tried: the one back soonest


def test_without_home_the_least_loaded_wins() -> None:
    router = Router.of(["a", "b"])
    first, second = router.pick(set()), router.pick(set())
    assert {first.index, second.index} == {0, 1}


def test_home_must_be_a_node_and_travels_by_pickle() -> None:
    with pytest.raises(ValueError, match="home node 3"):
        Router.of(["a"], home=3)
    pool = MultiNodeClient(["http://127.0.0.1:1", "http://127.0.0.1:2"], prefer=1)
    copy = pickle.loads(pickle.dumps(pool))
    assert copy._router.home == 1


def test_nodes_join_a_pool_and_serve() -> None:
    from collimate_rl.local_backend import LocalCollimateBackend
    from collimate_rl.local_backend.cluster_secret import SECRET_HEADER

    # a pool made with a node that is gone (nothing listens on port 1)
    pool = MultiNodeClient(["http://127.0.0.1:1"], headers={SECRET_HEADER: "s"}, retries=0)
    backend = LocalCollimateBackend(run_slots=1)
    backend.config.cluster_secret = "s"
    with backend, pool:
        url = backend.base_url
        assert pool.add_nodes([url, "http://127.0.0.1:1"]) == [url]
        assert pool.add_nodes([url]) == []  # already in
        assert [n["endpoint"] for n in pool.nodes()] == ["http://127.0.0.1:1", url]
        # the joined node's client carries the pool's headers (the secret):
        # the refused gone node sends the exec there
        for _ in range(3):
            assert pool.exec_once("py", code="print(3)")["stdout"] == "3\n"
        copy = pickle.loads(pickle.dumps(pool))
        assert copy.add_nodes(["http://127.0.0.1:2"]) == ["http://127.0.0.1:2"]
