"""``CollimateReward``: a reward function for TRL's ``GRPOTrainer``.

TRL calls each reward function once per batch with keyword lists:
``prompts``, ``completions``, ``completion_ids`` and every other column of
the dataset (one entry per completion; each prompt's row repeated for its
``num_generations`` completions), plus ``trainer_state``, ``log_extra`` and
``log_metric``. It names the function's logs by ``__name__``. When calling
the object returns a coroutine, TRL runs it on its own event loop, gathered
with the other async reward functions. It expects one float per completion,
or ``None``: "no reward for this one". TRL then leaves that completion out
of its group's baseline rather than learning from it.

So the object is async and answers ``None`` for a completion the
infrastructure failed to grade, never a made-up 0.0. A row whose ground
truth no reward kind accepts is a data error and raises, naming the row.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final, Literal

from collimate_rl import (
    RewardSpec,
    extract_code,
    grade_batch_async,
    reward_spec_from_ground_truth,
)
from collimate_rl.seeds import DET_SEED, seed_from_key

from .clients import loop_client
from .completions import completion_text

__all__ = ["CollimateReward"]

SeedMode = Literal["crn", "vanilla", "deterministic"]

#: Keywords TRL adds that are not dataset columns.
TRL_KEYWORDS: Final = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


class CollimateReward:
    """Grades each completion's code against its row's ground truth.

    ``column`` names the dataset column holding the ground truth (any shape
    a registered reward kind accepts: MBPP/HumanEval asserts, APPS
    ``input_output``, LiveCodeBench tests, ...). The target is ``client`` (an
    async client), else ``base_url`` / ``unix_socket`` / ``api_key``, else
    what :func:`collimate_rl.connect_async` finds in the environment.

    Seeds (``seed_mode``): ``"crn"`` (default) gives every completion of a
    prompt the same seed, derived from the prompt, so randomised tests are
    the same across the group and across processes; ``"vanilla"`` a fresh
    one each; ``"deterministic"`` one fixed seed.
    """

    def __init__(
        self,
        column: str = "ground_truth",
        *,
        name: str = "collimate",
        client: Any = None,
        base_url: str | None = None,
        unix_socket: str | None = None,
        api_key: str | None = None,
        template: str = "dkr-python311",
        timeout_seconds: int = 30,
        entry: str = "solve",
        entry_column: str | None = None,
        seed_mode: SeedMode = "crn",
        concurrency: int = 24,
    ) -> None:
        if not isinstance(column, str) or not column:
            raise ValueError(f"column must name a dataset column; got {column!r}")
        if seed_mode not in ("crn", "vanilla", "deterministic"):
            raise ValueError(f"seed_mode must be crn, vanilla or deterministic; got {seed_mode!r}")
        if isinstance(timeout_seconds, bool) or not timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be positive; got {timeout_seconds!r}")
        self.__name__ = name
        self.column = column
        self.client = client
        self.target = (base_url, unix_socket, api_key)
        self.template = template
        self.timeout_seconds = timeout_seconds
        self.entry = entry
        self.entry_column = entry_column
        self.seed_mode: SeedMode = seed_mode
        self.concurrency = concurrency

    def __repr__(self) -> str:
        return f"CollimateReward(column={self.column!r}, name={self.__name__!r})"

    def _column(self, kwargs: dict[str, Any], name: str, n: int) -> list[Any]:
        if name not in kwargs:
            columns = sorted(k for k in kwargs if k not in TRL_KEYWORDS)
            raise KeyError(
                f"{self.__name__}: the dataset has no column {name!r} "
                f"(columns passed by TRL: {', '.join(columns) or 'none'})"
            )
        values = list(kwargs[name])
        if len(values) != n:
            raise ValueError(
                f"{self.__name__}: column {name!r} has {len(values)} entries for {n} completions"
            )
        return values

    def _seeds(self, prompts: Sequence[Any], n: int) -> list[str | None]:
        if self.seed_mode == "vanilla":
            return [None] * n
        if self.seed_mode == "deterministic":
            return [DET_SEED] * n
        if len(prompts) != n:
            raise ValueError(f"{self.__name__}: {len(prompts)} prompts for {n} completions")
        return [seed_from_key(_key(p)) for p in prompts]

    def _specs(self, truths: list[Any], entries: list[str]) -> list[RewardSpec]:
        made: dict[tuple[str, str], RewardSpec] = {}
        specs = []
        for i, (truth, entry) in enumerate(zip(truths, entries, strict=True)):
            key = (_key(truth), entry)
            spec = made.get(key)
            if spec is None:
                try:
                    spec = made[key] = reward_spec_from_ground_truth(truth, entry)
                except ValueError as exc:
                    raise ValueError(
                        f"{self.__name__}: row {i}, column {self.column!r}: {exc}"
                    ) from None
            specs.append(spec)
        return specs

    async def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        n = len(completions)
        truths = self._column(kwargs, self.column, n)
        entries = (
            [str(e) for e in self._column(kwargs, self.entry_column, n)]
            if self.entry_column
            else [self.entry] * n
        )
        codes = [extract_code(completion_text(c, i), entries[i]) for i, c in enumerate(completions)]
        specs = self._specs(truths, entries)
        seeds = self._seeds(prompts, n)
        client = self.client if self.client is not None else loop_client(self.target)
        results = await grade_batch_async(
            client,
            self.template,
            codes,
            specs,
            seeds=seeds,
            timeout_seconds=self.timeout_seconds,
            concurrency=self.concurrency,
            on_infra_error="zero",
        )
        rewards: list[float | None] = [None if r.infra_error else r.reward for r in results]
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and n:
            failed = sum(r is None for r in rewards)
            log_metric(f"{self.__name__}/infra_error_fraction", failed / n)
        return rewards
