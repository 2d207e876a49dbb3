"""Environments for TRL's ``GRPOTrainer(environment_factory=...)``.

TRL (1.x, experimental) makes environments with the factory, keeps them in a
pool and hands one to each rollout of a batch, calling ``reset(**row)``
with the rollout's dataset row before generating. Every public method of
the class but ``reset`` and ``get_reward`` becomes a tool: TRL builds its
schema from the signature and the Google-style docstring (transformers'
``get_json_schema``), so those docstrings are written for the model, and
every helper here is private. When the class defines ``get_reward()``, TRL
calls it once per finished rollout as one more reward function (named
after the class, weight 1); a ``None`` is left out of the sum, and a
rollout that no reward function scored is left out of its group's
baseline.

* :class:`PythonEnvironment`: the ``python`` tool, one stateful
  interpreter per rollout (a core :class:`~collimate_rl.PythonTool`),
  started on the first call; ``reset()`` closes the last rollout's.
* :class:`CodeEnvironment`: that, plus ``submit`` (the final answer) and
  ``get_reward()``, which grades the answer against the row's ground truth
  with any registered reward kind, as :class:`~collimate_rl.trl.CollimateReward`
  reads a row. The grade starts at ``submit``, in a thread beside
  generation: TRL asks the environments for their rewards one by one.

An infrastructure failure (the sandbox or the wire, a
:class:`~collimate_rl.CollimateError`) is raised out of the tool, so TRL
shows the model its message (``{"error": ...}``) and counts a tool
failure; the environment remembers it (``infra_error``), ``get_reward``
answers ``None`` and :class:`~collimate_rl.trl.CollimateReward` does too,
given the rollout's environment: the sample is left out, never scored 0.0.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from collimate_rl import (
    CollimateError,
    GradeResult,
    PythonTool,
    RowTask,
    RowTasks,
    grade,
    normalize_value,
)
from collimate_rl.python_tool import DEFAULT_TOOL_TEXT_LIMIT
from collimate_rl.seeds import seed_from_key

from .clients import process_client
from .reward import _key
from .rows import BatchRows

__all__ = ["CodeEnvironment", "PythonEnvironment"]

log = logging.getLogger("collimate_rl.trl")

#: Grades started at ``submit`` run here, beside generation (see CodeEnvironment).
_grading: ThreadPoolExecutor | None = None
_grading_lock = threading.Lock()


def _grader() -> ThreadPoolExecutor:
    global _grading
    with _grading_lock:
        if _grading is None:
            _grading = ThreadPoolExecutor(max_workers=32, thread_name_prefix="collimate-trl-grade")
        return _grading


#: Environments whose interpreter may be live (swept when idle, closed at exit).
_live: weakref.WeakSet[PythonEnvironment] = weakref.WeakSet()
_live_lock = threading.Lock()


def _sweep(now: float) -> None:
    """Close the interpreters left idle past their environment's
    ``idle_timeout``. TRL never says when a rollout is over to an environment
    without ``get_reward``: its interpreter would live until the instance's
    next ``reset`` (the next batch, or never for an instance the pool does
    not hand out again). Swept whenever any environment is used, so no
    timer thread of our own runs in the trainer's process."""
    with _live_lock:
        envs = list(_live)
    for env in envs:
        env._reap_if_idle(now)


@atexit.register
def _close_all() -> None:
    with _live_lock:
        envs = list(_live)
    for env in envs:
        # best effort at exit: the server reaps what is left
        with contextlib.suppress(Exception):
            env._close()


