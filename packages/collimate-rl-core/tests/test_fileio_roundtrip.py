"""Byte-exact upload_bytes / download: the protocol pieces, then round trips
and failures against the real local backend (sync and async)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from collimate_rl import (
    AsyncCollimateClient,
    AsyncSandbox,
    CollimateClient,
    CollimateError,
    CollimateTaskError,
    Sandbox,
)
from collimate_rl.fileio import (
    DOWNLOAD_CAP_BYTES,
    DownloadFrame,
    download_command,
    parse_download,
    upload_plan,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.fixtures import module_backend

PAYLOADS = {
    "empty": b"",
    "nul_filled": b"\0" * 4096,
    "no_trailing_newline": b"last line without newline",
    "only_newlines": b"\n\n\n",
    "crlf_and_high_bytes": bytes(range(256)) + b"\r\n\r",
    "random_5mib": os.urandom(5 * 1024 * 1024),
}


backend, client = module_backend(client_scope="function")


@pytest.fixture
def sandbox(client: CollimateClient) -> Iterator[Sandbox]:
    with Sandbox("sh", client=client) as sb:
        yield sb


# -- the protocol, no backend --------------------------------------------------------


def test_upload_plan_chunks_verifies_and_moves_last() -> None:
    plan = upload_plan("/task/in put.bin", b"x" * 20, chunk_chars=8)
    assert len(plan.steps) == 4  # 28 base64 chars in chunks of 8
    assert (
        "mkdir -p /task" in plan.steps[0]
        and "> '/task/in put.bin.collimate-upload-" in (plan.steps[0])
    )
    assert all(">> " in s for s in plan.steps[1:])
    assert "sha256sum" in plan.steps[-1] and "mv -f" in plan.steps[-1]
    assert not any("mv -f" in s for s in plan.steps[:-1])
    assert plan.cleanup.startswith("rm -f ")
    with pytest.raises(ValueError):
        upload_plan("", b"")
    with pytest.raises(TypeError):
        upload_plan("/x", "text")  # type: ignore[arg-type]


def _frame_output(frame: DownloadFrame, data: bytes, before: str = "", after: str = "") -> str:
    import base64

    digest = hashlib.sha256(data).hexdigest()
    return (
        f"{before}{frame.sentinel}-BEGIN {len(data)} {digest}\n"
        f"{base64.b64encode(data).decode()}\n{frame.sentinel}-END\n{after}"
    )


def test_parse_download_ignores_noise_outside_the_frame() -> None:
    frame = download_command("/f")
    out = _frame_output(frame, b"\0abc", before="warning: x\n", after="atexit noise\n")
    assert parse_download(frame, {"exit_code": 0, "stdout": out}) == b"\0abc"
    assert frame.sentinel != download_command("/f").sentinel  # fresh per call


@pytest.mark.parametrize(
    ("corrupt", "why"),
    [
        (lambda out, s: out.replace(f"{s}-END\n", ""), "0 end"),
        (lambda out, s: out + f"{s}-END\n", "2 end"),
        (lambda out, s: out.replace(f"{s}-BEGIN", f"{s}-BEGIN", 1) * 2, "2 begin"),
        (lambda out, s: out.replace(f"\n{s}-END", f"\nextra line\n{s}-END"), "lines between"),
        (lambda out, s: re.sub(r"\n([A-Za-z0-9+/=]{4})", r"\n\1QUJD", out, count=1), "size/sha256"),
        (lambda out, s: re.sub(r"\n([A-Za-z0-9+/=]{4})", r"\n\1!!", out, count=1), "base64"),
        (lambda out, s: out.replace("-BEGIN 4 ", "-BEGIN four "), "header"),
        (lambda out, s: out.replace(f"{s}-BEGIN", f"{s}-BEGIN {s}"), "begin"),
    ],
)
def test_parse_download_rejects_a_broken_frame(
    corrupt: Callable[[str, str], str], why: str
) -> None:
    frame = download_command("/f")
    out = corrupt(_frame_output(frame, b"\0abc"), frame.sentinel)
    with pytest.raises(CollimateTaskError, match="corrupted frame") as info:
        parse_download(frame, {"exit_code": 0, "stdout": out})
    assert why.split()[0] in str(info.value)
    assert info.value.output == out


# -- round trips against the backend ----------------------------------------------


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_round_trip_is_byte_exact(sandbox: Sandbox, name: str) -> None:
    data = PAYLOADS[name]
    path = f"/tmp/io/{name}.bin"
    sandbox.upload_bytes(path, data)
    guest = sandbox.exec(command=f"wc -c < {path}; sha256sum {path}").stdout.split()
    assert int(guest[0]) == len(data) and guest[1] == hashlib.sha256(data).hexdigest()
    assert sandbox.download(path) == data
    assert "collimate-upload" not in sandbox.exec(command="ls -a /tmp/io").stdout


def test_upload_replaces_an_existing_file_exactly(sandbox: Sandbox) -> None:
    sandbox.upload_bytes("/tmp/f", b"a much longer original content\n")
    sandbox.upload_bytes("/tmp/f", b"short")
    assert sandbox.download("/tmp/f") == b"short"


def test_missing_file_is_a_task_error(sandbox: Sandbox) -> None:
    with pytest.raises(CollimateTaskError, match="no such file") as info:
        sandbox.download("/tmp/does/not/exist")
    assert info.value.exit_code == 2 and "no such file" in info.value.output


def test_an_over_cap_download_fails_in_the_guest_with_a_clear_message(sandbox: Sandbox) -> None:
    size = DOWNLOAD_CAP_BYTES + 1
    assert sandbox.exec(command=f"head -c {size} /dev/zero > /tmp/big").ok
    with pytest.raises(CollimateTaskError, match="over the download cap") as info:
        sandbox.download("/tmp/big")
    assert info.value.exit_code == 5 and str(size) in info.value.output


def test_an_unwritable_target_is_a_task_error(sandbox: Sandbox) -> None:
    with pytest.raises(CollimateTaskError) as info:
        sandbox.upload_bytes("/proc/collimate-test/x.bin", b"data")
    assert info.value.exit_code not in (0, None) and info.value.output


class _Tamper:
    """The real client, with the answer or the request of some execs
    altered in transit (what a real server cannot do on demand)."""

    def __init__(self, inner: CollimateClient) -> None:
        self.inner = inner
        self.execs = 0
        self.on_request: Callable[[int, dict[str, Any]], None] | None = None
        self.on_answer: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def session_exec(self, session_id: str, **kw: Any) -> dict[str, Any]:
        self.execs += 1
        if self.on_request is not None:
            self.on_request(self.execs, kw)
        answer = self.inner.session_exec(session_id, **kw)
        return self.on_answer(answer) if self.on_answer is not None else answer


def test_a_frame_corrupted_in_transit_raises(client: CollimateClient) -> None:
    tamper = _Tamper(client)
    with Sandbox("sh", client=tamper) as sb:  # type: ignore[arg-type]
        sb.upload_bytes("/tmp/t.bin", b"\0payload\0" * 100)
        tamper.on_answer = lambda a: {
            **a,
            "stdout": re.sub(r"(-BEGIN [^\n]*\n.{10})", r"\1NOISE", a["stdout"], count=1),
        }
        with pytest.raises(CollimateTaskError, match=r"sha256|base64"):
            sb.download("/tmp/t.bin")
        tamper.on_answer = lambda a: {**a, "stdout": a["stdout"] + a["stdout"]}
        with pytest.raises(CollimateTaskError, match="2 begin"):
            sb.download("/tmp/t.bin")


def test_a_failed_upload_never_leaves_a_truncated_target(client: CollimateClient) -> None:
    tamper = _Tamper(client)
    original = b"the original, intact\n"
    new = os.urandom(300 * 1024)  # 4 chunks
    with Sandbox("sh", client=tamper) as sb:  # type: ignore[arg-type]
        sb.upload_bytes("/tmp/target", original)
        start = tamper.execs

        def corrupt_chunk(n: int, kw: dict[str, Any]) -> None:  # in-guest sha256 catches it
            if n == start + 2:
                kw["command"] = re.sub(
                    r"printf '%s' '(.{4})",
                    lambda m: "printf '%s' '" + ("AAAA" if m.group(1) != "AAAA" else "BBBB"),
                    kw["command"],
                    count=1,
                )

        tamper.on_request = corrupt_chunk
        with pytest.raises(CollimateTaskError, match="upload") as info:
            sb.upload_bytes("/tmp/target", new)
        assert info.value.exit_code == 91  # sha256 mismatch, found in the guest
        start = tamper.execs

        def die(n: int, kw: dict[str, Any]) -> None:  # the control plane fails mid-upload
            if n == start + 2:
                raise CollimateError("injected: node lost", 502, "bad_gateway")

        tamper.on_request = die
        with pytest.raises(CollimateError, match="injected") as infra:
            sb.upload_bytes("/tmp/target", new)
        assert not isinstance(infra.value, CollimateTaskError)
        tamper.on_request = None
        assert sb.download("/tmp/target") == original
        assert "collimate-upload" not in sb.exec(command="ls -a /tmp").stdout


def test_infra_failures_stay_plain_collimate_errors() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = CollimateClient(f"http://127.0.0.1:{port}", retries=0)
    sb = Sandbox.adopt(dead, "sess_x", template="sh")
    for call in (lambda: sb.download("/x"), lambda: sb.upload_bytes("/x", b"1")):
        with pytest.raises(CollimateError) as info:
            call()
        assert not isinstance(info.value, CollimateTaskError)


def test_async_round_trip_and_failures(backend: LocalCollimateBackend) -> None:
    data = PAYLOADS["random_5mib"][: 1024 * 1024] + b"\0"

    async def run() -> None:
        async with (
            AsyncCollimateClient(backend.base_url) as ac,
            AsyncSandbox("sh", client=ac) as sb,
        ):
            for blob in (b"", b"\0" * 10, b"no newline", data):
                await sb.upload_bytes("/tmp/a.bin", blob)
                assert await sb.download("/tmp/a.bin") == blob
            await sb.exec(command=f"head -c {DOWNLOAD_CAP_BYTES + 1} /dev/zero > /tmp/big")
            with pytest.raises(CollimateTaskError, match="over the download cap"):
                await sb.download("/tmp/big")
            with pytest.raises(CollimateTaskError, match="no such file"):
                await sb.download("/tmp/nope")

    asyncio.run(run())
