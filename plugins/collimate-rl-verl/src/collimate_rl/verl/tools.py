"""``CollimatePythonTool``: a verl ``BaseTool`` running the model's Python in
a Collimate sandbox, one stateful interpreter per trajectory.

Registered without user code: verl loads tools from the YAML file named by
``actor_rollout_ref.rollout.multi_turn.tool_config_path`` (its
``initialize_tools_from_config`` imports ``class_name`` and builds it with
the entry's ``config`` and ``tool_schema``), and this distribution ships one,
:data:`collimate_rl.verl.TOOL_CONFIG`.

The calls of one trajectory share one kernel although verl wraps every call
in its own ``create`` / ``execute`` / ``release``: see
:mod:`collimate_rl.verl.trajectories` for what keys it and when it is closed.

What the model reads back (``ToolResponse(text=...)``): the cell's output,
value and traceback (core's ``cell_text``), so an error of its code is an
observation like any other. A failure of the sandbox or the wire is not the
model's doing, and verl gives a tool no way to fail one sample: an exception
out of ``execute`` is caught by ``ToolAgentLoop._call_tool``, shown to the
model as ``Error executing tool ...`` and the trajectory goes on to be
scored. So the tool raises nothing; it records the failure in
``agent_data.extra_fields[INFRA_ERROR_KEY]``, which verl's reward managers
merge into ``extra_info``, where ``collimate_rl.verl.compute_score`` finds
it and treats the sample as an infrastructure failure (it raises, or scores
a 0.0 flagged ``infra_error``: never a plain 0.0). The trajectory's later
calls run nothing and answer the same notice; no step reward is given for
them (``None``, which verl leaves out of ``tool_rewards``).

This module imports verl (its tool classes); ``collimate_rl.verl`` itself
does not.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final
from uuid import uuid4

from collimate_rl import AsyncPythonTool, CollimateError
from collimate_rl.verl.clients import async_client
from collimate_rl.verl.trajectories import INFRA_ERROR_KEY, Trajectory, TrajectoryKernels
from verl.tools.base_tool import BaseTool  # type: ignore[import-not-found]
from verl.tools.schemas import (  # type: ignore[import-not-found]
    OpenAIFunctionToolSchema,
    ToolResponse,
)

__all__ = [
    "INFRA_ERROR_KEY",
    "CollimatePythonTool",
    "infra_notice",
    "python_tool_schema",
]

log = logging.getLogger("collimate_rl.verl")

DEFAULT_NAME: Final = "python"
DEFAULT_DESCRIPTION: Final = (
    "Run Python code in a persistent interpreter. Variables, functions and imports "
    "stay defined for the next call. Returns what the code prints and the value of "
    "its last expression, or the traceback if it raises."
)
USAGE: Final = 'The python tool takes one argument, "code": the Python source to run, as a string.'


def python_tool_schema(
    name: str = DEFAULT_NAME, description: str = DEFAULT_DESCRIPTION
) -> dict[str, Any]:
    """The tool's OpenAI function schema, as the YAML file writes it."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "code": {"type": "string", "description": "The Python code to run."}
                },
                "required": ["code"],
            },
        },
    }


def infra_notice(message: str) -> str:
    """What the model reads after the sandbox failed (the sample is left out)."""
    return (
        "[the Python sandbox failed; this is an infrastructure error, not a result of "
        f"your code, and this attempt will not be scored] {message}"
    )


def _number(config: Mapping[str, Any], key: str, default: float | None) -> float | None:
    value = config.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"CollimatePythonTool: config {key!r} must be a number; got {value!r}")
    return float(value)


