"""``CollimatePythonTool`` driven by verl's own code, from its wheel (see
``conftest.py``, ``verl_tools``), against a real local backend.

* verl's tool loader, ``initialize_tools_from_config`` / ``load_all_tools``
  (``verl/tools/tool_registry.py``), builds the tool from the YAML file this
  package ships, subclassing verl's real ``BaseTool``;
* verl's ``ToolAgentLoop.run``, ``_handle_processing_tools_state`` and
  ``_call_tool`` (``verl/experimental/agent_loop/tool_agent_loop.py``) run
  the trajectories: ``_call_tool`` calls ``tool.create(create_kwargs=...)``
  with no instance id, then ``tool.execute(instance_id, tool_args,
  agent_data=agent_data)``, then ``tool.release(instance_id)`` in its
  ``finally``, for every single call; a turn's calls run at once
  (``asyncio.gather``). Only the model is scripted: the stand-in for
  ``_handle_generating_state`` hands each turn's tool calls to the loop as
  verl's tool parser would (``FunctionCall``s).
* verl's ``NaiveRewardManager.run_single`` merges the trajectory's
  ``extra_fields`` into the ``extra_info`` that ``compute_score`` gets.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest
import yaml

from collimate_rl import AsyncCollimateClient, CollimateError
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.verl import (
    INFRA_ERROR_KEY,
    TOOL_CONFIG,
    compute_score,
    compute_score_async,
    compute_score_batch,
)

README = Path(__file__).resolve().parents[1] / "README.md"

HUMANEVAL_TRUTH = {
    "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n",
    "entry_point": "add",
}


@pytest.fixture(scope="module")
def tools_module(verl_tools: dict[str, Any]) -> ModuleType:
    """``collimate_rl.verl.tools``, imported over verl's real tool classes."""
    import collimate_rl.verl.tools as module

    assert module.BaseTool is verl_tools["base_tool"].BaseTool
    return module


