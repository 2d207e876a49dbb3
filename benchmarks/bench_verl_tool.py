"""verl's tool calls on ``CollimatePythonTool``: 64 trajectories x 10 calls
at once, latency per call, beside skyrl-gym's own ``python -c`` tool on the
same calls, in one run.

Not a test: run it by hand, ``hatch run bench:one benchmarks/bench_verl_tool.py``.

Why: a verl agent loop calls its tool in every turn of every trajectory.

Ours: the tool as verl builds it from the shipped YAML (verl's ``BaseTool``
and schemas, read from its wheel), each call made as verl's
``ToolAgentLoop._call_tool`` makes it (``create(create_kwargs=...)``,
``execute(instance_id, args, agent_data=...)``, ``release(instance_id)``),
the 64 trajectories as tasks of one loop as verl's agent-loop worker runs
them. Each trajectory has its own sandboxed interpreter (isolated; the first
call starts it). Theirs: skyrl-gym's ``PythonCodeExecutorToolGroup``, a
``python -c`` subprocess per call on the host (not isolated, no state),
from 64 threads (skyrl-gym's tools are blocking). The calls are
self-contained so both sides can answer them; every answer is checked.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import statistics
import sys
import time
from types import ModuleType
from typing import Any

import yaml
from _results import add_out_option, write_results
from _sides import ours_backend

from collimate_rl.testing.wheels import wheel_source

VERL_VERSION = "0.9.1"


def verl_tool_class() -> Any:
    """``CollimatePythonTool`` over verl's real ``BaseTool`` (its wheel; its
    package ``__init__``, which imports torch and ray, never runs)."""
    import importlib

    verl_dir = wheel_source("verl", VERL_VERSION, "verl")
    for name, folder in (("verl", verl_dir), ("verl.utils", verl_dir / "utils")):
        package = ModuleType(name)
        package.__path__ = [str(folder)]
        sys.modules[name] = package
    ray_utils = ModuleType("verl.utils.ray_utils")
    ray_utils.get_event_loop = asyncio.get_event_loop  # type: ignore[attr-defined]
    sys.modules["verl.utils.ray_utils"] = ray_utils
    schemas = importlib.import_module("verl.tools.schemas")
    tools = importlib.import_module("collimate_rl.verl.tools")
    return tools.CollimatePythonTool, schemas.OpenAIFunctionToolSchema


def code_of(trajectory: int, call: int) -> tuple[str, str]:
    """A self-contained call and its answer."""
    n = 1000 + 37 * trajectory + call
    return f"print(sum(i * i for i in range({n})))", str(sum(i * i for i in range(n)))


class AgentData:
    """What verl's loop hands ``execute`` as ``agent_data`` (the fields read)."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.extra_fields: dict[str, Any] = {}


async def ours(url: str, trajectories: int, calls: int) -> tuple[list[float], list[float]]:
    """Latencies (s) of first calls and of later calls."""
    from collimate_rl.verl import TOOL_CONFIG

    cls, schema_cls = verl_tool_class()
    (entry,) = yaml.safe_load(TOOL_CONFIG.read_text(encoding="utf-8"))["tools"]
    tool = cls(
        config={**entry["config"], "base_url": url},
        tool_schema=schema_cls.model_validate(entry["tool_schema"]),
    )
    first: list[float] = []
    later: list[float] = []

    async def trajectory(t: int) -> None:
        agent_data = AgentData(f"r{t}")
        for c in range(calls):
            source, answer = code_of(t, c)
            started = time.perf_counter()
            # as verl 0.9.1's ToolAgentLoop._call_tool does
            # (verl/experimental/agent_loop/tool_agent_loop.py, lines 485-496)
            instance_id, _ = await tool.create(create_kwargs={})
            try:
                response, _, _ = await tool.execute(
                    instance_id, {"code": source}, agent_data=agent_data
                )
            finally:
                await tool.release(instance_id)
            (first if c == 0 else later).append(time.perf_counter() - started)
            if response.text != answer:
                raise SystemExit(f"ours: trajectory {t} call {c}: {response.text!r}")

    await asyncio.gather(*(trajectory(t) for t in range(trajectories)))
    await tool.aclose()
    return first, later


def theirs(trajectories: int, calls: int) -> tuple[list[float], list[float]]:
    from skyrl_gym.tools.python import PythonCodeExecutorToolGroup

    group = PythonCodeExecutorToolGroup()
    first: list[float] = []
    later: list[float] = []

    def trajectory(t: int) -> None:
        for c in range(calls):
            source, answer = code_of(t, c)
            started = time.perf_counter()
            text = group.execute_tool("python", source)
            (first if c == 0 else later).append(time.perf_counter() - started)
            if text != answer:
                raise SystemExit(f"skyrl-gym: trajectory {t} call {c}: {text!r}")

    with concurrent.futures.ThreadPoolExecutor(trajectories) as pool:
        list(pool.map(trajectory, range(trajectories)))
    return first, later


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trajectories", type=int, default=64)
    ap.add_argument("--calls", type=int, default=10, help="per trajectory")
    ap.add_argument("--rounds", type=int, default=2)
    add_out_option(ap)
    args = ap.parse_args(argv)
    sides: dict[str, dict[str, list[float]]] = {
        "CollimatePythonTool (verl)": {"first": [], "later": []},
        "skyrl-gym python -c": {"first": [], "later": []},
    }
    walls: dict[str, list[float]] = {side: [] for side in sides}
    with ours_backend() as url:
        for _ in range(args.rounds):
            for side in sides:
                started = time.perf_counter()
                if side.startswith("Collimate"):
                    first, later = asyncio.run(ours(url, args.trajectories, args.calls))
                else:
                    first, later = theirs(args.trajectories, args.calls)
                walls[side].append(time.perf_counter() - started)
                sides[side]["first"] += first
                sides[side]["later"] += later
    print(
        f"{args.trajectories} trajectories x {args.calls} calls at once, {args.rounds} rounds; "
        "latency per call in ms"
    )
    print(f"{'side':<28} {'p50':>7} {'p99':>7} {'p50 1st':>8} {'p99 1st':>8} {'p50 rest':>9} "
          f"{'wall s':>7}")  # fmt: skip
    figures: dict[str, Any] = {}
    for side, lat in sides.items():
        every = lat["first"] + lat["later"]
        row = {
            "p50_ms": pct(every, 0.5),
            "p99_ms": pct(every, 0.99),
            "first_call_p50_ms": pct(lat["first"], 0.5),
            "first_call_p99_ms": pct(lat["first"], 0.99),
            "later_calls_p50_ms": pct(lat["later"], 0.5),
            "later_calls_p99_ms": pct(lat["later"], 0.99),
            "wall_s_median": statistics.median(walls[side]),
        }
        figures[side] = row
        print(f"{side:<28} {row['p50_ms']:>7.1f} {row['p99_ms']:>7.1f} "
              f"{row['first_call_p50_ms']:>8.1f} {row['first_call_p99_ms']:>8.1f} "
              f"{row['later_calls_p50_ms']:>9.1f} {row['wall_s_median']:>7.1f}")  # fmt: skip
    write_results(
        __file__,
        args,
        {"latency": figures},
        [
            {
                "name": "latency",
                "kind": "bar",
                "title": (
                    f"Python tool calls, {args.trajectories} trajectories x {args.calls} "
                    "calls at once"
                ),
                "categories": ["p50", "p99"],
                "series": [
                    {"name": side, "values": [row["p50_ms"], row["p99_ms"]]}
                    for side, row in figures.items()
                ],
                "y_label": "ms per call, lower is better",
            }
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
