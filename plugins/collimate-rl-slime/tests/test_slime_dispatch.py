"""slime's reward dispatch, reproduced, against a local backend process.

The three ways slime calls a reward function, each on one event loop with
64 samples (8 prompts x 8):

* ``per_sample``: ``--custom-rm-path collimate_rl.slime.reward_func``, one
  awaited call per sample as its generation finishes, all gathered;
* ``list``: the same hook given a list (a custom generate function that
  returns two samples per call: 8 prompts x 4 calls x 2);
* ``group_rm``: ``--group-rm --custom-rm-path
  collimate_rl.slime.group_reward_func``, once per prompt group.

Then the backend process is killed (SIGKILL, its whole process group) in
the middle of the batch: four groups are graded, two have candidates
running in the backend, two finish generating only after the kill.
``raise`` stops the rollout with the error and leaves no reward on an
ungraded sample; ``remove`` marks every ungraded sample removed and
aborted, and ``drop_infra_groups`` drops exactly the four groups that
hold one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import defaultdict
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from collimate_rl import AsyncCollimateClient, CollimateError
from collimate_rl.slime import INFRA_MARK
from collimate_rl.slime.clients import open_clients

pytestmark = pytest.mark.timeout(300)

SHAPES = ("per_sample", "list", "group_rm")
EARLY, IN_FLIGHT, LATE = (0, 1, 2, 3), (4, 5), (6, 7)


def _flat(group: list[Any]) -> list[Any]:
    return [s for item in group for s in (item if isinstance(item, list) else [item])]


class Batch:
    """64 samples in slime's hands, generated in three waves: the EARLY
    groups at once, the IN_FLIGHT ones (candidates that run for a minute)
    when ``second`` opens, the LATE ones when ``third`` opens."""

    def __init__(self, slime: SimpleNamespace, groups: Any, shape: str, **settings: Any) -> None:
        self.shape = shape
        per_call = 2 if shape == "list" else 1
        self.groups = groups(8, 8 // per_call, slow=set(IN_FLIGHT))
        self.args = slime.args(
            custom_rm_path=(
                "collimate_rl.slime.group_reward_func"
                if shape == "group_rm"
                else "collimate_rl.slime.reward_func"
            ),
            group_rm=shape == "group_rm",
            dynamic_sampling_filter_path="collimate_rl.slime.drop_infra_groups",
            collimate_timeout_seconds=120,
            **settings,
        )
        self.slime = slime
        self.made: dict[int, list[Any]] = defaultdict(list)
        self.second = asyncio.Event()
        self.third = asyncio.Event()

    async def generate(self, args: Any, sample: Any) -> Any:
        g = sample.group_index
        if g in IN_FLIGHT:
            await self.second.wait()
        elif g in LATE:
            await self.third.wait()
        sample.status = self.slime.Sample.Status.COMPLETED
        produced = [sample]
        if self.shape == "list":
            twin = dataclasses.replace(
                sample, index=sample.index + 1000, metadata=dict(sample.metadata)
            )
            produced.append(twin)
        self.made[g].extend(produced)
        return produced if self.shape == "list" else sample

    def samples(self, groups: tuple[int, ...]) -> list[Any]:
        return [s for g in groups for s in self.made[g]]

    def graded(self, groups: tuple[int, ...]) -> bool:
        found = self.samples(groups)
        return len(found) == 8 * len(groups) and all(s.reward is not None for s in found)

    async def rollout(self) -> Any:
        return await self.slime.rollout(self.args, self.groups, self.generate)


async def _until(check: Any, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check() if asyncio.iscoroutinefunction(check) else not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def _reward(value: Any) -> float:
    return float(value["score"] if isinstance(value, dict) else value)


@pytest.mark.parametrize("shape", SHAPES)
def test_64_samples_on_one_loop(
    slime: SimpleNamespace,
    groups: Any,
    backend_process: Any,
    transport: str,
    shape: str,
    slime_filter_types: ModuleType,
) -> None:
    url = backend_process.base_url if transport == "tcp" else f"unix:{backend_process.socket_path}"
    batch = Batch(slime, groups, shape, collimate_base_url=url)
    batch.groups = groups(8, 4 if shape == "list" else 8)  # no slow candidates
    clients: list[Any] = []

    async def main() -> Any:
        batch.second.set()
        batch.third.set()
        done = await batch.rollout()
        clients.append(open_clients())
        return done

    done = asyncio.run(main())
    assert len(done.kept) == 8 and done.dropped == []
    samples = [s for group in done.kept for s in _flat(group)]
    assert len(samples) == 64
    assert [s.reward for s in samples] == [s.metadata["expected"] for s in samples]
    assert not any(s.remove_sample for s in samples)
    assert len(clients[0]) == 1  # one client served the whole batch


async def _kill_mid_batch(batch: Batch, backend_process: Any) -> tuple[Any, BaseException | None]:
    """Runs the rollout; kills the backend once the EARLY groups are graded
    and the IN_FLIGHT ones are running in it; then lets the LATE ones go."""
    rollout = asyncio.create_task(batch.rollout())
    probe = AsyncCollimateClient(backend_process.base_url, retries=0)
    try:
        await _until(lambda: batch.graded(EARLY) or rollout.done(), "the early groups")
        batch.second.set()

        async def running() -> bool:
            return rollout.done() or (await probe.health())["running"] >= 1

        await _until(running, "the in-flight candidates to run")
        assert len(batch.samples(IN_FLIGHT)) == 16
        await asyncio.to_thread(backend_process.kill)
        batch.third.set()
        try:
            return await rollout, None
        except CollimateError as exc:
            return None, exc
    finally:
        rollout.cancel()
        await asyncio.gather(rollout, return_exceptions=True)
        await probe.aclose()


@pytest.mark.parametrize("shape", SHAPES)
def test_backend_killed_mid_batch_raise(
    slime: SimpleNamespace, groups: Any, backend_process: Any, transport: str, shape: str
) -> None:
    url = backend_process.base_url if transport == "tcp" else f"unix:{backend_process.socket_path}"
    batch = Batch(slime, groups, shape, collimate_base_url=url)
    done, error = asyncio.run(_kill_mid_batch(batch, backend_process))
    assert done is None and isinstance(error, CollimateError)  # the rollout stops
    early = batch.samples(EARLY)
    assert [s.reward for s in early] == [s.metadata["expected"] for s in early]
    for s in batch.samples(IN_FLIGHT + LATE):
        assert s.reward is None  # never a silent 0.0
    everything = batch.samples(EARLY + IN_FLIGHT + LATE)
    assert not any(s.remove_sample or INFRA_MARK in s.metadata for s in everything)


@pytest.mark.parametrize("shape", SHAPES)
def test_backend_killed_mid_batch_remove_and_filter(
    slime: SimpleNamespace,
    groups: Any,
    backend_process: Any,
    transport: str,
    shape: str,
    slime_filter_types: ModuleType,
) -> None:
    url = backend_process.base_url if transport == "tcp" else f"unix:{backend_process.socket_path}"
    batch = Batch(slime, groups, shape, collimate_base_url=url, collimate_on_infra_error="remove")
    done, error = asyncio.run(_kill_mid_batch(batch, backend_process))
    assert error is None
    kept = {_flat(g)[0].group_index for g in done.kept}
    dropped = {_flat(g)[0].group_index for g in done.dropped}
    assert kept == set(EARLY) and dropped == set(IN_FLIGHT + LATE)
    assert done.drop_reasons == {"collimate_infra_error": 4}
    for group in done.kept:
        for s in _flat(group):
            assert s.reward == s.metadata["expected"] and not s.remove_sample
            assert s.status is slime.Sample.Status.COMPLETED
    for group in done.dropped:
        samples = _flat(group)
        assert len(samples) == 8
        for s in samples:
            assert s.remove_sample is True
            assert s.status is slime.Sample.Status.ABORTED
            assert "CollimateError" in s.metadata[INFRA_MARK]
            assert _reward(s.reward) == 0.0  # the placeholder slime needs a number for