class CollimatePythonTool(BaseTool):  # type: ignore[misc]
    """A verl tool running Python in a Collimate sandbox; one interpreter per
    trajectory. ``config`` (the YAML entry's ``config``): ``template``
    (default ``py``), ``timeout_seconds`` per call (30), ``idle_ttl_seconds``
    (900; ``null``: never reap idle kernels client-side), ``text_limit``,
    ``output_limit``, and the target (``base_url`` / ``unix_socket`` /
    ``api_key``; by default ``COLLIMATE_SERVE_URL`` and the other variables
    core's ``connect`` reads, in the agent-loop workers' environment)."""

    def __init__(
        self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None = None
    ) -> None:
        config = dict(config or {})
        super().__init__(config, tool_schema)
        self.template = str(config.get("template", "py"))
        self.timeout = _number(config, "timeout_seconds", 30.0) or 30.0
        self.text_limit = config.get("text_limit")
        self.output_limit = config.get("output_limit")
        self.target = (config.get("base_url"), config.get("unix_socket"), config.get("api_key"))
        self.kernels = TrajectoryKernels(
            self._new_kernel, idle_ttl=_number(config, "idle_ttl_seconds", 900.0)
        )
        # instance id -> the trajectory its execute ran in (for calc_reward)
        self._instances: dict[str, Trajectory | None] = {}
        # the instance ids this tool made up (create was given none)
        self._made_up: set[str] = set()
        self._warned_per_call = False

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        """The schema when the YAML entry gives none (``BaseTool.__init__``
        asks for it then)."""
        schema = getattr(self, "tool_schema", None)
        if schema is not None:
            return schema
        name = str(self.config.get("name", DEFAULT_NAME))
        return OpenAIFunctionToolSchema.model_validate(python_tool_schema(name))

    def _new_kernel(self) -> AsyncPythonTool:
        extra: dict[str, Any] = {}
        if self.text_limit is not None:
            extra["text_limit"] = int(self.text_limit)
        if self.output_limit is not None:
            extra["output_limit"] = int(self.output_limit)
        return AsyncPythonTool(
            client=async_client(self.target), template=self.template, timeout=self.timeout, **extra
        )

    async def create(
        self, instance_id: str | None = None, **kwargs: Any
    ) -> tuple[str, ToolResponse]:
        """A call begins. Nothing starts here: the kernel is the trajectory's,
        found (or started) by the call's ``execute``."""
        if instance_id is None:
            instance_id = uuid4().hex
            self._made_up.add(instance_id)
        self._instances[instance_id] = None
        return instance_id, ToolResponse()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float | None, dict[str, Any]]:
        """Run ``parameters["code"]`` in the trajectory's interpreter."""
        code = parameters.get("code") if isinstance(parameters, Mapping) else None
        if not isinstance(code, str):
            return ToolResponse(text=USAGE), 0.0, {}
        agent_data = kwargs.get("agent_data")
        if agent_data is None and instance_id in self._made_up:
            self._warn_per_call()
        trajectory = self.kernels.get(agent_data, instance_id)
        self._instances[instance_id] = trajectory
        async with trajectory.lock:
            if trajectory.failure is None:
                try:
                    text = await trajectory.tool.call(code)
                except CollimateError as exc:
                    trajectory.failure = f"{type(exc).__name__}: {exc}"
                    log.warning(
                        "collimate_rl.verl: the sandbox of %s failed; the sample is flagged "
                        "%s and left out: %s",
                        trajectory.label,
                        INFRA_ERROR_KEY,
                        trajectory.failure,
                    )
                    await self.kernels.discard(trajectory)
                else:
                    return ToolResponse(text=text), 0.0, {}
        failure = trajectory.failure
        extra_fields = getattr(agent_data, "extra_fields", None)
        if not isinstance(extra_fields, dict):
            # no trajectory to flag (a caller without agent_data): its own problem to handle
            raise CollimateError(failure)
        extra_fields[INFRA_ERROR_KEY] = failure
        return ToolResponse(text=infra_notice(failure)), None, {INFRA_ERROR_KEY: failure}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """No reward from the tool (grading is ``compute_score``'s); a
        trajectory whose sandbox failed has none to give, so it raises."""
        trajectory = self._instances.get(instance_id)
        if trajectory is not None and trajectory.failure is not None:
            raise CollimateError(trajectory.failure)
        extra_fields = getattr(kwargs.get("agent_data"), "extra_fields", None)
        if isinstance(extra_fields, dict) and extra_fields.get(INFRA_ERROR_KEY):
            raise CollimateError(str(extra_fields[INFRA_ERROR_KEY]))
        return 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """A call ends. The kernel outlives it unless it was keyed by this
        call's id (a caller that passes no ``agent_data``)."""
        self._instances.pop(instance_id, None)
        self._made_up.discard(instance_id)
        self.kernels.release(instance_id)

    def _warn_per_call(self) -> None:
        # verl before 0.7 calls execute(instance_id, parameters) alone, with a
        # fresh instance id per call: nothing names the trajectory
        if not self._warned_per_call:
            self._warned_per_call = True
            log.warning(
                "collimate_rl.verl: %s.execute got no agent_data and an instance id made "
                "for this call alone (verl before 0.7?): each call runs in a fresh "
                "interpreter, so names do not carry over between calls; verl 0.7 and "
                "later pass agent_data",
                type(self).__name__,
            )

    async def aclose(self) -> None:
        """Close every kernel this tool holds."""
        await self.kernels.aclose()
