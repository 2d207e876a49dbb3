"""Mode A end to end: OpenEnv's own clients start the code environment's
server (OpenEnv's ``create_app``) as a local-backend session through
CollimateProvider, and run episodes over ``/ws``; rewards come from
collimate-rl. Runs with whichever OpenEnv line is installed: ``openenv`` 0.10
(sync and async) or ``openenv-core`` 0.3 (async only)."""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from collimate_rl import connect
from collimate_rl.local_backend import LocalCollimateBackend

IMAGE = "collimate-code-env:latest"  # the image AutoEnv derives from the name
RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "Here you go:\n```python\ndef add(a, b):\n    return a - b\n```\n"
ROW = {
    "id": "mul",
    "prompt": "Write mul(a, b).",
    "ground_truth": {"test_list": ["assert mul(2, 3) == 6", "assert mul(0, 5) == 0"]},
}

pytestmark = pytest.mark.usefixtures("openenv_line")


def provider(backend: LocalCollimateBackend, target: str | None = None, **kw: Any) -> Any:
    from collimate_rl.openenv import CollimateProvider

    grader = {"COLLIMATE_SERVE_URL": backend.base_url}  # where the server grades
    return CollimateProvider(target or backend.base_url, env_vars=grader, **kw)


def action(code: str) -> Any:
    from collimate_code import CollimateCodeAction

    return CollimateCodeAction(code=code)


def check_right_then_wrong(first: Any, right: Any, again: Any, wrong: Any) -> None:
    assert first.observation.problem_id == "add" and "add(a, b)" in first.observation.prompt
    assert first.reward is None and not first.done and first.observation.tests == []
    assert (right.reward, right.done, right.observation.verdict) == (1.0, True, "passed")
    assert right.observation.passed == right.observation.total == 3
    assert [t["passed"] for t in right.observation.tests] == [True, True, True]
    assert again.observation.problem_id == "add"
    assert (wrong.reward, wrong.done, wrong.observation.verdict) == (0.0, True, "failed")
    assert wrong.observation.passed == 0 and wrong.observation.total == 3
    assert {t["reason"] for t in wrong.observation.tests} == {"wrong_answer"}
    # the tests themselves never reach the policy
    assert "add(1, 2) == 3" not in repr(wrong.observation)


def no_sessions(backend: LocalCollimateBackend) -> bool:
    return connect(backend.base_url).list_sessions() == []


def test_from_docker_image_async_over_each_transport(
    backend: LocalCollimateBackend, target: str, server_pids: Any
) -> None:
    from collimate_code import CollimateCodeEnv

    async def episode() -> None:
        env = await CollimateCodeEnv.from_docker_image(IMAGE, provider=provider(backend, target))
        try:
            first = await env.reset(index=0)
            right = await env.step(action(RIGHT))
            again = await env.reset(index=0)
            wrong = await env.step(action(WRONG))
            (session,) = connect(backend.base_url).list_sessions()
            assert session["template_id"] == "collimate-code-env"
        finally:
            await env.close()
        check_right_then_wrong(first, right, again, wrong)

    asyncio.run(episode())
    assert no_sessions(backend) and server_pids() == []


def test_sync_client(backend: LocalCollimateBackend, openenv_line: str) -> None:
    from collimate_code import CollimateCodeEnv

    if openenv_line == "0.10":
        env = CollimateCodeEnv.from_docker_image(IMAGE, provider=provider(backend)).sync()
    else:
        # 0.3's from_docker_image is a coroutine only; its sync client wraps a
        # client made on the provider's URL (its documented sync use)
        p = provider(backend)
        base_url = p.start_container(IMAGE)
        p.wait_for_ready(base_url)
        env = CollimateCodeEnv(base_url=base_url, provider=p).sync()
    with env:
        first = env.reset(index=0)
        right = env.step(action(RIGHT))
        again = env.reset(index=0)
        wrong = env.step(action(WRONG))
        posed = env.reset(row=ROW, max_attempts=2)
        miss = env.step(action("def mul(a, b):\n    return a * b if a else 1\n"))
        hit = env.step(action("def mul(a, b):\n    return a * b\n"))
    check_right_then_wrong(first, right, again, wrong)
    assert posed.observation.problem_id == "mul" and posed.observation.attempts_left == 2
    assert miss.reward == 0.5 and not miss.done and miss.observation.attempts_left == 1
    assert [t["passed"] for t in miss.observation.tests] == [True, False]
    assert hit.reward == 1.0 and hit.done
    assert no_sessions(backend)


