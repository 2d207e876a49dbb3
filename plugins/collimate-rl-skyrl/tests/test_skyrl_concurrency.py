"""A training step as SkyRL's generator runs it (a row minus its prompt as
``extras``, 32 env threads), against the real backend: every rollout gets
the reward a lone grade gives, the envs of the process share one client,
and their concurrent steps really leave as packs (execs counted by core's
exec observer hook). Envs also travel to a new process, as into a Ray
worker, and grade there with that process's own client."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from collimate_rl import grade
from collimate_rl.plugins import get_plugin_manager, hookimpl
from collimate_rl.plugins.events import ExecEvent
from collimate_rl.skyrl.clients import shared_client, target_key
from collimate_rl.skyrl.harness import run_step
from collimate_rl.skyrl.settings import resolve_settings


class ExecCounter:
    """Counts the execs this process sends (every wire, every client)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.execs = 0

    @hookimpl
    def collimate_rl_after_exec(self, event: ExecEvent) -> None:
        with self.lock:
            self.execs += 1


@pytest.fixture
def counter() -> Iterator[ExecCounter]:
    rec = ExecCounter()
    pm = get_plugin_manager()
    pm.register(rec, name="skyrl-test-exec-counter")
    try:
        yield rec
    finally:
        pm.unregister(rec)


def test_a_256_rollout_step_from_32_threads_is_graded_in_packs(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any], counter: ExecCounter
) -> None:
    dataset = [rows.mbpp(i) for i in range(32)]

    def respond(row: int, sample: int, turn: int, history: list[dict[str, str]]) -> str:
        return rows.RIGHT if (row + sample) % 3 else rows.WRONG

    outs = run_step(dataset, respond, n_samples=8, env_config=target, max_env_workers=32)
    assert len(outs) == 256
    assert [o.rewards for o in outs] == [[1.0 if (o.row + o.sample) % 3 else 0.5] for o in outs]
    # one seed per prompt, 32 prompts 32 seeds
    seeds = {o.row: {o.metadata[0]["seed"]} for o in outs}
    for o in outs:
        seeds[o.row].add(o.metadata[0]["seed"])
    assert all(len(s) == 1 for s in seeds.values()) and len(set.union(*seeds.values())) == 32
    # the 256 concurrent steps left as packs: far fewer execs than rollouts
    packed = sum(o.metadata[0]["packed"] for o in outs)
    assert counter.execs < 256 / 4, counter.execs
    assert packed >= 200, packed
    # and each reward is the one a lone, uncoalesced grade of the same row gives
    client = shared_client(resolve_settings(target, {}))
    for o in outs[:: 256 // 16]:
        env = skyrl_gym_module.make(
            "collimate_code", env_config=target, extras=rows.extras(dataset[o.row])
        )
        alone = grade(
            client,
            env.settings.template_id,
            o.metadata[0]["parsed_code"],
            env.task.spec,
            seed=o.metadata[0]["seed"],
            coalesce=False,
        )
        assert (alone.reward, alone.seed, "pack" in alone.raw) == (
            o.rewards[0],
            o.metadata[0]["seed"],
            False,
        )


def test_the_envs_of_a_process_share_one_client_per_target(
    rows: Any, skyrl_gym_module: Any, backend: Any
) -> None:
    def env(cfg: dict[str, Any]) -> Any:
        return skyrl_gym_module.make(
            "collimate_code", env_config=cfg, extras=rows.extras(rows.mbpp(1))
        )

    tcp, unix = {"base_url": backend.base_url}, {"socket": backend.socket_path}
    made: list[Any] = []
    threads = [
        threading.Thread(target=lambda: made.append(shared_client(env(tcp).settings)))
        for _ in range(16)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 16 and all(c is made[0] for c in made)
    assert shared_client(env(unix).settings) is not made[0]
    assert target_key(env(tcp).settings) != target_key(env(unix).settings)


CHILD = """
import json, os, pickle, sys
from collimate_rl.skyrl import clients
env = pickle.loads(sys.stdin.buffer.read())
out = env.step({completion!r})
print(json.dumps([out["reward"], out["metadata"]["seed"], len(clients._clients), os.getpid()]))
"""


def test_an_env_pickled_into_a_new_process_grades_there(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = skyrl_gym_module.make(
        "collimate_code", env_config=target, extras=rows.extras(rows.mbpp(6))
    )
    data = pickle.dumps(env)  # as SkyRL ships work into a Ray worker
    here = env.step(rows.RIGHT)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(completion=rows.RIGHT)],
        input=data,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    reward, seed, clients_there, _pid = json.loads(proc.stdout)
    assert (reward, seed, clients_there) == (1.0, here["metadata"]["seed"], 1)
