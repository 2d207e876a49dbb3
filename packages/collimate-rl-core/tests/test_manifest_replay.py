"""The replay manifest: an exec observer plugin writing JSONL, and replay."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from collimate_rl import (
    AsyncCollimateClient,
    CollimateClient,
    CollimateError,
    PropertyReward,
    Sandbox,
    grade_batch,
    grade_batch_async,
    group_seeds,
    record_manifest,
    replay_manifest,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.manifest import read_manifest
from collimate_rl.plugins import get_plugin_manager
from collimate_rl.testing.fixtures import module_backend

VOWELS = PropertyReward(
    reference="    return sum(c in 'aeiouAEIOU' for c in x)",
    generator="''.join(random.choice('abcdEIOUxyz') for _ in range(8))",
    k=8,
)
CANDIDATES = [
    "def solve(x):\n    return sum(c in 'aeiouAEIOU' for c in x)\n",
    "def solve(x):\n    return sum(c in 'aeiou' for c in x)\n",
    "def solve(x):\n    return len(x)\n",
]


backend, client = module_backend(client_scope="function")


def test_every_exec_is_recorded_and_replays_exactly(
    client: CollimateClient, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    with record_manifest(path) as manifest:
        # (pack=1: one exec per candidate, each recorded with the seed it drew)
        seeds = group_seeds(3, "vanilla")
        results = grade_batch(client, "py", CANDIDATES, VOWELS, seeds=seeds, pack=1)
        with Sandbox("py", client=client) as sb:
            sb.exec(command="echo state > /tmp/s")
            sb.exec(command="cat /tmp/s")  # state carried across execs
            sb.exec("import random; print(random.random())")
    assert manifest.count == 6
    records = read_manifest(path)
    assert len(records) == 6
    assert {r["one_shot"] for r in records[:3]} == {True}
    assert {r["seed"] for r in records[:3]} == {r.seed for r in results}  # echoed, not sent
    assert all(r["request"].get("seed") is None for r in records[:3])
    assert all(r["response"]["exit_code"] == 0 and r["elapsed_ms"] >= 0 for r in records)

    report = replay_manifest(path, client, session_template="py")
    assert report.ok, report.summary()
    assert (report.total, report.matched, report.skipped) == (6, 6, 0)


def test_a_changed_outcome_is_reported(client: CollimateClient, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with record_manifest(path):
        grade_batch(client, "py", CANDIDATES[:2], VOWELS, seeds=["ab" * 32] * 2)
    lines = path.read_text().splitlines()
    forged = json.loads(lines[1])
    forged["response"]["stdout"] = forged["response"]["stdout"].replace('"reward":', '"reward":9')
    lines[1] = json.dumps(forged)
    path.write_text("\n".join(lines) + "\n")
    report = replay_manifest(path, client)
    assert not report.ok and report.matched == 1
    assert [(m.line, m.field) for m in report.mismatches] == [(2, "stdout")]
    assert "line 2" in report.summary()


def test_failed_execs_are_recorded_and_skipped_on_replay(
    client: CollimateClient, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    with record_manifest(path), pytest.raises(CollimateError):
        client.exec_once("no-such-template", command="true")
    (record,) = read_manifest(path)
    assert record["response"] is None and record["error"]["status"] == 404
    assert record["error"]["error_code"] == "no_template"
    report = replay_manifest(path, client)
    assert report.ok and report.skipped == 1 and report.total == 0


def test_session_execs_need_a_template_to_replay(client: CollimateClient, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with record_manifest(path), Sandbox("sh", client=client) as sb:
        sb.exec(command="echo hi")
    report = replay_manifest(path, client)
    assert [m.field for m in report.mismatches] == ["error"]
    assert "session_template" in str(report.mismatches[0].replayed)
    by_id = replay_manifest(path, client, session_template={read_manifest(path)[0]["target"]: "sh"})
    assert by_id.ok


def test_async_execs_are_recorded_and_the_plugin_is_removed_after(
    backend: LocalCollimateBackend, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"

    async def run() -> None:
        async with AsyncCollimateClient(backend.base_url) as ac:
            await grade_batch_async(ac, "py", CANDIDATES, VOWELS, seeds=["cd" * 32] * 3, pack=1)

    plugins_before = len(get_plugin_manager().get_plugins())
    with record_manifest(path):
        asyncio.run(run())
    assert len(get_plugin_manager().get_plugins()) == plugins_before
    assert len(read_manifest(path)) == 3
    with CollimateClient(backend.base_url) as c:
        assert replay_manifest(path, c).ok