@pytest.fixture
def fresh_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenEnv caches discovery on disk (0.10: $XDG_CACHE_HOME/openenv, 0.3: the
    temp dir): point both at an empty directory and drop the in-memory one."""
    from openenv.auto import _discovery

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(_discovery, "_global_discovery", None)


@pytest.mark.usefixtures("fresh_discovery")
def test_autoenv_finds_the_environment_by_name(
    backend: LocalCollimateBackend, openenv_line: str
) -> None:
    from collimate_code import CollimateCodeEnv
    from openenv import AutoEnv

    info = AutoEnv.get_env_info("collimate-code")
    assert info["default_image"] == IMAGE
    assert AutoEnv.get_env_class("collimate_code_env") is CollimateCodeEnv
    env = AutoEnv.from_env("collimate_code", container_provider=provider(backend), wait_timeout=60)
    assert isinstance(env, CollimateCodeEnv)
    if openenv_line == "0.10":
        try:  # outside an event loop, 0.10's client answers synchronously
            results = [
                env.reset(index=0),
                env.step(action(RIGHT)),
                env.reset(index=0),
                env.step(action(WRONG)),
            ]
        finally:
            env.close()
    else:

        async def episode() -> list[Any]:
            # 0.3's AutoEnv connected on a loop that is gone: reconnect on this one
            await env.disconnect()
            try:
                return [
                    await env.reset(index=0),
                    await env.step(action(RIGHT)),
                    await env.reset(index=0),
                    await env.step(action(WRONG)),
                ]
            finally:
                await env.close()

        results = asyncio.run(episode())
    check_right_then_wrong(*results)
    assert no_sessions(backend)


def test_an_unreachable_grader_is_an_error_not_a_zero(backend: LocalCollimateBackend) -> None:
    from collimate_code import CollimateCodeEnv

    from collimate_rl.openenv import CollimateProvider

    dead = CollimateProvider(
        backend.base_url,
        env_vars={"COLLIMATE_SERVE_URL": "http://127.0.0.1:9", "COLLIMATE_CODE_TIMEOUT_S": "5"},
    )

    async def episode() -> None:
        env = await CollimateCodeEnv.from_docker_image(IMAGE, provider=dead)
        try:
            await env.reset(index=0)
            with pytest.raises(RuntimeError, match="Server error"):
                await env.step(action(RIGHT))
        finally:
            await env.close()

    asyncio.run(episode())
    assert no_sessions(backend)


@pytest.mark.slow
def test_24_concurrent_persistent_sessions_then_nothing_left(
    backend: LocalCollimateBackend, server_pids: Any
) -> None:
    """24 clients, each its own server (session), all connected over /ws at
    once; each runs its episode, then everything is reaped."""
    from collimate_code import CollimateCodeEnv

    n = 24
    all_open = threading.Barrier(n + 1, timeout=900)
    all_checked = threading.Barrier(n + 1, timeout=900)
    outcomes: list[Any] = [None] * n

    async def episode(i: int) -> None:
        env = await CollimateCodeEnv.from_docker_image(IMAGE, provider=provider(backend))
        try:
            posed = await env.reset(index=i)
            await asyncio.to_thread(all_open.wait)  # every session is live now
            await asyncio.to_thread(all_checked.wait)
            code = RIGHT if posed.observation.problem_id == "add" else "def nothing(): pass"
            outcomes[i] = (posed.observation.problem_id, await env.step(action(code)))
        finally:
            await env.close()

    def run(i: int) -> None:
        try:
            asyncio.run(episode(i))
        except BaseException as exc:
            outcomes[i] = exc
            all_open.abort()
            all_checked.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    live: list[Any] = []
    servers: list[Any] = []
    try:
        all_open.wait()
        live = connect(backend.base_url).list_sessions()
        servers = server_pids()
        # a census of /proc is a snapshot: on a loaded machine one server's
        # files may be unreadable for a moment (its process is live all along:
        # every episode below is served by its own); look again a while
        deadline = time.monotonic() + 30
        while len(servers) < n and time.monotonic() < deadline:
            time.sleep(0.5)
            servers = server_pids()
        all_checked.wait()
    except threading.BrokenBarrierError:
        pass  # a session failed: its own error is in outcomes, reported below
    finally:
        for t in threads:
            t.join(timeout=900)
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    errors = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)] or errors
    assert not errors, errors
    assert len(live) == n and {s["template_id"] for s in live} == {"collimate-code-env"}
    assert len(servers) == n  # one server process per session, all at once
    for problem_id, result in outcomes:
        assert result.done
        assert result.reward == (1.0 if problem_id == "add" else 0.0)
    assert no_sessions(backend)
    assert server_pids() == []
