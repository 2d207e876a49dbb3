"""Absolute and relative paths in ``/run_code``'s ``files`` and
``fetch_files``, against real servers on loopback.

SandboxFusion resolves a relative path against the run's working directory
and takes an absolute one as that path inside its sandbox. The local
backend does the same where a clone has a root of its own (namespaces
isolation: the private root); under process isolation ``/`` is the host's,
and a request with an absolute path is answered ``SandboxError`` instead,
with nothing written or read on the host. Paths that can never be served
(out of the run's directory, the kernel's trees) are 422s, and the runners
follow no symlink and touch regular files only."""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from collimate_rl.guest import request_paths as rp
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.language_runs import runner_source as lr_source
from collimate_rl.local_backend.sandbox_fusion import (
    exec_code,
    path_problem,
    response_from_output,
    validate_run_code,
)
from collimate_rl.testing.programs import need


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def unb64(data: str) -> bytes:
    return base64.b64decode(data)


@pytest.fixture(scope="module")
def ns() -> Iterator[httpx.Client]:
    """A server whose clones have a private root (skipped where namespaces
    isolation is unavailable: it needs root)."""
    with LocalCollimateBackend() as b, httpx.Client(base_url=b.base_url, timeout=300) as c:
        if c.get("/v1/health").json()["isolation"] != "namespaces":
            # CI installs bubblewrap and runs as root: there it must not hide
            if os.environ.get("CI"):
                pytest.fail("CI must have namespaces isolation (bubblewrap, root)")
            pytest.skip("namespaces isolation is unavailable here (it needs bubblewrap and root)")
        yield c


@pytest.fixture(scope="module")
def proc() -> Iterator[httpx.Client]:
    """A server with process isolation: no mount namespace, ``/`` is the host's."""
    with (
        LocalCollimateBackend(isolation="process") as b,
        httpx.Client(base_url=b.base_url, timeout=300) as c,
    ):
        assert c.get("/v1/health").json()["isolation"] == "process"
        yield c


def run(client: httpx.Client, **body: Any) -> dict[str, Any]:
    body.setdefault("language", "python")
    r = client.post("/run_code", json=body)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


def host_path() -> str:
    """An absolute path that exists nowhere on the host."""
    return f"/tmp/collimate-sf-paths-{uuid.uuid4().hex}/x.txt"


# -- namespaces: absolute paths are the sandbox's own ---------------------


def test_python_reads_absolute_files_and_writes_fetched_ones(ns: httpx.Client) -> None:
    code = (
        "import os\n"
        "a = open('/tmp/data/x.txt').read()\n"
        "n = int(open('/data/in.txt').read())\n"
        "os.makedirs('/data/out', exist_ok=True)\n"
        "open('/data/out/res.txt', 'w').write(str(n * 2))\n"
        "open('/dev/shm/note', 'w').write('shm')\n"
        "open('rel.txt', 'w').write(a.upper())\n"
        "print(a, n, open('sub/r.txt').read())\n"
    )
    a = run(
        ns,
        code=code,
        files={"/tmp/data/x.txt": b64("hello"), "/data/in.txt": b64("21"), "sub/r.txt": b64("r")},
        fetch_files=[
            "/data/out/res.txt",
            "rel.txt",
            "/dev/shm/note",
            "/tmp/data/x.txt",
            "//data//in.txt",
            "/data/missing.txt",
            "/data",
        ],
    )
    assert a["status"] == "Success", a
    assert a["run_result"]["stdout"] == "hello 21 r\n"
    got = {name: unb64(content) for name, content in a["files"].items()}
    assert got == {
        "/data/out/res.txt": b"42",
        "rel.txt": b"HELLO",
        "/dev/shm/note": b"shm",
        "/tmp/data/x.txt": b"hello",
        "//data//in.txt": b"21",  # keyed as asked, as SandboxFusion does
    }


def test_python_absolute_write_never_reaches_the_host(ns: httpx.Client) -> None:
    path = host_path()
    a = run(ns, code=f"print(open({path!r}).read())", files={path: b64("inside")})
    assert a["run_result"]["stdout"] == "inside\n", a
    assert not os.path.exists(os.path.dirname(path))


def test_cpp_reads_an_absolute_file_and_its_output_is_fetched(ns: httpx.Client) -> None:
    need("cpp")
    code = (
        "#include <bits/stdc++.h>\n#include <sys/stat.h>\n"
        'int main(){ std::ifstream in("/data/in.txt"); long long a, b; in >> a >> b;\n'
        '  mkdir("/tmp/out", 0755); std::ofstream("/tmp/out/sum.txt") << a + b;\n'
        '  std::ofstream("rel.txt") << a * b; std::cout << a - b << "\\n"; }\n'
    )
    path = host_path()
    a = run(
        ns,
        language="cpp",
        code=code,
        files={"/data/in.txt": b64("20 22\n"), path: b64("x")},
        fetch_files=["/tmp/out/sum.txt", "rel.txt", "/data/in.txt"],
        compile_timeout=30,
    )
    assert a["status"] == "Success", a
    assert a["run_result"]["stdout"] == "-2\n"
    got = {name: unb64(content) for name, content in a["files"].items()}
    assert got == {"/tmp/out/sum.txt": b"42", "rel.txt": b"440", "/data/in.txt": b"20 22\n"}
    assert not os.path.exists(os.path.dirname(path))


