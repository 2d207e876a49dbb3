"""The seed README's examples, run as written against the local backend.

* the 30-second tour: ``python -m collimate_rl.local_backend --port N &`` as a
  real process, then the tour's Python as a separate program;
* "File IO (byte-exact, no wire change)": the ``/task`` example with a real tar;
* "Failure semantics": raise / zero / skip, draining, retry knobs, long
  execs, crashed-worker recovery with ``Sandbox.attach``, merged stderr.
"""

from __future__ import annotations

import contextlib
import io
import socket
import subprocess
import sys
import tarfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from collimate_rl import (
    CollimateClient,
    CollimateDrainingError,
    CollimateError,
    PropertyReward,
    Sandbox,
    connect,
    grade,
    grade_batch,
    group_seeds,
)
from collimate_rl.local_backend import LocalCollimateBackend

COMPLETION = "def solve(x):\n    return sum(c in 'aeiouAEIOU' for c in x)\n"
SPEC = PropertyReward(
    reference="    return sum(c in 'aeiouAEIOU' for c in x)",
    generator="''.join(random.choice('abcdEIOUxyz') for _ in range(8))",
    k=16,
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(pred: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """``python -m collimate_rl.local_backend --port N &`` as a real process."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "collimate_rl.local_backend", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"the backend exited: {proc.stderr.read()!r}")  # type: ignore[union-attr]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            return False

    try:
        assert _wait(up, 60), "the local backend did not start"
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def test_the_30_second_tour_runs_as_written(served: str) -> None:
    tour = textwrap.dedent(
        f"""
        completion_code = {COMPLETION!r}
        from collimate_rl import CollimateClient, PropertyReward, grade, group_seeds

        client = CollimateClient("{served}")     # the local backend above
        spec = PropertyReward(
            reference="    return sum(c in 'aeiouAEIOU' for c in x)",
            generator="''.join(random.choice('abcdEIOUxyz') for _ in range(8))",
            k=16,
        )
        res = grade(client, "dkr-python311", completion_code, spec, seed="ab"*32)
        print(res.reward, res.seed, res.seed_ack)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", tour], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out == ["1.0", "ab" * 32, "verified"]


def test_connect_and_the_catalog_of_the_tour(served: str) -> None:
    client = connect(served)  # a daemon, explicitly
    try:
        res = grade(client, "dkr-python311", COMPLETION, SPEC)  # identical either way
        assert res.reward == 1.0 and not res.infra_error
        with pytest.raises(CollimateError, match="gateway"):
            client.images()  # a daemon client raises a clear "gateway only" error
    finally:
        client.close()


def _task_tar() -> bytes:
    buf = io.BytesIO()
    files = {
        "run.sh": b"#!/bin/sh\nset -e\n"
        b"printf 'diff: %s\\n' \"$(cat data.bin | wc -c)\" > out.patch\n"
        b"cat data.bin >> out.patch\n",
        "data.bin": b"\0\x01binary\xff\n\0no newline at end",
    }
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _file_io_example(root: str) -> None:
    tar_bytes = _task_tar()
    with Sandbox("dkr-python311") as sb:
        sb.upload_bytes(f"{root}/input.tar", tar_bytes)  # verified in-guest (size+sha256)
        sb.exec(command=f"cd {root} && tar -xf input.tar")
        r = sb.exec(command=f"cd {root} && ./run.sh")
        assert r.ok, r.stdout
        patch = sb.download(f"{root}/out.patch")  # bytes, byte-exact
        assert sb.download(f"{root}/input.tar") == tar_bytes
    data = b"\0\x01binary\xff\n\0no newline at end"
    assert patch == f"diff: {len(data)}\n".encode() + data


@pytest.fixture
def env_daemon(served: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLIMATE_SERVE_URL", served)
    monkeypatch.delenv("COLLIMATE_SERVE_SOCKET", raising=False)
    monkeypatch.delenv("COLLIMATE_API_KEY", raising=False)


@pytest.mark.usefixtures("env_daemon")
def test_the_file_io_example_in_a_writable_directory() -> None:
    _file_io_example("/tmp/task")


@pytest.mark.usefixtures("env_daemon")
def test_the_file_io_example_runs_as_written() -> None:
    _file_io_example("/task")


def test_failure_semantics_raise_zero_skip(served: str) -> None:
    candidates = [COMPLETION] * 4
    with CollimateClient(served, backoff=0.15, retry_budget=30.0) as client:
        ok = grade_batch(client, "dkr-python311", candidates, SPEC, seeds=group_seeds(4, "crn"))
        assert [r.reward for r in ok] == [1.0] * 4 and not any(r.infra_error for r in ok)
    # the same group against a node that is gone
    with CollimateClient(f"http://127.0.0.1:{_free_port()}", retries=1, retry_budget=0.5) as gone:
        with pytest.raises(CollimateError):
            grade_batch(gone, "dkr-python311", candidates, SPEC)  # default: "raise"
        zero = grade_batch(gone, "dkr-python311", candidates, SPEC, on_infra_error="zero")
        assert [(r.reward, r.infra_error) for r in zero] == [(0.0, True)] * 4
        assert grade_batch(gone, "dkr-python311", candidates, SPEC, on_infra_error="skip") == []


def test_a_draining_node_refuses_before_admitting_and_raises_typed() -> None:
    backend = LocalCollimateBackend().start()
    try:

        # held for longer than the checks below take on a loaded machine: a
        # draining node whose last exec ended stops listening (refused, not
        # draining); the stop at the end ends it
        def in_flight() -> None:
            with CollimateClient(backend.base_url, retries=0) as c, contextlib.suppress(
                CollimateError
            ):
                c.exec_once("sh", command="sleep 60")

        hold = threading.Thread(target=in_flight)
        hold.start()
        assert _wait(lambda: backend.health()["running"] == 1)
        backend.drain()
        assert _wait(lambda: backend.health()["status"] == "draining")
        with CollimateClient(backend.base_url, retries=3, backoff=0.05, retry_budget=0.5) as c:
            with pytest.raises(CollimateDrainingError):
                grade(c, "py", COMPLETION, SPEC)
            zero = grade_batch(c, "py", [COMPLETION] * 2, SPEC, on_infra_error="zero")
            assert [r.infra_error for r in zero] == [True, True]
            assert "CollimateDrainingError" in (zero[0].error or "")
    finally:
        backend.stop()
        hold.join(30)


def test_long_execs_are_accepted_and_held(served: str) -> None:
    with CollimateClient(served, timeout=5) as client:
        # timeout_seconds beyond the client's own timeout: the exec's read
        # timeout becomes timeout_seconds + 30, so a 7 s exec is not abandoned
        r = client.exec_once("sh", command="sleep 7; echo done", timeout_seconds=1800)
        assert r["stdout"] == "done\n" and r["exit_code"] == 0


def test_crashed_worker_recovery_with_attach(served: str) -> None:
    with CollimateClient(served) as client:
        worker = Sandbox("dkr-python311", client=client).start()  # then the worker "dies"
        worker.exec(command="echo progress > /tmp/checkpoint")
        orphan = worker.session_id
        assert orphan is not None
        with Sandbox.attach(client, orphan) as sb:  # a replacement worker adopts it
            assert sb.exec(command="cat /tmp/checkpoint").stdout == "progress\n"
        assert orphan not in {s["session_id"] for s in client.list_sessions()}


def test_stderr_is_merged_into_stdout(served: str) -> None:
    with CollimateClient(served) as client, Sandbox("dkr-python311", client=client) as sb:
        r = sb.exec("import sys\nprint('out')\nsys.stdout.flush()\nprint('err', file=sys.stderr)")
        assert r.stderr == "" and r.stdout == "out\nerr\n"


def test_the_examples_left_no_session_behind(served: str) -> None:
    with CollimateClient(served) as client:
        assert client.list_sessions() == []
