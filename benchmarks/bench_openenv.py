"""OpenEnv Mode A: what running the environment server as a sandbox costs.
(Not a test.)

Side by side, in one run, on one local backend:

* **start**: ``CollimateProvider.start_container`` + ``wait_for_ready`` of the
  code environment's server (a session of the ``collimate-code-env`` app
  template: a namespaced clone, its own uid and private root) against the same
  server started as a plain subprocess on the host until ``/health`` answers;
* **step**: one ``reset`` + ``step`` over ``/ws`` with OpenEnv's own async
  client (the server grades through the backend) against the same grade
  called directly from the trainer (``grade_async``, Mode B), one after
  another; p50 and p90;
* **8 at once**: 8 sessions stepping together, steps per second.

Needs an OpenEnv line and ``openenv-collimate-code``:

    hatch run openenv:python benchmarks/bench_openenv.py [--starts 3] [--steps 30]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from typing import Any

from _results import add_out_option, write_results

RIGHT = "def add(a, b):\n    return a + b\n"
IMAGE = "collimate-code-env:latest"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as resp:  # loopback
            return bool(resp.status == 200)
    except OSError:
        return False


def plain_start(grader_url: str) -> float:
    """The server as a host subprocess, no sandbox: seconds to /health."""
    port = free_port()
    env = {**os.environ, "COLLIMATE_SERVE_URL": grader_url}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "collimate_code.server", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not healthy(f"http://127.0.0.1:{port}"):
            if proc.poll() is not None:
                raise RuntimeError("the plain server exited")
            time.sleep(0.05)
        return time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def provider_start(base_url: str) -> float:
    from collimate_rl.openenv import CollimateProvider

    with CollimateProvider(base_url, env_vars={"COLLIMATE_SERVE_URL": base_url}) as provider:
        t0 = time.perf_counter()
        url = provider.start_container(IMAGE)
        provider.wait_for_ready(url)
        return time.perf_counter() - t0


async def ws_steps(base_url: str, n: int) -> list[float]:
    from collimate_code import CollimateCodeAction, CollimateCodeEnv

    from collimate_rl.openenv import CollimateProvider

    provider = CollimateProvider(base_url, env_vars={"COLLIMATE_SERVE_URL": base_url})
    env = await CollimateCodeEnv.from_docker_image(IMAGE, provider=provider)
    out = []
    try:
        for i in range(n + 3):
            t0 = time.perf_counter()
            await env.reset(index=0)
            result = await env.step(CollimateCodeAction(code=RIGHT))
            assert result.reward == 1.0
            if i >= 3:
                out.append(time.perf_counter() - t0)
    finally:
        await env.close()
    return out


async def direct_grades(base_url: str, n: int) -> list[float]:
    from collimate_code.problems import load_problems

    from collimate_rl import connect_async, grade_async

    spec = load_problems()[0].spec
    out = []
    async with connect_async(base_url) as client:
        for i in range(n + 3):
            t0 = time.perf_counter()
            result = await grade_async(client, "dkr-python311", RIGHT, spec)
            assert result.reward == 1.0
            if i >= 3:
                out.append(time.perf_counter() - t0)
    return out


async def parallel_steps(base_url: str, sessions: int, steps: int) -> float:
    from collimate_code import CollimateCodeAction, CollimateCodeEnv

    from collimate_rl.openenv import CollimateProvider

    def provider() -> Any:
        return CollimateProvider(base_url, env_vars={"COLLIMATE_SERVE_URL": base_url})

    envs = []
    try:
        for _ in range(sessions):  # OpenEnv starts providers synchronously
            envs.append(await CollimateCodeEnv.from_docker_image(IMAGE, provider=provider()))

        async def run(env: Any) -> None:
            for _ in range(steps):
                await env.reset(index=0)
                assert (await env.step(CollimateCodeAction(code=RIGHT))).reward == 1.0

        t0 = time.perf_counter()
        await asyncio.gather(*(run(e) for e in envs))
        return sessions * steps / (time.perf_counter() - t0)
    finally:
        for env in envs:
            await env.close()


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=10)[int(q * 10) - 1] if len(values) > 1 else values[0]


def main() -> int:
    if (
        importlib.util.find_spec("openenv") is None
        or importlib.util.find_spec("collimate_code") is None
    ):
        print("skipped: needs an OpenEnv line and openenv-collimate-code "
              "(hatch run openenv:python benchmarks/bench_openenv.py)")  # fmt: skip
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=8)
    add_out_option(parser)
    args = parser.parse_args()

    from collimate_rl.local_backend import LocalCollimateBackend

    with LocalCollimateBackend() as backend:
        url = backend.base_url
        isolation = backend.server.health()["isolation"]
        starts: dict[str, list[float]] = {"sandboxed session": [], "plain subprocess": []}
        for _ in range(args.starts):  # interleaved
            starts["sandboxed session"].append(provider_start(url))
            starts["plain subprocess"].append(plain_start(url))
        ws = asyncio.run(ws_steps(url, args.steps))
        direct = asyncio.run(direct_grades(url, args.steps))
        rate = asyncio.run(parallel_steps(url, args.sessions, max(3, args.steps // 3)))
        left = backend.server.health()["sessions"]

    print(f"local backend, isolation {isolation}; {os.cpu_count()} CPUs")
    print(f"{'measure':46} {'p50':>9} {'p90':>9}")
    for name, values in starts.items():
        print(f"start: {name:39} {p(values, 0.5):8.2f}s {p(values, 0.9):8.2f}s")
    ws_ms = (p(ws, 0.5) * 1e3, p(ws, 0.9) * 1e3)
    print(f"{'step: reset+step over /ws (Mode A)':46} {ws_ms[0]:7.1f}ms {ws_ms[1]:7.1f}ms")
    print(f"{'step: grade_async from the trainer (Mode B)':46} "
          f"{p(direct, .5)*1e3:7.1f}ms {p(direct, .9)*1e3:7.1f}ms")  # fmt: skip
    s_ratio = p(starts["sandboxed session"], 0.5) / p(starts["plain subprocess"], 0.5)
    print(f"ratio start sandboxed / plain (p50): {s_ratio:.2f}x")
    print(f"ratio step Mode A / Mode B (p50):    {p(ws, 0.5) / p(direct, 0.5):.2f}x")
    print(f"{args.sessions} sessions stepping at once:   {rate:.1f} steps/s")
    print(f"sessions left after the run: {left}")
    figures = {
        "isolation": isolation,
        "start_s": starts,
        "start_p50_s": {name: p(values, 0.5) for name, values in starts.items()},
        "step_ms": {
            "reset + step over /ws (Mode A)": {"p50": ws_ms[0], "p90": ws_ms[1]},
            "grade_async from the trainer (Mode B)": {
                "p50": p(direct, 0.5) * 1e3,
                "p90": p(direct, 0.9) * 1e3,
            },
        },
        "sessions": args.sessions,
        "steps_per_s_at_once": rate,
        "sessions_left": left,
    }
    write_results(__file__, args, figures, [])
    return 0 if left == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