def test_cpp_includes_a_header_at_an_absolute_path(ns: httpx.Client) -> None:
    need("cpp")
    code = (
        '#include "/task/include/answer.h"\n#include <cstdio>\n'
        'int main(){ printf("%d\\n", ANSWER); }'
    )
    a = run(
        ns,
        language="cpp",
        code=code,
        files={"/task/include/answer.h": b64("#define ANSWER 42\n")},
        compile_timeout=30,
    )
    assert a["status"] == "Success", a
    assert a["run_result"]["stdout"] == "42\n"


@pytest.mark.parametrize("language", ["python", "cpp"])
def test_a_file_the_sandbox_cannot_write_is_its_error(ns: httpx.Client, language: str) -> None:
    """The view of the host is read-only: writing there is the sandbox
    refusing the request, never the program failing (and nothing changes)."""
    if language != "python":
        need(language)
    before = Path("/etc/hostname").read_bytes()
    a = run(
        ns,
        language=language,
        code="int main(){}" if language == "cpp" else "print(1)",
        files={"/etc/hostname": b64("pwned")},
    )
    assert a["status"] == "SandboxError", a
    assert "/etc/hostname" in a["message"] and a["run_result"] is None
    assert Path("/etc/hostname").read_bytes() == before


def test_nodejs_write_failure_is_the_sandboxs_error(ns: httpx.Client) -> None:
    """A language with no compile step writes its files first in the run:
    a failure there blames the sandbox too, not the program."""
    need("nodejs")
    a = run(ns, language="nodejs", code="console.log(1)", files={"/usr/x.txt": b64("x")})
    assert a["status"] == "SandboxError", a
    assert "/usr/x.txt" in a["message"]


def test_symlinks_made_by_the_code_are_not_followed(ns: httpx.Client) -> None:
    code = (
        "import os\n"
        "open('/tmp/secret', 'w').write('s')\n"
        "os.symlink('/tmp/secret', 'link.txt')\n"
        "os.symlink('/tmp', 'dirlink')\n"
        "os.symlink('/proc/self', '/tmp/proclink')\n"
        "os.mkfifo('fifo')\n"
    )
    a = run(
        ns,
        code=code,
        fetch_files=["link.txt", "dirlink/secret", "/tmp/proclink/environ", "fifo", "/tmp/secret"],
    )
    assert a["status"] == "Success", a
    assert set(a["files"]) == {"/tmp/secret"}


# -- relative paths, and what is refused everywhere -----------------------


@pytest.mark.parametrize("name", ["ns", "proc"])
def test_relative_paths_still_work(name: str, request: pytest.FixtureRequest) -> None:
    client: httpx.Client = request.getfixturevalue(name)
    code = (
        "import os\nos.mkdir('d')\n"
        "open('d/out.txt', 'w').write(open('a/in.txt').read()[::-1])\nprint('ok')\n"
    )
    a = run(
        client,
        code=code,
        files={"a/x/../in.txt": b64("abc")},
        fetch_files=["d/out.txt", "./d/out.txt", "nothing"],
    )
    assert a["status"] == "Success", a
    assert {k: unb64(v) for k, v in a["files"].items()} == {
        "d/out.txt": b"cba",
        "./d/out.txt": b"cba",
    }


@pytest.mark.parametrize(
    ("field", "name"),
    [
        ("files", "../x"),
        ("files", "a/../../x"),
        ("files", ".."),
        ("files", "."),
        ("files", "/"),
        ("files", "/proc/self/mem"),
        ("files", "/sys/kernel/x"),
        ("files", "/dev/null"),
        ("files", "/dev/../dev/stdout"),
        ("fetch_files", "../../etc/passwd"),
        ("fetch_files", "/proc/self/environ"),
        ("fetch_files", "/proc/1/root/etc/shadow"),
        ("fetch_files", "/dev/zero"),
        ("fetch_files", "/sys"),
        ("fetch_files", ""),
    ],
)
def test_paths_out_of_the_sandbox_are_422(proc: httpx.Client, field: str, name: str) -> None:
    body: dict[str, Any] = {"code": "print(1)", "language": "python"}
    body[field] = {name: b64("x")} if field == "files" else [name]
    r = proc.post("/run_code", json=body)
    assert r.status_code == 422, r.text
    (entry,) = r.json()["detail"]
    assert entry["loc"] == ["body", field] and entry["type"] == "value_error"
    assert repr(name) in entry["msg"]


