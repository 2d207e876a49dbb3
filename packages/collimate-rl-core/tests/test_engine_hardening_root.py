"""A sandbox's root holds nothing of the host but what it needs (issue 17).

Against a real local backend (namespaces, HTTP on loopback, built-in
templates and plugins on): a world-readable file placed in a fresh
directory of each host location a grader's data could live in (a home
directory, the project checkout, /var/tmp, /srv, /opt, the server's own
config dir, next to the interpreter's trees) cannot be read from a sandbox,
by python or by the shell, while every built-in template still runs (a grade
included: the grader, its clean twin and its worker live under the same
seccomp filter and root). A path a template names in ``expose`` is shown,
read-only; health and the banner say what is exposed.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from collimate_rl import CollimateClient, UnitTestReward, grade
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.banner import banner
from collimate_rl.local_backend.engine.exposure import host_view
from collimate_rl.local_backend.templates import TemplateConfigError, parse_template
from collimate_rl.testing.engine import namespaced_backend
from collimate_rl.testing.host import namespaces_missing_reason

pytestmark = pytest.mark.namespaces

REPO = Path(__file__).resolve().parents[3]
MARK = f"collimate-dw-{uuid.uuid4().hex[:12]}"


def _host_locations() -> list[Path]:
    """Where a secret of the host might sit (each a fresh dir we make)."""
    places = [
        Path("/root"),  # the interpreter owner's home
        Path("/home"),
        REPO,  # the project checkout
        Path("/var/tmp"),
        Path("/srv"),
        Path("/opt"),
        Path(sys.base_prefix).parent,  # next to the interpreter (e.g. pyenv's versions/)
        Path(sys.prefix).parent,  # next to the venv (e.g. hatch's env dir)
    ]
    return [p / MARK for p in places if p.is_dir()]


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """World-readable files in each host location, and a server config dir
    (templates + a key) under /etc, a system dir every sandbox sees."""
    reason = namespaces_missing_reason()
    if reason is not None:  # (planting in /root, /srv, /etc needs root too)
        pytest.skip(reason)
    made: list[Path] = []
    secrets: list[str] = []
    try:
        for folder in _host_locations():
            folder.mkdir(mode=0o755)
            made.append(folder)
            secret = folder / "secret.txt"
            secret.write_text("host secret\n")
            secret.chmod(0o644)
            secrets.append(str(secret))
        config_dir = Path("/etc") / MARK
        config_dir.mkdir(mode=0o755)
        made.append(config_dir)
        exposed = Path("/srv") / f"{MARK}-exposed"
        exposed.mkdir(mode=0o755)
        made.append(exposed)
        (exposed / "data.txt").write_text("shared data\n")
        (exposed / "data.txt").chmod(0o644)
        key = config_dir / "server.key"
        key.write_text("server key\n")
        key.chmod(0o644)
        templates = config_dir / "templates.toml"
        templates.write_text(
            f'[[templates]]\nid = "reader"\nkind = "python"\nexpose = ["{exposed}"]\n'
        )
        templates.chmod(0o644)
        secrets += [str(key), str(templates)]
        socket_path = tmp_path_factory.mktemp("sock") / "backend.sock"
        yield {
            "secrets": secrets,
            "templates": str(templates),
            "exposed": str(exposed / "data.txt"),
            "socket": str(socket_path),
        }
    finally:
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def backend(planted: dict[str, Any]) -> Iterator[LocalCollimateBackend]:
    with namespaced_backend(
        templates_file=planted["templates"], socket_path=planted["socket"]
    ) as server:
        yield server


@pytest.fixture
def http(backend: LocalCollimateBackend) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=backend.base_url, timeout=120) as client:
        yield client


def run(http: httpx.Client, template: str, source: str) -> dict[str, Any]:
    key = "command" if template == "sh" else "code"
    resp = http.post("/v1/exec", json={"template_id": template, key: source, "timeout_seconds": 60})
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


READ_ALL = """
import json, os, socket
out = {}
for path in json.loads(PATHS):
    try:
        with open(path) as fh:
            out[path] = "READ " + fh.read()
    except OSError as exc:
        out[path] = type(exc).__name__
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(SOCKET)
    out["socket"] = "CONNECTED"
except OSError as exc:
    out["socket"] = type(exc).__name__