class PythonEnvironment:
    """One rollout's Python interpreter, as TRL environment tools.

    The tool ``python(code)`` runs cells in one interpreter per rollout:
    what one call defines, the next call of the same rollout sees; rollouts
    never share one. The interpreter starts on the first call (a rollout
    that never calls the tool costs nothing) and is closed by the next
    ``reset()``, after ``idle_timeout`` seconds without a call (swept when
    any environment of the process is used; ``None``: never), and at exit.

    The target is ``client`` (a blocking client), else ``base_url`` /
    ``unix_socket`` / ``api_key``, else what :func:`collimate_rl.connect`
    finds in the environment; every environment of a process shares one
    client per target. ``template`` is the sandbox template, ``timeout``
    the seconds one cell may run, ``text_limit`` the characters of one tool
    result the model reads back.

    Pass the class (or a ``functools.partial`` of it) as
    ``environment_factory``; reward functions see the instances as
    ``environments=``: ``row`` (the rollout's dataset row), ``calls``,
    ``infra_error``.
    """

    def __init__(
        self,
        *,
        client: Any = None,
        base_url: str | None = None,
        unix_socket: str | None = None,
        api_key: str | None = None,
        template: str = "py",
        timeout: float = 30.0,
        text_limit: int = DEFAULT_TOOL_TEXT_LIMIT,
        idle_timeout: float | None = 600.0,
    ) -> None:
        if idle_timeout is not None and not idle_timeout > 0:
            raise ValueError(f"idle_timeout must be positive or None; got {idle_timeout!r}")
        self.client = client
        self.target = (base_url, unix_socket, api_key)
        self.template = template
        self.timeout = timeout
        self.text_limit = text_limit
        self.idle_timeout = idle_timeout
        #: the rollout's dataset row, as TRL passed it to ``reset``
        self.row: dict[str, Any] = {}
        #: tool calls made in this rollout
        self.calls = 0
        #: why this rollout's sandbox failed (infrastructure), else None
        self.infra_error: str | None = None
        self._tool: PythonTool | None = None
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        state = "live" if self._tool is not None and self._tool.started else "idle"
        return f"{type(self).__name__}({self.template!r}, {state}, calls={self.calls})"

    def __getstate__(self) -> dict[str, Any]:
        # a copy (TRL's async trainer pickles factories) starts without a sandbox
        state = dict(self.__dict__)
        state["_tool"] = None
        state["client"] = None
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # -- TRL's protocol -------------------------------------------------------

    def reset(self, **row: Any) -> str | None:
        """Start a rollout: the last rollout's interpreter is closed, the next
        starts on the first call. ``row`` is the rollout's dataset row."""
        _sweep(time.monotonic())
        self._close()
        self.row = dict(row)
        self.calls = 0
        self.infra_error = None
        return None

    def python(self, code: str) -> str:
        """Run Python code in a persistent interpreter and return what it printed.

        Variables, functions and imports defined in one call stay available in the
        next calls. The result shows stdout, stderr, the value of the last
        expression, and the error with its traceback if the code raised.

        Args:
            code: The Python source code to run.

        Returns:
            The output of the code, as text.
        """
        now = time.monotonic()
        _sweep(now)
        with self._lock:
            if self.infra_error is not None:
                raise CollimateError(f"the sandbox of this rollout failed: {self.infra_error}")
            if self._tool is None:
                self._tool = PythonTool(
                    client=self._client(),
                    template=self.template,
                    timeout=self.timeout,
                    text_limit=self.text_limit,
                )
                with _live_lock:
                    _live.add(self)
            self.calls += 1
            try:
                return self._tool.call(code)
            except CollimateError as exc:
                self._fail(f"python call {self.calls}: {exc}")
                raise

    # -- private helpers (never tools) ----------------------------------------

    def _client(self) -> Any:
        return self.client if self.client is not None else process_client(self.target)

    def _fail(self, why: str) -> None:
        """Remember an infrastructure failure: the rollout is left out."""
        self.infra_error = why
        log.warning("%s: infrastructure failure, the rollout will be left out: %s", self, why)
        self._close()

    def _close(self, *, wait: bool = True) -> None:
        """Close the rollout's interpreter; a failure to close is logged, not
        raised (the server reaps what it cannot close), so it never fails a
        reset or a reward. ``wait=False`` closes it in a grading thread
        (``get_reward``: TRL waits for each environment's reward in turn)."""
        with self._lock:
            tool, self._tool = self._tool, None
            with _live_lock:
                _live.discard(self)
        if tool is not None:
            if not wait:
                try:
                    _grader().submit(self._close_tool, tool)
                    return
                except RuntimeError:  # the interpreter is shutting down: close it here
                    pass
            self._close_tool(tool)

    def _close_tool(self, tool: PythonTool) -> None:
        try:
            tool.close()
        except CollimateError as exc:
            log.warning("%s: closing the interpreter failed: %s", self, exc)

    def _reap_if_idle(self, now: float) -> None:
        if self.idle_timeout is None or not self._lock.acquire(blocking=False):
            return  # in use by its own rollout right now: not idle
        try:
            tool = self._tool
            if tool is None or now - tool.last_used < self.idle_timeout:
                return
            self.infra_error = f"the interpreter was closed after {self.idle_timeout:g} s idle"
            self._close()
        finally:
            self._lock.release()


