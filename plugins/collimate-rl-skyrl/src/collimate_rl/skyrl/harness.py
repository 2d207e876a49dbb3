"""Drive envs the way SkyRL's generator does, without SkyRL's trainer.

For a training step, SkyRL's generator turns every dataset row into
``n_samples`` rollouts: each gets a deep copy of the row minus its prompt
(and ``env_class``) as ``extras``, with ``extras["max_turns"]`` set to the
generator's ``max_turns``; it makes the env with
``skyrl_gym.make(env_class, env_config=..., extras=...)`` and runs
``init``, then ``step`` until ``done``, then ``close``, each call in a
thread pool (``max_env_workers``, default 32), while the LLM calls of all
rollouts are in flight together. :func:`run_step` does the same with a
``respond`` function standing in for the model, so a dataset (or this
adapter) can be checked, and timed, as a training step would use it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Rollout", "run_step"]

#: ``respond(row_index, sample_index, turn, chat_history) -> completion``.
Respond = Callable[[int, int, int, list[dict[str, str]]], str]


@dataclass
class Rollout:
    """One finished episode: what SkyRL's generator keeps of it."""

    row: int
    sample: int
    rewards: list[float] = field(default_factory=list)  #: one per turn
    metadata: list[dict[str, Any]] = field(default_factory=list)  #: one per turn
    observations: list[list[dict[str, str]]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def reward(self) -> float:
        """The episode's reward as SkyRL sums it from per-turn rewards."""
        return sum(self.rewards)


def _one(
    env_class: str,
    env_config: Any,
    prompt: list[dict[str, str]],
    extras: dict[str, Any],
    respond: Respond,
    row: int,
    sample: int,
) -> Rollout:
    import skyrl_gym

    env = skyrl_gym.make(env_class, env_config=env_config, extras=extras)
    out = Rollout(row, sample)
    try:
        history, _ = env.init(copy.deepcopy(prompt))
        done, turn = False, 0
        while not done:
            turn += 1
            completion = respond(row, sample, turn, history)
            step = env.step(completion)
            out.rewards.append(float(step["reward"]))
            out.metadata.append(step["metadata"])
            out.observations.append(step["observations"])
            history = [
                *history,
                {"role": "assistant", "content": completion},
                *step["observations"],
            ]
            done = step["done"]
        out.metrics = env.get_metrics()
    finally:
        env.close()
    return out


def run_step(
    rows: Sequence[Mapping[str, Any]],
    respond: Respond,
    *,
    n_samples: int = 8,
    env_config: Any = None,
    max_turns: int = 1,
    max_env_workers: int = 32,
    default_env_class: str = "collimate_code",
    prompt_key: str = "prompt",
) -> list[Rollout]:
    """Every rollout of one step, in generator order (row-major, then sample).

    ``max_env_workers=1`` runs them one after another (SkyRL with a single
    env worker); each rollout runs whole in its worker thread (SkyRL
    interleaves the calls of many rollouts on its event loop instead, which
    meets the env with the same concurrency).
    """
    jobs = []
    for r, row in enumerate(rows):
        prompt = row[prompt_key]
        env_class = row.get("env_class") or default_env_class
        base = {k: v for k, v in row.items() if k not in (prompt_key, "env_class")}
        for s in range(n_samples):
            extras = copy.deepcopy(base)
            extras["max_turns"] = max_turns
            jobs.append((env_class, env_config, prompt, extras, respond, r, s))
    with ThreadPoolExecutor(
        max_workers=max_env_workers, thread_name_prefix="skyrl-gym-env-"
    ) as pool:
        futures = [pool.submit(_one, *job) for job in jobs]
        return [f.result() for f in futures]
