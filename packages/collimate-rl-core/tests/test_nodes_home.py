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
