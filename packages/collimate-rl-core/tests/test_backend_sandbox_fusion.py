"""The SandboxFusion-compatible ``/run_code`` of the local backend, against a
real server over TCP and a unix socket: SandboxFusion's request fields and
defaults, the response fields its clients (verl) read, its statuses, its
422 validation answers, and who is blamed when a run goes wrong."""

from __future__ import annotations

import base64
import concurrent.futures
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.sandbox_fusion import (
    RUNNER_MODULE,
    exec_code,
    response_from_output,
    validate_run_code,
)

RESPONSE_KEYS = {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"}
PY = {"code": "", "language": "python"}
RUN_RESULT_KEYS = {"status", "execution_time", "return_code", "stdout", "stderr"}


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCollimateBackend]:
    sock = tmp_path_factory.mktemp("sf") / "backend.sock"
    with LocalCollimateBackend(socket_path=sock) as b:
        yield b


@pytest.fixture(params=["tcp", "unix"])
def client(
    request: pytest.FixtureRequest, backend: LocalCollimateBackend
) -> Iterator[httpx.Client]:
    if request.param == "tcp":
        c = httpx.Client(base_url=backend.base_url, timeout=60)
    else:
        assert backend.socket_path is not None
        transport = httpx.HTTPTransport(uds=str(backend.socket_path))
        c = httpx.Client(base_url="http://sandbox", transport=transport, timeout=60)
    with c:
        yield c


def run(client: httpx.Client, **body: Any) -> dict[str, Any]:
    body.setdefault("language", "python")
    r = client.post("/run_code", json=body)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    assert set(answer) == RESPONSE_KEYS
    if answer["run_result"] is not None:
        assert set(answer["run_result"]) == RUN_RESULT_KEYS
    return answer


def test_stdin_in_stdout_and_stderr_apart(client: httpx.Client) -> None:
    a = run(
        client,
        code="import sys\nn = int(input())\nprint(n * 2)\nprint('note', file=sys.stderr)\n",
        stdin="21\n",
    )
    assert a["status"] == "Success" and a["message"] == ""
    assert a["compile_result"] is None
    rr = a["run_result"]
    assert (rr["status"], rr["return_code"], rr["stdout"], rr["stderr"]) == (
        "Finished",
        0,
        "42\n",
        "note\n",
    )
    assert isinstance(rr["execution_time"], float) and rr["execution_time"] > 0


def test_runs_as_main_of_a_file_in_its_own_directory(client: httpx.Client) -> None:
    code = (
        "import os, sys\n"
        "print(__name__, os.path.basename(__file__).endswith('.py'), sys.argv[0] == __file__)\n"
        "print(os.path.dirname(__file__) == os.getcwd())\n"
    )
    a = run(client, code=code)
    assert a["run_result"]["stdout"] == "__main__ True True\nTrue\n"


def test_exception_is_a_failed_run_with_its_traceback(client: httpx.Client) -> None:
    a = run(client, code="def f():\n    raise ValueError('boom')\nf()\n")
    assert a["status"] == "Failed"
    rr = a["run_result"]
    assert rr["status"] == "Finished" and rr["return_code"] == 1
    assert rr["stderr"].startswith("Traceback (most recent call last):")
    assert "ValueError: boom" in rr["stderr"] and "sandbox_fusion_runner" not in rr["stderr"]


def test_exit_code_and_syntax_error(client: httpx.Client) -> None:
    assert run(client, code="import sys; sys.exit(3)")["run_result"]["return_code"] == 3
    a = run(client, code="def broken(:\n")
    assert a["status"] == "Failed" and "SyntaxError" in a["run_result"]["stderr"]


def test_run_timeout_is_time_limit_exceeded(client: httpx.Client) -> None:
    a = run(client, code="print('x', flush=True)\nwhile True: pass\n", run_timeout=0.5)
    assert a["status"] == "Failed"
    rr = a["run_result"]
    assert rr["status"] == "TimeLimitExceeded" and rr["return_code"] is None
    assert rr["stdout"] == "x\n"
    assert rr["execution_time"] >= 0.5


def test_memory_limit(client: httpx.Client) -> None:
    code = "x = bytearray(300 * 1024 * 1024)\nprint('allocated')\n"
    limited = run(client, code=code, memory_limit_MB=128)
    assert limited["status"] == "Failed" and "MemoryError" in limited["run_result"]["stderr"]
    assert run(client, code=code, memory_limit_MB=-1)["run_result"]["stdout"] == "allocated\n"


def test_files_in_and_fetch_files_out_byte_exact(client: httpx.Client) -> None:
    payload = bytes(range(256)) + b"\x00no newline"
    code = (
        "data = open('sub/in.bin', 'rb').read()\n"
        "open('out.bin', 'wb').write(data[::-1])\n"
        "print(len(data))\n"
    )
    a = run(
        client,
        code=code,
        files={"sub/in.bin": base64.b64encode(payload).decode(), "skip.txt": None},
        fetch_files=["out.bin", "missing.bin"],
    )
    assert a["status"] == "Success", a
    assert a["run_result"]["stdout"] == f"{len(payload)}\n"
    assert set(a["files"]) == {"out.bin"}
    assert base64.b64decode(a["files"]["out.bin"]) == payload[::-1]