class CodeEnvironment(PythonEnvironment):
    """:class:`PythonEnvironment` that grades the rollout's final answer.

    Tools: ``python(code)`` and ``submit(code)``, the final answer (the
    last submission counts). ``get_reward()`` grades it against the row's
    ground truth, in any shape a registered reward kind accepts, read as
    :class:`~collimate_rl.trl.CollimateReward` reads a row: the dataset
    column ``column`` (with its context columns, the entry point from
    ``entry_column`` or the row's ``entry_point`` / ``entry`` / ``fn_name``
    / ``func_name``, HumanEval's prompt joined in front of a body), else
    ``ground_truth`` given here. The row is read at ``reset``, so a row no
    reward kind accepts raises there, naming it.

    ``get_reward()`` answers the reward (no submission: 0.0, the policy's
    own failure), or ``None`` after an infrastructure failure anywhere in
    the rollout (TRL leaves the sample out), and then closes the rollout's
    interpreter: TRL asks for the reward once the rollout is over. The
    grade starts at ``submit``, in a thread beside generation (a later
    submission starts another; the last counts): TRL asks each
    environment for its reward in turn, so grading then would be one
    rollout after another, where here the grades of a batch overlap (and
    core packs those that arrive together).
    ``result`` keeps the :class:`~collimate_rl.GradeResult`, ``reason``
    one line saying why the reward is what it is. Seeds are one per prompt
    (common random numbers across a group), as ``CollimateReward``'s
    default.
    """

    def __init__(
        self,
        column: str = "ground_truth",
        *,
        ground_truth: Any = None,
        entry: str = "solve",
        entry_column: str | None = None,
        join_prompt: bool = True,
        grade_template: str = "dkr-python311",
        timeout_seconds: int = 30,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.column = column
        self.ground_truth = ground_truth
        self.entry = entry
        self.entry_column = entry_column
        self.join_prompt = join_prompt
        self.grade_template = grade_template
        self.timeout_seconds = timeout_seconds
        #: the final answer submitted in this rollout, else None
        self.answer: str | None = None
        #: the grade of this rollout's answer, once ``get_reward`` ran
        self.result: GradeResult | None = None
        #: why the reward is what it is
        self.reason = ""
        self._task: RowTask | None = None
        self._seed: str | None = None
        self._pending: Future[GradeResult] | None = None
        self._tasks = RowTasks(default_entry=entry, join_prompt=join_prompt)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_tasks", None)
        state["_pending"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._tasks = RowTasks(default_entry=self.entry, join_prompt=self.join_prompt)

    def reset(self, **row: Any) -> str | None:
        """Start a rollout on ``row``: its task is read now (a data error
        raises here), the answer and the grade are cleared."""
        super().reset(**row)
        self._pending = None  # a grade of the last rollout still running is dropped
        self.answer = None
        self.result = None
        self.reason = ""
        self._task = self._row_task(row)
        prompt = normalize_value(row.get("prompt"))
        self._seed = seed_from_key(_key(prompt)) if prompt is not None else None
        return None

    def submit(self, code: str) -> str:
        """Submit your final solution. Call this once you are done; only the last submission counts.

        Args:
            code: The complete source code of the solution.

        Returns:
            A confirmation that the solution was received.
        """
        self.answer = code
        if self._task is not None:
            self._pending = _grader().submit(self._grade, self._task, code, self._seed)
        return "Submitted: it will be graded when the conversation ends."

    def get_reward(self) -> float | None:
        """The rollout's reward: its answer graded (see the class)."""
        try:
            if self.infra_error is not None:
                self.reason = f"infra_error: {self.infra_error}"
                return None
            if self._task is None:
                raise RuntimeError("get_reward before reset: TRL resets every rollout first")
            if self.answer is None or self._pending is None:
                self.reason = "failed: no solution submitted"
                return 0.0
            try:
                self.result = self._pending.result()
            except CollimateError as exc:
                self._fail(f"grading: {exc}")
                self.reason = f"infra_error: {self.infra_error}"
                return None
            if self.result.infra_error:
                self._fail(f"grading: {self.result.error}")
                self.reason = f"infra_error: {self.infra_error}"
                return None
            self.reason = self.result.explain()
            return self.result.reward
        finally:
            self._pending = None
            self._close(wait=False)

    def _grade(self, task: RowTask, answer: str, seed: str | None) -> GradeResult:
        return grade(
            self._client(),
            self.grade_template,
            task.program(answer),
            task.spec,
            seed=seed,
            timeout_seconds=self.timeout_seconds,
        )

    def _row_task(self, row: Mapping[str, Any]) -> RowTask:
        name = type(self).__name__
        columns = {k: [v] for k, v in row.items()}
        if self.column not in row and self.ground_truth is not None:
            columns[self.column] = [self.ground_truth]
        rows = BatchRows(name, columns, 1)
        prompt = normalize_value(row.get("prompt"))
        truth = rows.ground_truths(self.column, [prompt])[0]
        entry = None
        if self.entry_column:
            value = normalize_value(row.get(self.entry_column))
            entry = value if isinstance(value, str) and value else None
        entries = {} if self.entry_column else {k: v[0] for k, v in rows.entry_columns().items()}
        try:
            return self._tasks.get(truth, entry=entry, prompt=prompt, row=entries)
        except ValueError as exc:
            raise ValueError(f"{name}: {rows.label(0)}, column {self.column!r}: {exc}") from None
