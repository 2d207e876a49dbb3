"""Sandbox / AsyncSandbox / rollout_once against the real local backend."""

from __future__ import annotations

import asyncio

import pytest

from collimate_rl import (
    AsyncCollimateClient,
    AsyncSandbox,
    CollimateClient,
    CollimateError,
    ExecResult,
    Sandbox,
    rollout_once,
    rollout_once_async,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.fixtures import module_backend

SEED = "ab" * 32
#: ``random.random()`` after ``random.seed(int("ab" * 32, 16))`` (what the
#: earlier release's backend printed too).
FIRST_DRAW = "0.07092162317929696"


backend, client = module_backend(client_scope="function")


def _live(client: CollimateClient) -> set[str]:
    return {s["session_id"] for s in client.list_sessions()}


def test_exec_result_from_response() -> None:
    r = ExecResult.from_response(
        {"stdout": "hi\n", "stderr": "", "exit_code": 0, "fork_time_ms": 0.5, "seed": SEED}
    )
    assert r.ok and r.stdout == "hi\n" and r.exec_time_ms == 0.0 and r.seed == SEED
    assert r.raw["fork_time_ms"] == 0.5
    assert not ExecResult.from_response({"exit_code": -1, "stdout": "timeout after 1s"}).ok
    assert ExecResult.from_response({}).exit_code == -1  # no status is not success


def test_context_manager_forks_execs_and_reaps(client: CollimateClient) -> None:
    before = _live(client)
    with Sandbox("py", client=client) as sb:
        assert sb.session_id in _live(client)
        r = sb.exec("print('hello')")
        assert r.ok and r.stdout == "hello\n" and r.stderr == ""
        assert sb.exec(command="echo shell; exit 3").exit_code == 3
        assert sb.exec(commands=[["echo", "a b"], ["echo", "c"]]).stdout == "a b\nc\n"
        files = sb.exec(
            "print(open('/tmp/in.txt').read(), end='')",
            files=[{"path": "/tmp/in.txt", "content": "no newline"}],
        )
        assert files.stdout == "no newline\n"  # the text rule of `files`
        assert sb.fork_time_ms is not None and sb.warm_hit == (sb.fork_time_ms <= 1.0)
        assert isinstance(sb.endpoints, dict)
        assert "session=" in repr(sb)
    assert _live(client) == before


def test_state_persists_in_a_session_and_reset_forks_a_fresh_one(client: CollimateClient) -> None:
    with Sandbox("py", client=client) as sb:
        sb.exec(command="echo kept > /tmp/state")
        assert sb.exec(command="cat /tmp/state").stdout == "kept\n"
        first = sb.session_id
        assert sb.reset() is sb
        assert sb.session_id != first and first not in _live(client)
        assert sb.exec(command="cat /tmp/state 2>/dev/null || echo fresh").stdout == "fresh\n"


def test_seeds_default_and_override(client: CollimateClient) -> None:
    with Sandbox("py", client=client, default_seed=SEED) as sb:
        r = sb.exec("import random; print(random.random())")
        assert r.stdout.strip() == FIRST_DRAW and r.seed == SEED
        other = sb.exec("import random; print(random.random())", seed="cd" * 32)
        assert other.seed == "cd" * 32 and other.stdout.strip() != FIRST_DRAW
    with pytest.raises(ValueError):
        Sandbox("py", client=client, default_seed="nope")


def test_exec_needs_something_to_run(client: CollimateClient) -> None:
    with Sandbox("py", client=client) as sb, pytest.raises(ValueError):
        sb.exec()


def test_keep_on_error_leaves_the_clone_for_inspection(client: CollimateClient) -> None:
    with pytest.raises(RuntimeError), Sandbox("py", client=client, keep_on_error=True) as sb:
        kept = sb.session_id
        raise RuntimeError("the trainer crashed")
    assert kept in _live(client)
    client.delete_session(kept)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError), Sandbox("py", client=client) as sb2:
        reaped = sb2.session_id
        raise RuntimeError("the trainer crashed")
    assert reaped not in _live(client)


def test_attach_validates_and_adopt_trusts(client: CollimateClient) -> None:
    orphan = client.create_session("py")["session_id"]
    client.session_exec(orphan, command="echo from-the-dead-worker > /tmp/note")
    with Sandbox.attach(client, orphan) as sb:
        assert sb.session_id == orphan and sb.template == "py"
        assert sb.exec(command="cat /tmp/note").stdout == "from-the-dead-worker\n"
    assert orphan not in _live(client)  # the adopter reaped it
    with pytest.raises(CollimateError) as info:
        Sandbox.attach(client, "sess_does_not_exist")
    assert info.value.status == 404
    adopted = Sandbox.adopt(client, "sess_does_not_exist", template="py")  # no round trip
    assert adopted.session_id == "sess_does_not_exist" and adopted.fork_time_ms is None
    with pytest.raises(CollimateError):
        adopted.exec(command="true")
    adopted.close()  # idempotent teardown of a missing session does not raise


def test_close_is_idempotent(client: CollimateClient) -> None:
    sb = Sandbox("py", client=client).start()
    sb.close()
    sb.close()
    assert sb.session_id is None


def test_rollout_once(client: CollimateClient) -> None:
    r = rollout_once("py", code="import random; print(random.random())", seed=SEED, client=client)
    assert r.stdout.strip() == FIRST_DRAW and r.seed == SEED
    assert rollout_once("sh", command="echo $((6 * 7))", client=client).stdout == "42\n"
    with pytest.raises(ValueError):
        rollout_once("py", client=client)
    with pytest.raises(CollimateError):
        rollout_once("no-such-template", command="true", client=client)


def test_default_client_comes_from_the_environment(
    backend: LocalCollimateBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLLIMATE_SERVE_SOCKET", raising=False)
    monkeypatch.delenv("COLLIMATE_API_KEY", raising=False)
    monkeypatch.setenv("COLLIMATE_SERVE_URL", backend.base_url)
    with Sandbox("py") as sb:
        assert sb.exec("print(6 * 7)").stdout == "42\n"
    assert rollout_once("py", code="print(1)").stdout == "1\n"


def test_async_sandbox(backend: LocalCollimateBackend) -> None:
    async def run() -> None:
        async with AsyncCollimateClient(backend.base_url) as ac:
            before = {s["session_id"] for s in await ac.list_sessions()}
            async with AsyncSandbox("py", client=ac, default_seed=SEED) as sb:
                r = await sb.exec("import random; print(random.random())")
                assert r.stdout.strip() == FIRST_DRAW
                await sb.upload_bytes("/tmp/blob", b"\0\n\0")
                assert await sb.download("/tmp/blob") == b"\0\n\0"
                first = sb.session_id
                await sb.reset()
                assert sb.session_id != first
                orphan = sb.session_id
                assert orphan is not None
            assert {s["session_id"] for s in await ac.list_sessions()} == before
            live = (await ac.create_session("py"))["session_id"]
            attached = await AsyncSandbox.attach(ac, live)
            assert attached.template == "py"
            async with attached:
                assert (await attached.exec(command="echo ok")).stdout == "ok\n"
            assert {s["session_id"] for s in await ac.list_sessions()} == before
            adopted = AsyncSandbox.adopt(ac, "sess_nope", template="py")
            with pytest.raises(CollimateError):
                await adopted.exec(command="true")
            await adopted.close()
            r2 = await rollout_once_async("py", code="print(2)", client=ac)
            assert r2.stdout == "2\n"

    asyncio.run(run())
