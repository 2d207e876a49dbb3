"""The reward hooks against a real local backend (TCP and unix socket):
rewards, seeds, dicts for ``--reward-key``, one client per loop and
target, and nothing that blocks the loop or starts a thread."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
from types import SimpleNamespace
from typing import Any

import pytest

import collimate_rl
from collimate_rl import get_plugin_manager, hookimpl
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.slime import (
    aclose_clients,
    group_reward_func,
    resolve_config,
    reward_func,
)
from collimate_rl.slime.clients import open_clients

pytestmark = pytest.mark.timeout(240)


def _url(backend: LocalCollimateBackend, transport: str) -> str:
    return backend.base_url if transport == "tcp" else f"unix:{backend.socket_path}"


def _expected(samples: list[Any]) -> list[float]:
    return [s.metadata["expected"] for s in samples]


def test_per_sample_list_and_group_calls(
    slime: SimpleNamespace, backend: LocalCollimateBackend, transport: str, groups: Any
) -> None:
    args = slime.args(collimate_base_url=_url(backend, transport))
    two = groups(4, 3)  # every dataset shape, right / half / wrong

    async def main() -> tuple[list[Any], list[Any], list[Any]]:
        singles = [await reward_func(args, s) for s in two[0]]
        listed = await reward_func(args, two[1] + two[2])
        grouped = await group_reward_func(args, two[3])
        return singles, listed, grouped

    singles, listed, grouped = asyncio.run(main())
    assert singles == _expected(two[0])
    assert listed == _expected(two[1] + two[2])
    assert grouped == _expected(two[3])
    assert all(type(r) is float for r in singles + listed + grouped)


def test_reward_dicts_for_reward_key(
    slime: SimpleNamespace, backend: LocalCollimateBackend, groups: Any
) -> None:
    args = slime.args(collimate_base_url=backend.base_url, reward_key="score")
    group_a, group_b = groups(2, 3)

    async def main() -> tuple[list[Any], list[Any]]:
        return (
            list(await asyncio.gather(*(reward_func(args, s) for s in group_a))),
            await group_reward_func(args, group_b),
        )

    per_sample, per_group = asyncio.run(main())
    assert [r["score"] for r in per_sample] == _expected(group_a)
    assert [r["verdict"] for r in per_sample] == ["passed", "failed", "failed"]
    assert [(r["passed"], r["total"]) for r in per_sample] == [(2, 2), (1, 2), (0, 2)]
    # One CRN seed per group, echoed back, and another for the other group.
    seeds_a = {r["seed"] for r in per_sample}
    seeds_b = {r["seed"] for r in per_group}
    assert len(seeds_a) == len(seeds_b) == 1 and seeds_a != seeds_b
    assert [slime.Sample(reward=r).get_reward_value(args) for r in per_group] == _expected(group_b)


def test_vanilla_seeds_are_drawn_per_sample(
    slime: SimpleNamespace, backend: LocalCollimateBackend, groups: Any
) -> None:
    args = slime.args(
        collimate_base_url=backend.base_url, reward_key="score", collimate_seed_mode="vanilla"
    )
    (group,) = groups(1, 4)
    results = asyncio.run(group_reward_func(args, group))
    assert len({r["seed"] for r in results}) == 4


class _Packs:
    """Counts graded candidates by the size of the exec that graded them."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    @hookimpl
    def collimate_rl_after_grade(self, result: Any, candidate: str, index: int) -> None:
        self.sizes.append(int((result.raw.get("pack") or {}).get("size", 1)))