# -- process isolation: no root of its own, absolute paths refused --------


def test_process_isolation_refuses_absolute_files_naming_why(proc: httpx.Client) -> None:
    path = host_path()
    for language in ("python", "cpp"):
        a = run(proc, language=language, code="print(1)", files={path: b64("x")})
        assert a["status"] == "SandboxError" and a["run_result"] is None, a
        assert "namespaces isolation" in a["message"] and "host" in a["message"]
        assert repr(path) in a["message"]
    assert not os.path.exists(os.path.dirname(path))


def test_process_isolation_refuses_absolute_fetch(proc: httpx.Client) -> None:
    a = run(proc, code="print(1)", fetch_files=["/etc/hostname"])
    assert a["status"] == "SandboxError" and a["files"] == {}, a
    assert "'/etc/hostname'" in a["message"]


def test_process_isolation_runners_refuse_absolute_paths_themselves(proc: httpx.Client) -> None:
    """Past the server's check (a request sent straight to an exec), the
    runners still refuse: ``/`` is not the run's own there."""
    path = host_path()
    body = validate_run_code({"code": "print(1)", "language": "python", "files": {path: "eA=="}})
    blob = b64(json.dumps(body))
    r = proc.post("/v1/exec", json={"template_id": "py", "code": exec_code(blob)})
    answer = response_from_output(r.json()["stdout"], r.json()["exit_code"])
    assert answer["status"] == "SandboxError", answer
    assert "here / is the host's" in answer["message"]

    request = {
        "op": "compile",
        "toolchain": {"source": "main.c", "compile": ["/bin/true"], "env": {}},
        "source": "",
        "files": {path: "eA=="},
        "cpu_limit": 5,
        "wall_limit": 30,
    }
    code = f"{lr_source()}\n_lr_main({b64(json.dumps(request))!r})\n"
    r = proc.post("/v1/exec", json={"template_id": "lang", "code": code})
    (line,) = [x for x in r.json()["stdout"].split("\n") if '"compiled"' in x]
    record = json.loads(line.split(" ", 1)[1])
    assert record["verdict"] == "start_failed"
    assert "here / is the host's" in unb64(record["output"]).decode()
    assert not os.path.exists(os.path.dirname(path))


# -- the runners' own rules ------------------------------------------------


NAMES = [
    "a.txt",
    "a/b/../c",
    "./x",
    "../x",
    "a/../../x",
    ".",
    "",
    "/",
    "//",
    "/data/x",
    "//data/../tmp/x",
    "/proc",
    "/proc/self/environ",
    "/sys/x",
    "/dev/null",
    "/dev/shm/x",
    "/dev/shmx",
    "/devices/x",
    "/a\0b",
]


@pytest.mark.parametrize("name", NAMES)
def test_server_and_runners_place_paths_alike(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for runner in (rp,):
        monkeypatch.setattr(runner, "own_root", lambda: True)
        try:
            runner._place(str(tmp_path), name)
            refused = False
        except runner._PathRefused:
            refused = True
        assert refused == (path_problem(name) is not None), (runner.__name__, name)


@pytest.mark.parametrize("runner", [rp])
def test_runner_writes_and_reads_without_following_symlinks(runner: Any, tmp_path: Path) -> None:
    root = tmp_path / "run"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    (root / "dirlink").symlink_to(outside)
    (root / "filelink").symlink_to(outside / "secret")
    os.mkfifo(root / "fifo")
    for name in ("dirlink/new.txt", "filelink", "dirlink/secret", "fifo"):
        with pytest.raises(runner._PathRefused):
            runner.write_file(str(root), name, b"x")
    assert sorted(os.listdir(outside)) == ["secret"] and (outside / "secret").read_text() == "s"
    for name in ("dirlink/secret", "filelink", "fifo", "missing", "../outside/secret"):
        assert runner.fetch_file(str(root), name, 100) is None  # (the fifo: no hang)
    runner.write_file(str(root), "a/b/c.txt", b"hello")
    assert runner.fetch_file(str(root), "a/b/c.txt", 3) == b"hel"
    assert runner.fetch_file(str(root), "a/x/../b/c.txt", 100) == b"hello"


@pytest.mark.parametrize("runner", [rp])
def test_runner_refuses_absolute_paths_where_root_is_not_its_own(
    runner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "abs" / "x.txt"
    monkeypatch.setattr(runner, "own_root", lambda: False)
    with pytest.raises(runner._PathRefused, match="here / is the host's"):
        runner.write_file(str(tmp_path), str(target), b"x")
    assert not target.parent.exists()
    (tmp_path / "y.txt").write_text("y")
    assert runner.fetch_file(str(tmp_path), str(tmp_path / "y.txt"), 10) is None
    monkeypatch.setattr(runner, "own_root", lambda: True)  # a private root's rules
    runner.write_file(str(tmp_path), str(target), b"x")
    assert runner.fetch_file("/nonexistent", str(target), 10) == b"x"
