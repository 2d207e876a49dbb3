"""A SkyRL training step through ``collimate_code`` (not a test): 32 prompts x
8 rollouts built as SkyRL's generator builds them, against the same rows
graded one at a time with no coalescing.

Why: SkyRL steps its envs one rollout each, in a thread pool; this shows
what core's coalescing makes of that.

Side "generator, 32 env threads": ``collimate_rl.skyrl.harness.run_step``,
which makes every env with the real ``skyrl_gym.make("collimate_code",
env_config=..., extras=<row minus prompt>)`` and runs ``init`` / ``step`` /
``close`` in a ``ThreadPoolExecutor(32)``, SkyRL's default
``max_env_workers``; the envs share the process's client and core packs
their concurrent grades. Side "one at a time": one thread, each rollout's
extracted code graded by ``grade(..., coalesce=False)`` with the same spec
and seed, one exec each. Both must give the same rewards (checked).

Rows are MBPP (asserts), LiveCodeBench stdin and APPS call-based prompts;
each prompt has 8 completions (right, right another way, off by one, wrong,
crashing, ...). The local backend runs as a process of its own.

    python benchmarks/bench_skyrl_step.py [--rounds 3] [--prompts 32] [--samples 8]
    hatch run bench:one benchmarks/bench_skyrl_step.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from typing import Any

from _results import add_out_option, write_results
from _sides import ours_backend

from collimate_rl import CollimateClient, extract_code, grade
from collimate_rl.plugins import get_plugin_manager, hookimpl
from collimate_rl.plugins.events import ExecEvent
from collimate_rl.skyrl import register
from collimate_rl.skyrl.clients import close_shared_clients
from collimate_rl.skyrl.harness import Rollout, run_step
from collimate_rl.skyrl.rows import read_task
from collimate_rl.skyrl.settings import resolve_settings

TEMPLATE = "dkr-python311"


def fenced(code: str) -> str:
    return f"Here is my answer.\n```python\n{code}```\n"


def mbpp(k: int) -> tuple[dict[str, Any], list[str]]:
    gt = {"test_list": [f"assert shift({x}) == {x + k}" for x in (1, 5, -3, 40)]}
    right = f"def shift(x):\n    return x + {k}\n"
    return {"ground_truth": gt, "entry": "shift"}, [
        right,
        f"def shift(x):\n    y = x\n    for _ in range({k}):\n        y += 1\n    return y\n",
        f"def shift(x):\n    return x + {k + 1}\n",
        f"def shift(x):\n    return x + {k} if x > 0 else x\n",
        "def shift(x):\n    return None\n",
        "def shift(x):\n    raise RuntimeError('no')\n",
        "def shift(x)\n    return x\n",  # does not compile
        right,
    ]


def lcb_stdin(k: int) -> tuple[dict[str, Any], list[str]]:
    gt = [{"input": f"{n}\n", "output": f"{n * n + k}", "testtype": "stdin"} for n in (1, 2, 7, 12)]
    right = f"n = int(input())\nprint(n * n + {k})\n"
    return {"ground_truth": json.dumps(gt)}, [
        right,
        f"import sys\nn = int(sys.stdin.read())\nsys.stdout.write(str(n ** 2 + {k}) + '\\n')\n",
        f"n = int(input())\nprint(n * n + {k + 1})\n",
        f"n = int(input())\nprint(n * n + {k} if n < 5 else 0)\n",
        "print('hello')\n",
        "import os\nos._exit(3)\n",
        f"n = int(input())\nprint(n + n + {k})\n",
        right,
    ]


def apps(k: int) -> tuple[dict[str, Any], list[str]]:
    io = {
        "fn_name": "clip",
        "inputs": [[x, k] for x in (-5, 0, 3, 10)],
        "outputs": [[max(x, k)] for x in (-5, 0, 3, 10)],
    }
    right = "def clip(x, k):\n    return max(x, k)\n"
    return {"ground_truth": {"input_output": json.dumps(io)}}, [
        right,
        "class Solution:\n    def clip(self, x, k):\n        return x if x > k else k\n",
        "def clip(x, k):\n    return min(x, k)\n",
        "def clip(x, k):\n    return x\n",
        "def clip(x, k):\n    return k\n",
        "def clip(*a):\n    return max(a)\n",
        "def clip(x, k):\n    return [max(x, k)]\n",
        right,
    ]


def dataset(prompts: int) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """SkyRL rows (prompt, env_class, data_source, reward_spec, extra_info) and
    the completions the "model" gives for each."""
    makers = [("mbpp", mbpp), ("livecodebench", lcb_stdin), ("apps", apps)]
    rows, answers = [], []
    for p in range(prompts):
        source, maker = makers[p % len(makers)]
        reward_spec, completions = maker(p // len(makers) + 1)
        rows.append(
            {
                "prompt": [{"role": "user", "content": f"Solve problem {p}."}],
                "env_class": "collimate_code",
                "data_source": source,
                "reward_spec": reward_spec,
                "extra_info": {"split": "train", "index": p},
            }
        )
        answers.append([fenced(c) for c in completions])
    return rows, answers


class ExecCounter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.execs = 0

    @hookimpl
    def collimate_rl_after_exec(self, event: ExecEvent) -> None:
        with self.lock:
            self.execs += 1


def generator_side(
    rows: list[dict[str, Any]], answers: list[list[str]], samples: int, env_config: dict[str, Any]
) -> tuple[float, list[float]]:
    def respond(row: int, sample: int, turn: int, history: list[dict[str, str]]) -> str:
        return answers[row][sample % len(answers[row])]

    t0 = time.perf_counter()
    outs: list[Rollout] = run_step(
        rows, respond, n_samples=samples, env_config=env_config, max_env_workers=32
    )
    return time.perf_counter() - t0, [o.reward for o in outs]


def one_at_a_time_side(
    client: CollimateClient,
    rows: list[dict[str, Any]],
    answers: list[list[str]],
    samples: int,
    env_config: dict[str, Any],
) -> tuple[float, list[float]]:
    settings = resolve_settings(env_config, {})
    tasks = [read_task(settings, {k: v for k, v in r.items() if k != "prompt"}) for r in rows]
    t0 = time.perf_counter()
    rewards = []
    for r, task in enumerate(tasks):
        for s in range(samples):
            code = extract_code(answers[r][s % len(answers[r])], task.entry)
            result = grade(client, TEMPLATE, code, task.spec, seed=task.seed, coalesce=False)
            rewards.append(result.reward)
    return time.perf_counter() - t0, rewards


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--samples", type=int, default=8)
    add_out_option(ap)
    args, _ = ap.parse_known_args(argv)

    try:
        register()
    except ImportError:
        print("skyrl-gym is not installed here: use hatch run bench:one ...")
        return 2
    rows, answers = dataset(args.prompts)
    n = args.prompts * args.samples
    counter = ExecCounter()
    get_plugin_manager().register(counter, name="bench-skyrl-exec-counter")
    sides = ("generator, 32 env threads", "one at a time, no coalescing")
    times: dict[str, list[float]] = {s: [] for s in sides}
    execs: dict[str, list[int]] = {s: [] for s in sides}
    agree = True
    print(f"{args.prompts} prompts x {args.samples} rollouts = {n} rollouts per step")
    with ours_backend() as url, CollimateClient(url) as client:
        env_config = {"base_url": url}
        generator_side(rows[:4], answers[:4], 4, env_config)  # warm-up
        for rnd in range(1, args.rounds + 1):
            before = counter.execs
            dt_g, rewards_g = generator_side(rows, answers, args.samples, env_config)
            execs[sides[0]].append(counter.execs - before)
            before = counter.execs
            dt_o, rewards_o = one_at_a_time_side(client, rows, answers, args.samples, env_config)
            execs[sides[1]].append(counter.execs - before)
            times[sides[0]].append(dt_g)
            times[sides[1]].append(dt_o)
            same = rewards_g == rewards_o
            agree = agree and same
            print(
                f"round {rnd}: generator {n / dt_g:6.1f} rollouts/s ({execs[sides[0]][-1]} execs)  "
                f"one at a time {n / dt_o:6.1f}/s ({execs[sides[1]][-1]} execs)  "
                f"rewards agree: {same}",
                flush=True,
            )
        close_shared_clients()
    med = {s: statistics.median(v) for s, v in times.items()}
    print()
    print(f"{'side':<32} {'median s/step':>14} {'rollouts/s':>11} {'execs/step':>11}")
    for s in sides:
        print(f"{s:<32} {med[s]:>14.2f} {n / med[s]:>11.1f} {statistics.median(execs[s]):>11.0f}")
    print(f"ratio generator / one at a time: {med[sides[1]] / med[sides[0]]:.1f}x")
    mean = sum(rewards_g) / n
    print(f"mean reward {mean:.3f}; rewards identical both ways: {agree}")
    rates = {side: [n / t for t in v] for side, v in times.items()}
    write_results(
        __file__,
        args,
        {
            "rollouts_per_step": n,
            "rollouts_per_s": rates,
            "execs_per_step": execs,
            "rewards_agree": agree,
        },
        [
            {
                "name": "step",
                "kind": "bar",
                "title": f"A SkyRL step of {n} rollouts (median of {args.rounds} rounds)",
                "categories": ["rollouts/s"],
                "series": [
                    {"name": side, "values": [statistics.median(r)]} for side, r in rates.items()
                ],
                "y_label": "rollouts graded per second, higher is better",
            }
        ],
    )
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
