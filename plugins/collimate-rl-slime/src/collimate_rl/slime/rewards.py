"""slime's custom reward hooks: ``reward_func`` and ``group_reward_func``.

slime loads a reward function by dotted path and awaits it on its rollout
event loop:

* ``--custom-rm-path collimate_rl.slime.reward_func``: once per sample as
  its generation finishes (hundreds of calls in flight on one loop), or
  with a list of samples when a custom generate function returns several;
* ``--group-rm --custom-rm-path collimate_rl.slime.group_reward_func``:
  once per prompt group, with the group's samples.

Everything runs on that loop with the async client: no thread per sample,
no blocking call. Every sample, alone or in a list or group, is one
``grade_async`` call; core coalesces the calls in flight on the loop
(across groups too) into packs, so slime's per-sample dispatch grades as
fast as whole groups would. ``collimate_concurrency``, when set, bounds the
grades this loop has in flight to one target.

Why each reward is what it is goes to the ``collimate_rl.slime`` logger: at
DEBUG, one line per sample (its dataset row, slime's sample index, and
``GradeResult.explain()``: the verdict, the tests passed, the first failing
test); an infrastructure failure at WARNING. The dict result
(``collimate_reward_dict``) carries the same line as ``reason``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from collimate_rl import CollimateError, grade_async

from .clients import client_for, slots_for
from .config import SlimeConfig, resolve_config
from .outcome import Reward, as_reward, infra_reward, mark_infra
from .samples import code_of, describe, row_label, seed_of, task_of

__all__ = ["group_reward_func", "reward_func"]

logger = logging.getLogger("collimate_rl.slime")


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


async def _grade_one(config: SlimeConfig, sample: Any) -> Reward:
    task = task_of(sample, config)
    code = code_of(sample, task.spec, config)
    seed = seed_of(sample, config)
    client = await client_for(config.target)
    try:
        async with slots_for(config.target, config.concurrency):
            result = await grade_async(
                client,
                config.template,
                code,
                task.spec,
                seed=seed,
                timeout_seconds=config.timeout_seconds,
            )
    except CollimateError as exc:
        where = describe(sample)
        logger.warning("%s: infra_error: %s: %s", where, type(exc).__name__, exc)
        if config.on_infra_error == "raise":
            if row_label(sample) is not None and hasattr(exc, "add_note"):  # Python 3.11+
                exc.add_note(f"collimate_rl.slime: grading {where}")
            raise
        mark_infra(sample, exc)
        return infra_reward(seed, config.reward_dict, f"{type(exc).__name__}: {exc}")
    reason = result.explain()
    logger.debug("%s: %s", describe(sample), reason)
    return as_reward(result, config.reward_dict, reason)


async def _grade_many(config: SlimeConfig, samples: Sequence[Any]) -> list[Reward]:
    """Each sample graded as a single call, all at once: they join every
    other call in flight on this loop (other groups too) in core's packs.
    The first error cancels the others' grades and is raised."""
    for sample in samples:
        if _is_list(sample):
            raise TypeError(
                "expected a flat list of samples, got a nested list: a group whose "
                "generate function returned several samples each cannot be graded as a group "
                "(slime's --group-rm assigns one reward per group member)"
            )
    for sample in samples:  # every sample checked before any grade
        code_of(sample, task_of(sample, config).spec, config)
        seed_of(sample, config)
    tasks = [asyncio.ensure_future(_grade_one(config, sample)) for sample in samples]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()  # (no effect on a finished one)
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return [task.result() for task in tasks]


async def reward_func(args: Any, sample: Any, **kwargs: Any) -> Reward | list[Reward]:
    """The reward of one slime ``Sample``: a float, or with
    ``collimate_reward_dict`` a dict for ``--reward-key``. Given a list of
    samples, the list of their rewards, in order.

    An infrastructure failure raises :class:`~collimate_rl.CollimateError`
    (``collimate_on_infra_error=raise``, the default) or marks the sample
    removed (``remove``; see :mod:`collimate_rl.slime.outcome`). A sample
    without a usable label raises ``ValueError`` naming it. Extra keyword
    arguments from slime are accepted and ignored."""
    config = resolve_config(args)
    if _is_list(sample):
        return await _grade_many(config, list(sample))
    if sample is None:
        raise TypeError("reward_func needs a slime Sample (or a list of them), got None")
    return await _grade_one(config, sample)


async def group_reward_func(args: Any, samples: Any, **kwargs: Any) -> list[Reward]:
    """The rewards of one prompt group (slime's ``--group-rm``), in order."""
    if not _is_list(samples):
        raise TypeError(
            "group_reward_func takes the list of a group's samples (slime's --group-rm); "
            f"got {type(samples).__name__}: for one sample use collimate_rl.slime.reward_func"
        )
    return await _grade_many(resolve_config(args), list(samples))
