"""``CollimateCodeEnv``: a SkyRL text env whose reward is a sandboxed grade.

SkyRL's generator builds one env per rollout, in a Ray worker:
``skyrl_gym.make("collimate_code", env_config=..., extras=row_minus_prompt)``,
then calls ``init`` / ``step`` / ``close`` from a thread pool (up to 32
threads). So the env is light: it reads its settings and its task when it
is made (a bad row fails there, naming the field), grades with the
process's shared client of its target (:mod:`.clients`), and leaves
batching to core, which packs the concurrent grades of all threads.

A step extracts the code from the completion (core's ``extract_code``:
the last fenced block defining the entry function, reasoning in
``<think>`` ignored), grades it against the row's ground truth, and
returns SkyRL's step output. With ``max_turns > 1``, a failed attempt gets
the grader's feedback as a user message and another turn; its own reward
is returned as 0.0 (kept in ``metadata["turn_reward"]``), so the episode's
reward is the last graded turn's. An infrastructure failure is never a
task failure: it raises (``on_infra_error: raise``, the default) or ends
the episode with 0.0 and ``verdict: infra_error`` (``zero``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from collimate_rl import CollimateError, GradeResult, extract_code, grade

from .clients import shared_client
from .feedback import feedback_text
from .metrics import EpisodeStats, aggregate
from .rows import read_task
from .settings import EnvSettings, resolve_settings

__all__ = ["CollimateCodeEnv"]


def _max_turns(settings: EnvSettings, extras: Mapping[str, Any]) -> int:
    if settings.max_turns is not None:
        return settings.max_turns
    value = extras.get("max_turns", 1)  # the generator's generator.max_turns
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"extras max_turns must be a positive integer, got {value!r}")
    return value


class CollimateCodeEnv(BaseTextEnv):  # type: ignore[misc]
    """Grades the code of each completion in a Collimate sandbox (see the module doc).

    ``env_config`` and ``extras["collimate"]`` may set ``base_url`` /
    ``socket`` / ``api_key``, ``template_id``, ``timeout_seconds``,
    ``seed_mode``, ``base_seed``, ``reuse_session``, ``on_infra_error`` and
    ``max_turns`` (:mod:`.settings`); ``extras`` is the dataset row
    (:mod:`.rows`).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        extras = {} if extras is None else extras
        if not isinstance(extras, Mapping):
            raise ValueError(
                f"extras must be a mapping (the dataset row), got {type(extras).__name__}"
            )
        self.settings = resolve_settings(env_config, extras)
        self.task = read_task(self.settings, extras)
        self.max_turns = _max_turns(self.settings, extras)
        self.stats = EpisodeStats()
        self._session_id: str | None = None

    # -- SkyRL's interface -------------------------------------------------

    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        """The prompt unchanged; the metadata says which seed the episode grades with."""
        return prompt, {"seed": self.task.seed, "crn_group": self.task.group}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        code = extract_code(action if isinstance(action, str) else str(action), self.task.entry)
        started = time.perf_counter()
        try:
            result = self._grade(code)
        except CollimateError as exc:
            self.stats.grade_ms += (time.perf_counter() - started) * 1000.0
            if self.settings.on_infra_error == "raise":
                raise
            return self._infra_step(code, exc)
        self.stats.grade_ms += (time.perf_counter() - started) * 1000.0
        self.stats.turns = self.turns
        self.stats.packed += "pack" in result.raw
        done = result.passed or self.turns >= self.max_turns
        self.stats.reward, self.stats.passed = result.reward, result.passed
        metadata = self._metadata(code, result)
        observations: ConversationType = []
        if not done:
            text = feedback_text(result, self.turns, self.max_turns, bool(code.strip()))
            observations = [{"role": "user", "content": text}]
        return BaseTextEnvStepOutput(
            observations=observations,
            reward=result.reward if done else 0.0,
            done=done,
            metadata=metadata,
            postprocessed_action=None,
        )

    def close(self) -> None:
        """Delete the episode's session (``reuse_session``); the client stays shared."""
        session_id, self._session_id = self._session_id, None
        if session_id is not None:
            # the backend reaps idle sessions: closing must not fail a rollout
            with contextlib.suppress(CollimateError):
                shared_client(self.settings).delete_session(session_id)

    def get_metrics(self) -> dict[str, Any]:
        return self.stats.as_metrics()

    @staticmethod
    def aggregate_metrics(metrics: list[dict[str, Any]]) -> dict[str, Any]:
        return aggregate(metrics)

    # -- grading -------------------------------------------------------------

    def _grade(self, code: str) -> GradeResult:
        client = shared_client(self.settings)
        session_id = None
        if self.settings.reuse_session:
            if self._session_id is None:
                self._session_id = str(
                    client.create_session(self.settings.template_id)["session_id"]
                )
            session_id = self._session_id
        return grade(
            client,
            self.settings.template_id,
            code,
            self.task.spec,
            seed=self.task.seed,
            timeout_seconds=self.settings.timeout_seconds,
            session_id=session_id,
        )

    def _metadata(self, code: str, result: GradeResult) -> dict[str, Any]:
        return {
            "parsed_code": code,
            "turn": self.turns,
            "turn_reward": result.reward,
            "seed": result.seed,
            "seed_ack": result.seed_ack,
            "crn_group": self.task.group,
            "exit_code": result.exit_code,
            "verdict": result.verdict,
            "infra_error": False,
            "detail": result.detail,
            "data_source": self.task.data_source,
            "packed": "pack" in result.raw,
        }

    def _infra_step(self, code: str, exc: BaseException) -> BaseTextEnvStepOutput:
        self.stats.turns = self.turns
        self.stats.reward, self.stats.passed, self.stats.infra_error = 0.0, False, True
        metadata = {
            "parsed_code": code,
            "turn": self.turns,
            "turn_reward": 0.0,
            "seed": self.task.seed,
            "seed_ack": None,
            "crn_group": self.task.group,
            "exit_code": None,
            "verdict": "infra_error",
            "infra_error": True,
            "error": f"{type(exc).__name__}: {exc}",
            "detail": {},
            "data_source": self.task.data_source,
            "packed": False,
        }
        return BaseTextEnvStepOutput(
            observations=[], reward=0.0, done=True, metadata=metadata, postprocessed_action=None
        )