def test_output_that_looks_like_a_report_is_only_output(client: httpx.Client) -> None:
    fake = '\\x1ecollimate-sandbox-fusion {"phase": "done", "timed_out": false, "return_code": 0}'
    code = f"import sys\nprint('{fake}')\nprint('{fake}', file=sys.stderr)\nsys.exit(4)\n"
    a = run(client, code=code)
    assert a["status"] == "Failed" and a["run_result"]["return_code"] == 4
    assert a["run_result"]["stdout"].startswith("\x1ecollimate-sandbox-fusion")


def test_code_that_kills_its_runner_fails_itself_not_the_sandbox(client: httpx.Client) -> None:
    a = run(client, code="import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n")
    assert a["status"] == "Failed"
    assert a["run_result"]["status"] == "Finished" and a["run_result"]["return_code"] != 0


def test_a_language_the_backend_cannot_run_is_a_sandbox_error(client: httpx.Client) -> None:
    a = run(client, code="def main : IO Unit := pure ()", language="lean")
    assert a["status"] == "SandboxError"
    assert "lean" in a["message"] and a["run_result"] is None


@pytest.mark.parametrize(
    ("body", "loc", "kind"),
    [
        ({"language": "python"}, ["body", "code"], "missing"),
        ({"code": "print(1)"}, ["body", "language"], "missing"),
        ({"code": "print(1)", "language": "cobol"}, ["body", "language"], "literal_error"),
        ({"code": 1, "language": "python"}, ["body", "code"], "string_type"),
        ({**PY, "run_timeout": "x"}, ["body", "run_timeout"], "float_type"),
        ({**PY, "files": {"/proc/x": "AA=="}}, ["body", "files"], "value_error"),
        ({**PY, "files": {"a": "%%%"}}, ["body", "files"], "value_error"),
        ({**PY, "fetch_files": ["../x"]}, ["body", "fetch_files"], "value_error"),
    ],
)
def test_bodies_sandbox_fusion_rejects_get_its_422(
    client: httpx.Client, body: dict[str, Any], loc: list[str], kind: str
) -> None:
    r = client.post("/run_code", json=body)
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert any(d["loc"] == loc and d["type"] == kind and d["msg"] for d in detail), detail


def test_invalid_json_gets_422(client: httpx.Client) -> None:
    r = client.post("/run_code", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"][0]["type"] == "json_invalid"


def test_ping(client: httpx.Client) -> None:
    r = client.get("/v1/ping")
    assert (r.status_code, r.json()) == (200, "pong")


def test_the_daemon_wire_is_still_served(client: httpx.Client) -> None:
    r = client.post("/v1/exec", json={"template_id": "sh", "command": "echo ok"})
    assert r.status_code == 200 and r.json()["stdout"] == "ok\n"


def test_requests_beyond_capacity_wait_instead_of_503(tmp_path: Path) -> None:
    with (
        LocalCollimateBackend(max_inflight=1) as b,
        httpx.Client(base_url=b.base_url, timeout=60) as c,
    ):
        body = {"code": "import time; time.sleep(0.2); print('done')", "language": "python"}
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: c.post("/run_code", json=body), range(4)))
    assert [r.status_code for r in answers] == [200] * 4
    assert all(r.json()["run_result"]["stdout"] == "done\n" for r in answers)


def test_a_runner_that_never_started_is_the_sandboxs_error() -> None:
    answer = response_from_output("Traceback ...\nOSError: disk full\n", 1)
    assert answer["status"] == "SandboxError" and "disk full" in answer["message"]
    assert answer["run_result"] is None


def test_the_runner_travels_with_the_request_to_any_python_template() -> None:
    """No template preloads the runner (every fork of a warm interpreter,
    graders included, would carry it): each request brings it, as bytecode
    for this interpreter's version, so any python template runs it."""
    run_body = {**validate_run_code({"code": "print(input()[::-1])", "language": "python"})}
    run_body["stdin"] = "abc\n"
    blob = base64.b64encode(json.dumps(run_body).encode()).decode()
    templates = [{"id": "plain", "kind": "python"}]
    with (
        LocalCollimateBackend(templates=templates) as b,
        httpx.Client(base_url=b.base_url, timeout=60) as c,
    ):
        r = c.post("/v1/exec", json={"template_id": "plain", "code": exec_code(blob)})
        preloaded = c.post(
            "/v1/exec",
            json={
                "template_id": "py",
                "code": f"import sys; print({RUNNER_MODULE!r} in sys.modules)",
            },
        )
    answer = response_from_output(r.json()["stdout"], r.json()["exit_code"])
    assert answer["status"] == "Success" and answer["run_result"]["stdout"] == "cba\n"
    assert preloaded.json()["stdout"] == "False\n"
    assert "marshal.loads" in exec_code(blob)


def test_the_code_reads_its_own_proc(client: httpx.Client) -> None:
    a = run(client, code="print(open('/proc/self/status').read().startswith('Name:'))")
    assert a["run_result"]["stdout"] == "True\n", a
