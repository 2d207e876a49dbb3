"""slime's custom reward hooks: ``reward_func`` and ``group_reward_func``.

slime loads a reward function by dotted path and awaits it on its rollout
event loop:

* ``--custom-rm-path collimate_rl.slime.reward_func``: once per sample as
  its generation finishes (hundreds of calls in flight on one loop), or
  with a list of samples when a custom generate function returns several;
* ``--group-rm --custom-rm-path collimate_rl.slime.group_reward_func``:
  once per prompt group, with the group's samples.

Everything runs on that loop with the async client: no thread per sample,
no blocking call. Single calls go through core's ``grade_async``, which
coalesces the calls in flight into packs, so per-sample dispatch grades
about as fast as whole groups; lists and groups go through
``grade_batch_async`` (``collimate_concurrency`` execs at most).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collimate_rl import CollimateError, grade_async, grade_batch_async

from .clients import client_for
from .config import SlimeConfig, resolve_config
from .outcome import Reward, as_reward, infra_reward, mark_infra
from .samples import code_of, seed_of, spec_of
from .warmup import warm

__all__ = ["group_reward_func", "reward_func"]


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


async def _grade_one(config: SlimeConfig, sample: Any) -> Reward:
    spec = spec_of(sample, config)
    code = code_of(sample, spec, config)
    seed = seed_of(sample, config)
    await warm((spec,))
    client = await client_for(config.target)
    try:
        result = await grade_async(
            client,
            config.template,
            code,
            spec,
            seed=seed,
            timeout_seconds=config.timeout_seconds,
        )
    except CollimateError as exc:
        if config.on_infra_error == "raise":
            raise
        mark_infra(sample, exc)
        return infra_reward(seed, config.reward_dict)
    return as_reward(result, config.reward_dict)


async def _grade_many(config: SlimeConfig, samples: Sequence[Any]) -> list[Reward]:
    for sample in samples:
        if _is_list(sample):
            raise TypeError(
                "expected a flat list of samples, got a nested list: a group whose "
                "generate function returned several samples each cannot be graded as a group "
                "(slime's --group-rm assigns one reward per group member)"
            )
    if not samples:
        return []
    specs = [spec_of(s, config) for s in samples]  # every sample checked before any exec
    codes = [code_of(s, spec, config) for s, spec in zip(samples, specs, strict=True)]
    seeds = [seed_of(s, config) for s in samples]
    await warm(specs)
    client = await client_for(config.target)
    results = await grade_batch_async(
        client,
        config.template,
        codes,
        specs,
        seeds=seeds,
        timeout_seconds=config.timeout_seconds,
        concurrency=config.concurrency,
        on_infra_error="zero" if config.on_infra_error == "remove" else "raise",
    )
    rewards: list[Reward] = []
    for sample, seed, result in zip(samples, seeds, results, strict=True):
        if result.infra_error:  # only with "remove": "raise" raised above
            mark_infra(sample, result.error or "infrastructure failure")
            rewards.append(infra_reward(seed, config.reward_dict))
        else:
            rewards.append(as_reward(result, config.reward_dict))
    return rewards


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