print(json.dumps(out))
"""


def test_no_planted_host_file_is_readable_from_any_builtin_template(
    http: httpx.Client, planted: dict[str, Any]
) -> None:
    import json

    secrets = planted["secrets"]
    assert len(secrets) >= 8
    # the files really are world-readable on the host (so only the root hides them)
    for path in secrets:
        assert os.stat(path).st_mode & 0o004
    source = f"PATHS = {json.dumps(json.dumps(secrets))}\nSOCKET = {planted['socket']!r}\n"
    for template in ("py", "dkr-python311", "reader"):
        res = run(http, template, source + READ_ALL)
        assert res["exit_code"] == 0, res
        seen = json.loads(res["stdout"])
        assert not [p for p, v in seen.items() if v.startswith(("READ", "CONNECTED"))], seen
        assert seen["socket"] in ("FileNotFoundError", "PermissionError"), seen
    script = " ; ".join(f"cat {p} 2>/dev/null && echo LEAK {p}" for p in secrets)
    res = run(http, "sh", script + " ; echo done")
    assert res["stdout"].strip() == "done", res


def test_the_root_holds_only_system_dirs_and_the_interpreter(http: httpx.Client) -> None:
    res = run(
        http,
        "py",
        "import os, sys\n"
        "print(sorted(os.listdir('/')))\n"
        "print(sorted(os.listdir('/dev')))\n"
        "for p in ('/work', '/root', '/var', '/srv', '/opt', '/sys', '/run', '/mnt', '/home'):\n"
        "    print(p, sorted(os.listdir(p)) if os.path.isdir(p) else None)\n",
    )
    assert res["exit_code"] == 0, res
    lines = res["stdout"].splitlines()
    top = set(eval(lines[0]))
    assert not top & {"var", "srv", "opt", "home", "sys", "run", "mnt", "boot", "media"}
    assert {"usr", "etc", "tmp", "proc", "dev"} <= top
    assert set(eval(lines[1])) <= {
        "null",
        "zero",
        "full",
        "random",
        "urandom",
        "fd",
        "stdin",
        "stdout",
        "stderr",
        "shm",
    }
    listing = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in lines[2:]}
    for path in ("/var", "/srv", "/opt", "/sys", "/run", "/mnt", "/home"):
        assert listing[path] == "None", listing
    # only the trees the interpreter needs, not their parents' other entries
    if sys.base_prefix.startswith("/root/"):
        assert MARK not in listing["/root"]
        assert set(eval(listing["/root"])) <= {".pyenv", ".local", ".cache"}


def test_builtin_templates_still_run_and_grade(
    backend: LocalCollimateBackend, http: httpx.Client
) -> None:
    templates = http.get("/v1/health").json()["templates"]
    assert {"py", "dkr-python311", "sh"} <= set(templates)
    py = run(
        http, "py", "import json, subprocess, sys\nprint(sys.version_info[0], json.dumps([1]))"
    )
    assert py["exit_code"] == 0 and py["stdout"].startswith("3 [1]"), py
    sh = run(http, "sh", "echo hi | tr a-z A-Z; python3 -c 'print(2)' 2>/dev/null || true")
    assert sh["exit_code"] == 0 and sh["stdout"].startswith("HI"), sh
    spec = UnitTestReward([{"input": [1, 2], "output": 3}, {"input": [2, 5], "output": 7}])
    with CollimateClient(backend.base_url) as client:
        for template in ("py", "dkr-python311"):
            right = grade(client, template, "def solve(a, b):\n    return a + b\n", spec)
            wrong = grade(client, template, "def solve(a, b):\n    return a - b\n", spec)
            assert (right.reward, wrong.reward) == (1.0, 0.0), (right, wrong)


def test_an_exposed_path_is_readable_and_read_only(
    http: httpx.Client, planted: dict[str, Any]
) -> None:
    path = planted["exposed"]
    res = run(
        http,
        "reader",
        f"print(open({path!r}).read().strip())\n"
        "try:\n"
        f"    open({path!r}, 'a').write('x')\n"
        "except OSError as exc:\n"
        "    print(type(exc).__name__)\n",
    )
    lines = res["stdout"].splitlines()
    assert lines[0] == "shared data", res
    assert lines[1] in ("OSError", "PermissionError"), res
    assert Path(path).read_text() == "shared data\n"
    other = run(http, "py", f"import os\nprint(os.path.exists({path!r}))")
    assert other["stdout"].strip() == "False", other


def test_health_and_banner_list_what_is_exposed(
    backend: LocalCollimateBackend, http: httpx.Client, planted: dict[str, Any]
) -> None:
    health = http.get("/v1/health").json()
    exposed = health["exposed"]
    assert set(exposed) >= {"py", "dkr-python311", "sh", "reader"}
    assert os.path.dirname(planted["exposed"]) in exposed["reader"]["read_only"]
    assert os.path.dirname(planted["exposed"]) not in exposed["py"]["read_only"]
    assert os.path.dirname(planted["templates"]) in exposed["py"]["masked"]
    for view in exposed.values():
        assert "/usr" in view["read_only"]
        assert not {"/", "/root", "/home", "/var", "/srv", "/opt", "/work"} & set(view["read_only"])
        assert str(REPO) not in view["read_only"]
    assert health["quotas"]["mechanism"] in ("cgroup2", "cgroup1", "rlimits")
    assert health["no_new_privs"] is True
    text = banner(backend.server)
    assert "host paths template reader sees (read-only):" in text
    assert os.path.dirname(planted["exposed"]) in text
    assert "quotas:" in text


def test_expose_is_checked_when_the_template_is_parsed(tmp_path: Path) -> None:
    for bad, why in (
        ("data", "absolute"),
        ("/", "cannot be"),
        ("/proc/1", "cannot"),
        ("/tmp", "own"),
    ):
        with pytest.raises(TemplateConfigError, match=why) as info:
            parse_template({"id": "t", "kind": "python", "expose": [bad]})
        assert "template 't': expose" in str(info.value)
    with pytest.raises(TemplateConfigError, match="expected a list of strings"):
        parse_template({"id": "t", "kind": "python", "expose": "/data"})
    spec = parse_template({"id": "t", "kind": "shell", "expose": [str(tmp_path / ".." / "x")]})
    assert spec.expose == (str(tmp_path.parent / "x"),)


def test_the_view_keeps_each_tree_and_not_its_parents(tmp_path: Path) -> None:
    venv = tmp_path / "home" / "me" / "venv"
    (venv / "lib").mkdir(parents=True)
    (tmp_path / "home" / "me" / "notes").mkdir()
    view = host_view([str(venv), str(venv / "lib")], [str(tmp_path / "missing")], [])
    assert str(venv) in view["binds"]
    assert str(venv / "lib") not in view["binds"]  # folded into its parent
    assert not any(b in view["binds"] for b in (str(tmp_path), str(tmp_path / "home")))
    assert view["missing"] == [str(tmp_path / "missing")]
    assert "/usr" in view["binds"] or "usr=" in " ".join(view["links"])