@pytest.fixture
def served(target: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The backend named in the workers' environment, as a deployment does
    (the shipped YAML names no target)."""
    for name in ("COLLIMATE_SERVE_URL", "COLLIMATE_SERVE_SOCKET", "COLLIMATE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    if "base_url" in target:
        monkeypatch.setenv("COLLIMATE_SERVE_URL", target["base_url"])
    else:
        monkeypatch.setenv("COLLIMATE_SERVE_SOCKET", target["unix_socket"])
    return target


def load_tools(verl_tools: dict[str, Any], path: Path) -> list[Any]:
    """verl's AgentLoopWorker: ``load_all_tools(tool_config_path=...)``."""
    return list(
        verl_tools["tool_registry"].load_all_tools(
            tool_config_path=str(path), function_tool_path=None
        )
    )


def tool_config(tmp_path: Path, **config: Any) -> Path:
    """The shipped YAML with ``config`` keys changed (the target, a TTL)."""
    loaded = yaml.safe_load(TOOL_CONFIG.read_text(encoding="utf-8"))
    loaded["tools"][0]["config"].update(config)
    path = tmp_path / "tools.yaml"
    path.write_text(yaml.safe_dump(loaded), encoding="utf-8")
    return path


class Recorded:
    """The instance ids verl's loop creates and releases, per call."""

    def __init__(self, tool: Any) -> None:
        self.created: list[str] = []
        self.released: list[str] = []
        create, release = tool.create, tool.release

        async def recorded_create(*args: Any, **kwargs: Any) -> Any:
            assert not args and set(kwargs) == {"create_kwargs"}  # no instance id, ever
            instance_id, response = await create(*args, **kwargs)
            self.created.append(instance_id)
            return instance_id, response

        async def recorded_release(instance_id: str, **kwargs: Any) -> None:
            self.released.append(instance_id)
            await release(instance_id, **kwargs)

        tool.create, tool.release = recorded_create, recorded_release


class Model:
    """The policy of one trajectory, scripted: the code of each turn's tool
    calls. It keeps the conversation (a list), never verl's ``AgentData``."""

    def __init__(self, turns: list[list[str]], before_turn: dict[int, Any] | None = None) -> None:
        self.turns = list(turns)
        self.before_turn = before_turn or {}
        self.turn = 0
        self.messages: list[dict[str, Any]] = []

    def tool_texts(self) -> list[str]:
        return [m["content"] for m in self.messages if m["role"] == "tool"]


def agent_loop(code: dict[str, Any], tools: list[Any], model: Model) -> Any:
    """A ``ToolAgentLoop`` whose ``run``, ``_handle_processing_tools_state``,
    ``_call_tool`` and ``_make_request_id`` are verl's; generation and
    tokenisation are stood in (``model``; one token per added message)."""
    State, FunctionCall = code["AgentState"], code["FunctionCall"]

    class ToolAgentLoopUnderTest:
        run = code["ToolAgentLoop.run"]
        _handle_processing_tools_state = code["ToolAgentLoop._handle_processing_tools_state"]
        _call_tool = code["ToolAgentLoop._call_tool"]
        _make_request_id = staticmethod(code["ToolAgentLoop._make_request_id"])

        def __init__(self) -> None:
            # ToolAgentLoop.__init__'s attributes
            self.tools = {tool.name: tool for tool in tools}
            self.tool_schemas = [
                t.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for t in tools
            ]
            self.rollout_config = SimpleNamespace(full_determinism=False)
            self.max_parallel_calls = 4
            self.max_tool_response_length = 8192
            self.tool_response_truncate_side = "middle"
            self.response_length = 1 << 20
            self.processor = None

        async def process_multi_modal_info(self, messages: Any) -> dict[str, Any]:
            return {}

        def _get_mm_processor_kwargs(self, audios: Any) -> dict[str, Any]:
            return {}

        def _assert_mm_supported(self, has_multi_modal: bool) -> None:
            assert not has_multi_modal

        async def _handle_pending_state(self, agent_data: Any, sampling_params: Any) -> Any:
            return State.GENERATING

        async def _handle_generating_state(self, agent_data: Any, sampling_params: Any) -> Any:
            agent_data.assistant_turns += 1
            model.messages = agent_data.messages
            if not model.turns:
                agent_data.tool_calls = []
                agent_data.messages.append({"role": "assistant", "content": "done"})
                return State.TERMINATED
            hook = model.before_turn.get(model.turn)
            if hook is not None:
                await hook()
            calls = model.turns.pop(0)
            agent_data.tool_calls = [
                FunctionCall(
                    name="python",
                    arguments=json.dumps({"code": source}),
                    tool_call_id=f"call_{model.turn}_{i}",
                )
                for i, source in enumerate(calls)
            ]
            model.turn += 1
            agent_data.messages.append(self._build_assistant_message("", agent_data))
            return State.PROCESSING_TOOLS

        def _build_assistant_message(self, content: str, agent_data: Any) -> dict[str, Any]:
            return {
                "role": "assistant",
                "content": content,
                "tool_calls": len(agent_data.tool_calls),
            }

        async def ct_merge_context_msg(
            self,
            previous: list[Any],
            messages: list[Any],
            prompt_ids: list[int],
            response_mask: list[int],
            logprobs: Any,
            tools: Any = None,
        ) -> Any:
            added = [0] * (len(messages) - len(previous))
            return SimpleNamespace(token_ids=prompt_ids + added), response_mask + added, None

    return ToolAgentLoopUnderTest()


async def trajectory(
    code: dict[str, Any], tools: list[Any], model: Model, tools_kwargs: dict[str, Any] | None = None
) -> Any:
    """One sample through verl's ``ToolAgentLoop.run``; its output."""
    loop = agent_loop(code, tools, model)
    return await loop.run(
        {},
        raw_prompt=[{"role": "user", "content": "use python"}],
        tools_kwargs=tools_kwargs or {"python": {"create_kwargs": {"row": 7}}},
        extra_info={"index": 7},
    )


async def session_ids(target: dict[str, str]) -> set[str]:
    if "base_url" in target:
        client = AsyncCollimateClient(target["base_url"])
    else:
        client = AsyncCollimateClient(unix_socket=target["unix_socket"])
    async with client:
        return {str(s.get("session_id") or s.get("id")) for s in await client.list_sessions()}


# -- registration ---------------------------------------------------------------


def test_verls_loader_builds_the_tool_from_the_shipped_yaml(
    verl_tools: dict[str, Any], tools_module: ModuleType
) -> None:
    (tool,) = load_tools(verl_tools, TOOL_CONFIG)
    assert type(tool) is tools_module.CollimatePythonTool
    assert isinstance(tool, verl_tools["base_tool"].BaseTool)
    assert not isinstance(tool, verl_tools["function_tool"].FunctionTool)  # the lifecycle path
    assert tool.name == "python"
    schema = verl_tools["schemas"].OpenAIFunctionToolSchema
    assert isinstance(tool.tool_schema, schema)
    assert tool.tool_schema == schema.model_validate(tools_module.python_tool_schema())
    parameters = tool.tool_schema.function.parameters
    assert parameters.required == ["code"] and parameters.properties["code"].type == "string"
    assert (tool.template, tool.timeout, tool.kernels.idle_ttl) == ("py", 30.0, 900.0)
    assert len(tool.kernels) == 0  # nothing starts before a call


def test_an_entry_without_a_schema_gets_the_default_one(
    verl_tools: dict[str, Any], tools_module: ModuleType, tmp_path: Path
) -> None:
    loaded = yaml.safe_load(TOOL_CONFIG.read_text(encoding="utf-8"))
    del loaded["tools"][0]["tool_schema"]
    loaded["tools"][0]["config"]["name"] = "run_python"
    path = tmp_path / "bare.yaml"
    path.write_text(yaml.safe_dump(loaded), encoding="utf-8")
    (tool,) = verl_tools["tool_registry"].initialize_tools_from_config(str(path))
    assert tool.name == "run_python"
    assert tool.tool_schema.function.parameters.required == ["code"]


# -- one trajectory, two trajectories -------------------------------------------


def test_one_trajectorys_calls_share_a_kernel_that_closes_when_it_ends(
    verl_tools: dict[str, Any], tools_module: ModuleType, served: dict[str, str]
) -> None:
    (tool,) = load_tools(verl_tools, TOOL_CONFIG)
    calls = Recorded(tool)
    model = Model(
        [
            ["import math\nxs = [1, 2, 3]"],
            ["print(sum(xs))"],
            ["math.factorial(len(xs))"],
            ["xs[10]"],
            ["print('still here', len(xs))"],
        ]
    )

    async def main() -> tuple[Any, set[str], set[str]]:
        before = await session_ids(served)
        live: set[str] = set()

        async def look() -> None:
            live.update(await session_ids(served) - before)

        model.before_turn = {4: look}
        output = await trajectory(verl_tools["agent_loop"], [tool], model)
        await tool.kernels.drain()
        return output, live, await session_ids(served)

    output, live, after = asyncio.run(main())
    texts = model.tool_texts()
    assert texts[:3] == ["(no output)", "6", "6"]
    assert "IndexError" in texts[3] and "<cell" in texts[3]  # the model's error, as text
    assert texts[4] == "still here 3"
    # a fresh instance id for every call, each released at once by verl's loop
    assert len(set(calls.created)) == 5 and calls.released == calls.created
    assert len(live) == 1  # one sandbox served all five calls
    assert output.extra_fields["tool_rewards"] == [0.0] * 5
    assert INFRA_ERROR_KEY not in output.extra_fields
    # run() returned: the trajectory's AgentData is gone, and with it the kernel
    assert len(tool.kernels) == 0 and tool.kernels.ended == 1
    assert not live & after


def test_two_trajectories_of_one_prompt_are_isolated(
    verl_tools: dict[str, Any], tools_module: ModuleType, served: dict[str, str]
) -> None:
    (tool,) = load_tools(verl_tools, TOOL_CONFIG)
    mine = Model([["secret = 41"], ["secret + 1"]])
    theirs = Model([["other = 1"], ["secret"]])
    same_row = {"python": {"create_kwargs": {"row": 3}}}  # a GRPO group: one row, n samples

    async def main() -> None:
        await asyncio.gather(
            trajectory(verl_tools["agent_loop"], [tool], mine, same_row),
            trajectory(verl_tools["agent_loop"], [tool], theirs, same_row),
        )
        await tool.kernels.drain()

    asyncio.run(main())
    assert mine.tool_texts() == ["(no output)", "42"]
    assert "NameError" in theirs.tool_texts()[1]
    assert len(tool.kernels) == 0 and tool.kernels.ended == 2


def test_a_turns_parallel_calls_run_in_one_kernel(
    verl_tools: dict[str, Any], tools_module: ModuleType, served: dict[str, str]
) -> None:
    (tool,) = load_tools(verl_tools, TOOL_CONFIG)
    model = Model([["a = 1", "b = 2", "c = 3"], ["a + b + c"]])

    async def main() -> set[str]:
        before = await session_ids(served)
        seen: set[str] = set()

        async def look() -> None:
            seen.update(await session_ids(served) - before)

        model.before_turn = {1: look}
        await trajectory(verl_tools["agent_loop"], [tool], model)
        await tool.kernels.drain()
        return seen

    seen = asyncio.run(main())
    assert model.tool_texts() == ["(no output)"] * 3 + ["6"]
    assert len(seen) == 1


def test_arguments_without_code_are_answered_to_the_model(
    verl_tools: dict[str, Any], tools_module: ModuleType, served: dict[str, str]
) -> None:
    (tool,) = load_tools(verl_tools, TOOL_CONFIG)
    call_tool = verl_tools["agent_loop"]["ToolAgentLoop._call_tool"]
    FunctionCall, AgentData = (
        verl_tools["agent_loop"]["FunctionCall"],
        verl_tools["agent_loop"]["AgentData"],
    )
    loop = agent_loop(verl_tools["agent_loop"], [tool], Model([]))
    agent_data = AgentData([], None, None, None, None, {}, "r1", {})

    async def main() -> Any:
        return await call_tool(
            loop, FunctionCall(name="python", arguments='{"source": "1"}'), {}, agent_data
        )

    response, reward, _ = asyncio.run(main())
    assert response.text == tools_module.USAGE and reward == 0.0
    assert len(tool.kernels) == 0  # nothing was started for it


# -- reaping without an end ----------------------------------------------------------


def test_an_idle_trajectorys_kernel_is_reaped(
    verl_tools: dict[str, Any], tools_module: ModuleType, target: dict[str, str], tmp_path: Path
) -> None:
    (tool,) = load_tools(verl_tools, tool_config(tmp_path, idle_ttl_seconds=60, **target))
    AgentData = verl_tools["agent_loop"]["AgentData"]
    # a trajectory whose AgentData stays alive (a trace backend holding it, say)
    agent_data = AgentData([], None, None, None, None, {}, "r-idle", {})

    async def call(source: str) -> str:
        instance_id, _ = await tool.create(create_kwargs={})
        try:
            response, _, _ = await tool.execute(
                instance_id, {"code": source}, agent_data=agent_data
            )
        finally:
            await tool.release(instance_id)
        return str(response.text)

    async def main() -> tuple[int, int, set[str], set[str], str]:
        before = await session_ids(target)
        await call("x = 1")
        live = await session_ids(target) - before
        early = await tool.kernels.reap_idle(time.monotonic() + 30)  # not idle long enough
        reaped = await tool.kernels.reap_idle(time.monotonic() + 61)
        after = await session_ids(target)
        again = await call("'x' in dir()")  # the trajectory came back: a fresh kernel
        await tool.aclose()
        return early, reaped, live, after, again

    early, reaped, live, after, again = asyncio.run(main())
    assert (early, reaped, tool.kernels.idled) == (0, 1, 1)
    assert len(live) == 1 and not live & after
    assert again == "False"
    assert len(tool.kernels) == 0


def test_a_trajectory_that_ends_on_another_thread_is_closed_on_the_loop(
    verl_tools: dict[str, Any], tools_module: ModuleType, target: dict[str, str], tmp_path: Path
) -> None:
    """The last reference to ``AgentData`` may go on any thread: the
    kernel is still closed, on the loop its client belongs to."""
    (tool,) = load_tools(verl_tools, tool_config(tmp_path, **target))
    AgentData = verl_tools["agent_loop"]["AgentData"]

    async def main() -> tuple[set[str], set[str], int]:
        before = await session_ids(target)
        holder = [AgentData([], None, None, None, None, {}, "r-thread", {})]
        instance_id, _ = await tool.create(create_kwargs={})
        await tool.execute(instance_id, {"code": "z = 1"}, agent_data=holder[0])
        await tool.release(instance_id)
        live = await session_ids(target) - before
        dropper = threading.Thread(target=holder.clear)  # the only reference, dropped there
        dropper.start()
        dropper.join()
        await asyncio.sleep(0)  # the loop runs what the thread scheduled on it
        await tool.kernels.drain()
        return live, await session_ids(target), len(tool.kernels)

    live, after, left = asyncio.run(main())
    assert len(live) == 1 and not live & after
    assert left == 0 and tool.kernels.ended == 1


def test_a_caller_without_agent_data_keeps_a_kernel_per_instance(
    verl_tools: dict[str, Any], tools_module: ModuleType, target: dict[str, str], tmp_path: Path
) -> None:
    """verl's earlier contract (create once per trajectory with its own
    instance id, release at its end): the instance id keys the kernel."""
    (tool,) = load_tools(verl_tools, tool_config(tmp_path, **target))

    async def main() -> list[str]:
        instance_id, _ = await tool.create("traj-1", create_kwargs={})
        texts = []
        for source in ("n = 5", "n * 2"):
            response, _, _ = await tool.execute(instance_id, {"code": source})
            texts.append(str(response.text))
        assert len(tool.kernels) == 1
        assert await tool.calc_reward(instance_id) == 0.0
        await tool.release(instance_id)
        await tool.kernels.drain()
        return texts

    assert asyncio.run(main()) == ["(no output)", "10"]
    assert len(tool.kernels) == 0


def test_without_agent_data_a_made_up_instance_is_one_call_and_says_so(
    verl_tools: dict[str, Any],
    tools_module: ModuleType,
    target: dict[str, str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """verl 0.6's ``_call_tool``: ``create(create_kwargs=...)`` then
    ``execute(instance_id, tool_args)`` (no ``agent_data``), ``release``."""
    (tool,) = load_tools(verl_tools, tool_config(tmp_path, **target))

    async def call(source: str) -> str:
        instance_id, _ = await tool.create(create_kwargs={})
        try:
            response, _, _ = await tool.execute(instance_id, {"code": source})
        finally:
            await tool.release(instance_id)
        await tool.kernels.drain()
        return str(response.text)

    async def main() -> list[str]:
        return [await call("y = 1"), await call("y")]

    with caplog.at_level("WARNING", logger="collimate_rl.verl"):
        first, second = asyncio.run(main())
    assert first == "(no output)" and "NameError" in second
    warnings = [r for r in caplog.records if "got no agent_data" in r.getMessage()]
    assert len(warnings) == 1  # once per tool, not per call
    assert len(tool.kernels) == 0


# -- an infrastructure failure mid-trajectory ---------------------------------------


@pytest.fixture
def doomed(tmp_path: Path) -> Iterator[LocalCollimateBackend]:
    """A backend of the test's own, to be stopped under a live trajectory."""
    with LocalCollimateBackend() as server:
        yield server


def test_a_sandbox_lost_mid_trajectory_is_an_infra_failure_never_a_zero(
    verl_tools: dict[str, Any],
    tools_module: ModuleType,
    verl_rows_code: dict[str, Any],
    doomed: LocalCollimateBackend,
    tmp_path: Path,
) -> None:
    (tool,) = load_tools(verl_tools, tool_config(tmp_path, base_url=doomed.base_url))
    stopped = threading.Event()

    async def kill_the_server() -> None:
        await asyncio.to_thread(doomed.stop)
        stopped.set()

    model = Model([["x = 1"], ["x"], ["x + 1"]], before_turn={1: kill_the_server})
    output = asyncio.run(trajectory(verl_tools["agent_loop"], [tool], model))
    assert stopped.is_set()
    first, second, third = model.tool_texts()
    assert first == "(no output)"
    # shown as what it is, not as an error of the model's code; later calls run nothing
    assert second.startswith("[the Python sandbox failed; this is an infrastructure error")
    assert third == second
    failure = output.extra_fields[INFRA_ERROR_KEY]
    assert failure.startswith("CollimateError: ") and "could not connect" in failure
    assert failure in second
    assert output.extra_fields["tool_rewards"] == [0.0]  # no step reward for the failed calls

    # verl's reward loop: run_single merges the sample's extra_fields into extra_info
    def score(**reward_kwargs: Any) -> Any:
        code = verl_rows_code
        data = code["DataProto"](
            {
                "responses": [code["torch"].Tensor([ord(c) for c in "    return x + y\n"])],
                "attention_mask": [code["torch"].Tensor([1] * 17)],
            },
            {
                "data_source": np.array(["openai_humaneval"], dtype=object),
                "reward_model": np.array([{"ground_truth": HUMANEVAL_TRUTH}], dtype=object),
                "extra_info": np.array([{"index": 53, "split": "train"}], dtype=object),
                "tool_extra_fields": np.array([output.extra_fields], dtype=object),
            },
        )
        manager = SimpleNamespace(
            compute_score=lambda **kw: compute_score(**kw, **reward_kwargs),
            is_async_reward_score=False,
            reward_router_address=None,
            reward_model_tokenizer=None,
            tokenizer=SimpleNamespace(
                decode=lambda ids, skip_special_tokens=True: "".join(chr(i) for i in ids)
            ),
        )

        async def step() -> Any:
            manager.loop = asyncio.get_running_loop()
            return await code["NaiveRewardManager.run_single"](manager, data)

        return asyncio.run(step())

    with pytest.raises(CollimateError, match="sandbox failed during the trajectory"):
        score()
    flagged = score(on_infra_error="zero")
    info = flagged["reward_extra_info"]
    assert info["infra_error"] is True and info["verdict"] == "infra_error"
    assert flagged["reward_score"] == 0.0 and failure in info["error"]


def test_calc_reward_of_a_failed_trajectory_raises(
    verl_tools: dict[str, Any], tools_module: ModuleType, tmp_path: Path
) -> None:
    with LocalCollimateBackend() as server:
        url = server.base_url
    # the server is gone before the first call: the sandbox cannot even start
    (tool,) = load_tools(verl_tools, tool_config(tmp_path, base_url=url))
    AgentData = verl_tools["agent_loop"]["AgentData"]
    agent_data = AgentData([], None, None, None, None, {}, "r-dead", {})

    async def main() -> Any:
        instance_id, _ = await tool.create(create_kwargs={})
        response, reward, _ = await tool.execute(instance_id, {"code": "1"}, agent_data=agent_data)
        with pytest.raises(CollimateError):
            await tool.calc_reward(instance_id)
        await tool.release(instance_id)
        later, _ = await tool.create(create_kwargs={})  # another call of that trajectory
        with pytest.raises(CollimateError, match="could not connect"):
            await tool.calc_reward(later, agent_data=agent_data)
        await tool.release(later)
        await tool.aclose()
        return response, reward

    response, reward = asyncio.run(main())
    assert reward is None and "infrastructure error" in response.text
    assert agent_data.extra_fields[INFRA_ERROR_KEY]


def test_compute_score_never_grades_a_flagged_sample(target: dict[str, str]) -> None:
    """However verl calls it: blocking, awaited, or the batch manager's."""
    whole = "def add(x, y):\n    return x + y\n"
    flagged = {"index": 1, INFRA_ERROR_KEY: "CollimateError: the sandbox went away"}
    with pytest.raises(CollimateError, match="the sandbox went away"):
        compute_score("openai_humaneval", whole, HUMANEVAL_TRUTH, flagged, **target)
    with pytest.raises(CollimateError, match="the sandbox went away"):
        asyncio.run(
            compute_score_async("openai_humaneval", whole, HUMANEVAL_TRUTH, flagged, **target)
        )
    sources, truths = ["openai_humaneval"] * 3, [HUMANEVAL_TRUTH] * 3
    infos = [{"index": 0}, flagged, {"index": 2, INFRA_ERROR_KEY: ""}]
    with pytest.raises(CollimateError, match="the sandbox went away"):
        compute_score_batch(sources, [whole] * 3, truths, infos, **target)
    batch = compute_score_batch(
        sources, [whole] * 3, truths, infos, on_infra_error="zero", **target
    )
    assert [d["infra_error"] for d in batch] == [False, True, False]
    assert [d["score"] for d in batch] == [1.0, 0.0, 1.0]
    assert batch[1]["verdict"] == "infra_error" and "went away" in batch[1]["reason"]


def test_the_readme_shows_the_shipped_yaml() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks == [TOOL_CONFIG.read_text(encoding="utf-8")]