def test_64_gathered_per_sample_calls_share_one_client_and_are_packed(
    slime: SimpleNamespace,
    backend: LocalCollimateBackend,
    transport: str,
    groups: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """slime's dispatch: every sample's reward awaited on one loop. Once the
    process has built its grader programs (one worker thread, once per
    reward kind), a batch starts no thread, uses no executor and calls no
    blocking grade; core coalesces the concurrent calls into packs."""
    args = slime.args(collimate_base_url=_url(backend, transport))
    samples = [s for g in groups(8, 8) for s in g]

    async def warm_up() -> None:
        await asyncio.gather(*(reward_func(args, s) for s in samples))

    asyncio.run(warm_up())
    threads = set(threading.enumerate())

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("the reward hook blocked or left the event loop")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    monkeypatch.setattr(asyncio.BaseEventLoop, "run_in_executor", refuse)
    monkeypatch.setattr(collimate_rl, "grade", refuse)
    monkeypatch.setattr(collimate_rl, "grade_batch", refuse)
    packs = _Packs()
    get_plugin_manager().register(packs)
    seen: dict[str, Any] = {}

    async def main() -> list[Any]:
        rewards = await asyncio.gather(*(reward_func(args, s) for s in samples))
        again = await reward_func(args, samples[0])
        seen["clients"] = open_clients()
        seen["loop"] = asyncio.get_running_loop()
        return [*rewards, again]

    try:
        rewards = asyncio.run(main())
    finally:
        get_plugin_manager().unregister(packs)
    assert rewards == [*_expected(samples), samples[0].metadata["expected"]]
    # no thread of its own (one of another test's may have ended meanwhile)
    assert set(threading.enumerate()) <= threads
    target = resolve_config(args).target
    assert list(seen["clients"]) == [target]  # one client for the loop and target
    assert max(packs.sizes) > 1 and len(packs.sizes) == 65
    # asyncio.run finalised the loop's async generators: the client is closed.
    assert open_clients(seen["loop"]) == {}


def test_concurrency_bounds_the_grades_in_flight(
    slime: SimpleNamespace, backend: LocalCollimateBackend, groups: Any
) -> None:
    samples = [s for g in groups(4, 4) for s in g]
    sizes: dict[str, list[int]] = {}
    for limit in (None, 3):
        args = slime.args(collimate_base_url=backend.base_url, collimate_concurrency=limit)
        packs = _Packs()
        get_plugin_manager().register(packs)
        try:
            rewards = asyncio.run(group_reward_func(args, samples))
        finally:
            get_plugin_manager().unregister(packs)
        assert rewards == _expected(samples)
        sizes[str(limit)] = packs.sizes
    assert max(sizes["None"]) > 3 and max(sizes["3"]) <= 3


def test_one_client_per_loop_and_target(
    slime: SimpleNamespace, backend: LocalCollimateBackend, groups: Any
) -> None:
    (group,) = groups(1, 2)
    tcp = slime.args(collimate_base_url=backend.base_url)
    unix = slime.args(collimate_base_url=f"unix:{backend.socket_path}")
    found: list[dict[Any, Any]] = []

    async def main() -> None:
        for _ in range(2):
            await reward_func(tcp, group[0])
            await group_reward_func(unix, group)
        found.append(open_clients())
        await aclose_clients()
        found.append(open_clients())
        await reward_func(tcp, group[1])  # a closed client is replaced
        found.append(open_clients())

    asyncio.run(main())
    first, closed, reopened = found
    assert len(first) == 2 and closed == {} and len(reopened) == 1
    assert next(iter(reopened.values())) is not first[resolve_config(tcp).target]
    # Another loop gets clients of its own.
    other: list[dict[Any, Any]] = []

    async def again() -> None:
        await reward_func(tcp, group[0])
        other.append(open_clients())

    asyncio.run(again())
    assert next(iter(other[0].values())) is not next(iter(reopened.values()))


def test_bad_input_raises_before_any_grade(slime: SimpleNamespace, groups: Any) -> None:
    # No backend at that address: each error must come before any request.
    args = slime.args(collimate_base_url="http://127.0.0.1:9")
    (group,) = groups(1, 3)
    group[1].label = None
    with pytest.raises(ValueError, match=r"sample \(group_index=0, index=1\)|has no label"):
        asyncio.run(group_reward_func(args, group))
    with pytest.raises(TypeError, match="group_reward_func takes the list"):
        asyncio.run(group_reward_func(args, group[0]))
    with pytest.raises(TypeError, match="nested list"):
        asyncio.run(group_reward_func(args, [group]))
    with pytest.raises(ValueError, match="collimate_seed_mode"):
        asyncio.run(reward_func(slime.args(collimate_seed_mode="x"), group[0]))
    assert asyncio.run(reward_func(args, [])) == []


_LIFECYCLE = textwrap.dedent(
    """
    import asyncio, atexit, gc, sys, threading, warnings
    from argparse import Namespace

    warnings.simplefilter("error")          # a ResourceWarning would be an error
    sys.unraisablehook = lambda u: print("UNRAISABLE", u.exc_value, file=sys.stderr)

    loops = []

    def check():                            # runs after the plugin's own exit hook
        from collimate_rl.slime.clients import open_clients
        left = sum(len(open_clients(loop)) for loop in loops)
        print("LEFT OPEN AT EXIT", left, flush=True)

    atexit.register(check)

    from collimate_rl.slime import reward_func

    class Sample:
        label = '[{"input": [1], "output": 2}]'
        response = "def solve(x):\\n    return 2 * x\\n"
        prompt, metadata, index, group_index = "p", {}, 0, 0

    args = Namespace(collimate_base_url=sys.argv[1], reward_key=None)

    async def grade():
        loops.append(asyncio.get_running_loop())
        return await reward_func(args, Sample())

    # 1. asyncio.run, twice: a client per loop, closed when the loop ends.
    print("RUN", asyncio.run(grade()), asyncio.run(grade()), flush=True)

    # 2. slime's rollout loop: run_forever in a daemon thread, never closed.
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    print("THREAD", asyncio.run_coroutine_threadsafe(grade(), loop).result(), flush=True)
    from collimate_rl.slime.clients import open_clients
    print("OPEN BEFORE EXIT", len(open_clients(loop)), flush=True)
    gc.collect()
    """
)


@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_clients_close_with_their_loop_and_at_exit(
    backend: LocalCollimateBackend, transport: str
) -> None:
    """In a fresh interpreter (warnings as errors, asyncio debug on):
    asyncio.run closes its loop's client; slime's never-closed loop gets
    its client closed at exit; nothing complains about a closed loop."""
    env = {**os.environ, "PYTHONASYNCIODEBUG": "1", "PYTHONWARNINGS": "error"}
    proc = subprocess.run(
        [sys.executable, "-X", "dev", "-c", _LIFECYCLE, _url(backend, transport)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "RUN 1.0 1.0" in proc.stdout and "THREAD 1.0" in proc.stdout
    assert "OPEN BEFORE EXIT 1" in proc.stdout
    assert "LEFT OPEN AT EXIT 0" in proc.stdout
    for bad in ("Event loop is closed", "unclosed", "UNRAISABLE", "Traceback", "Warning"):
        assert bad not in proc.stderr, proc.stderr


def test_a_fleet_of_nodes_is_one_target(slime: SimpleNamespace, groups: Any) -> None:
    """``collimate_base_url`` may list several daemons (comma-separated): the
    rollout's grades spread over them (a ``MultiNodeClient``), each reward still
    the sample's own."""
    nodes = [LocalCollimateBackend(run_slots=1).start() for _ in range(2)]
    try:
        args = slime.args(collimate_base_url=",".join(n.base_url for n in nodes))
        batch = [s for group in groups(8, 4) for s in group]

        async def main() -> list[Any]:
            return list(await asyncio.gather(*(reward_func(args, s) for s in batch)))

        assert asyncio.run(main()) == _expected(batch)
        ran = [node.health()["execs_run"] for node in nodes]
        assert all(n > 0 for n in ran), ran
    finally:
        for node in nodes:
            node.stop()
