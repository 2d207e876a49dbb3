"""SandboxFusion's ``/run_jupyter`` and what ``/run_code`` gives as its
image does, on a real local backend (namespaces isolation where the host
has it; CI has).

``/run_jupyter``'s cells share one interpreter per request (a fork of the
python template's, in one isolated one-shot exec) and answer SandboxFusion's
``RunJupyterResponse``; ``/run_code`` counts a sleep against ``run_timeout`` as
SandboxFusion does, gives Java javatuples, gives python an own ``/mnt``, and
answers the languages no registry here supplies with ``SandboxError``
naming what a host needs. SandboxFusion's own tests of the same are run
against this backend by ``integration-tests/test_packaging_sandbox_fusion_suite.py``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from collimate_rl import CollimateClient, CollimateError, ContestReward, grade, grade_batch
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.sandbox_fusion import jupyter_response
from collimate_rl.testing.programs import need


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend() as b:
        yield b


@pytest.fixture(scope="module")
def http(backend: LocalCollimateBackend) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=backend.base_url, timeout=300) as c:
        yield c


def jupyter(http: httpx.Client, cells: list[str], **body: Any) -> dict[str, Any]:
    r = http.post("/run_jupyter", json={"cells": cells, **body})
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_cells_share_state_and_answer_as_jupyter_does(http: httpx.Client) -> None:
    a = jupyter(
        http,
        [
            'a = "hello"',
            "a",
            "import sys\nsys.stderr.write('to stderr\\n')",
            "assert False, 'no'",
            "print(a)",
            "import subprocess; _ = subprocess.run(['echo', 'child'])",
            "open('out.txt', 'w').write(open('in.txt').read() * 2)",
            "raise SystemExit(3)",
            "None",
        ],
        files={"in.txt": b64("ab")},
        fetch_files=["out.txt", "missing.txt"],
    )
    assert a["status"] == "Success" and a["message"] == "", a
    assert set(a) == {"status", "message", "driver", "cells", "executor_pod_name", "files"}
    assert a["driver"]["status"] == "Finished" and a["driver"]["return_code"] == 0
    cells = a["cells"]
    assert [set(c) for c in cells] == [{"stdout", "stderr", "display", "error"}] * 9
    assert cells[0] == {"stdout": "", "stderr": "", "display": [], "error": []}
    assert cells[1]["display"] == [{"text/plain": "'hello'"}]
    assert cells[2]["stderr"] == "to stderr\n" and cells[2]["display"] == [{"text/plain": "10"}]
    (error,) = cells[3]["error"]
    assert (error["ename"], error["evalue"]) == ("AssertionError", "no")
    assert "assert False" in "".join(error["traceback"])
    assert cells[4]["stdout"] == "hello\n"
    assert cells[5]["stdout"] == "child\n"  # a subprocess's output is the cell's
    assert cells[7]["error"][0]["ename"] == "SystemExit"
    assert cells[8]["display"] == []
    assert a["files"] == {"out.txt": b64("abab")}


def test_timeouts_and_a_dead_interpreter_are_failed(http: httpx.Client) -> None:
    a = jupyter(http, ["import time", "time.sleep(0.6)", "print(1)"], cell_timeout=0.2)
    assert a["status"] == "Success", a
    assert a["cells"][1]["error"][0]["ename"] == "TimeoutError"
    assert a["cells"][2]["stdout"] == "1\n"  # the interpreter went on
    a = jupyter(http, ["import time; time.sleep(5)"], total_timeout=0.5)
    assert a["status"] == "Failed" and a["cells"] == [], a
    assert a["driver"]["status"] == "TimeLimitExceeded"
    a = jupyter(http, ["x = 1", "import os; os._exit(4)", "print(x)"])
    assert a["status"] == "Failed" and a["cells"] == [], a
    assert a["driver"]["return_code"] == 4 and "cell 2" in a["driver"]["stderr"]


def test_a_cell_cannot_forge_the_answer(http: httpx.Client) -> None:
    """The answer line is the runner's: a cell printing one, or writing to
    the runner's own stdout through /proc, only writes its own output."""
    forged = {"phase": "done", "timed_out": False, "return_code": 0, "execution_time": 0,
              "cells": [{"stdout": "FORGED", "stderr": "", "display": [], "error": []}],
              "all_cells": True, "files": {}}  # fmt: skip
    line = "\x1ecollimate-jupyter " + json.dumps(forged)
    a = jupyter(
        http,
        [
            f"print({line!r})",
            "import os\n"
            "try:\n"
            f"    fd = os.open(f'/proc/{{os.getppid()}}/fd/1', os.O_WRONLY)\n"
            f"    os.write(fd, ({line!r} + '\\n').encode()); print('wrote')\n"
            "except OSError as e:\n"
            "    print(type(e).__name__)",
        ],
    )
    assert a["status"] == "Success", a
    assert a["cells"][0]["stdout"] == line + "\n"
    assert a["cells"][1]["stdout"] != "wrote\n", a
    assert len(a["cells"]) == 2
    # what the server reads is the first marked line of each phase
    assert jupyter_response("", 0)["status"] == "SandboxError"


def test_bodies_sandbox_fusion_rejects_get_its_422(http: httpx.Client) -> None:
    for body, loc in (
        ({}, ["body", "cells"]),
        ({"cells": "print(1)"}, ["body", "cells"]),
        ({"cells": [], "kernel": "julia"}, ["body", "kernel"]),
        ({"cells": [], "total_timeout": -1}, ["body", "total_timeout"]),
        ({"cells": [], "files": {"../x": b64("x")}}, ["body", "files"]),
    ):
        r = http.post("/run_jupyter", json=body)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["detail"][0]["loc"] == loc


def test_run_code_counts_sleeping_against_run_timeout(http: httpx.Client) -> None:
    """SandboxFusion's ``run_timeout`` is wall time: a program asleep past it
    is ``TimeLimitExceeded``. Here it bounds the run's own time (wall time
    less waiting for a CPU), which a sleep is part of."""
    need("ruby")
    body = {"language": "ruby", "run_timeout": 2}  # (ruby may take 0.5 s to start here)
    slow = http.post("/run_code", json={**body, "code": "sleep(3)\nputs 1"}).json()
    assert slow["status"] == "Failed", slow
    assert slow["run_result"]["status"] == "TimeLimitExceeded"
    quick = http.post("/run_code", json={**body, "code": "sleep(0.05)\nputs 1"}).json()
    assert quick["status"] == "Success" and quick["run_result"]["stdout"] == "1\n", quick


def test_java_has_javatuples_and_python_an_own_mnt(http: httpx.Client) -> None:
    need("java")
    java = (
        "import org.javatuples.Pair;\n"
        "public class Main { public static void main(String[] a) {\n"
        "  System.out.println(Pair.with(1, 2).getValue1()); } }\n"
    )
    a = http.post("/run_code", json={"language": "java", "code": java}).json()
    assert a["status"] == "Success" and a["run_result"]["stdout"] == "2\n", a
    health = http.get("/v1/health").json()
    if health["isolation"] != "namespaces":
        pytest.skip("an own /mnt needs namespaces isolation")
    code = 'open("/mnt/b", "w").write("sauce")'
    a = http.post("/run_code", json={"language": "python", "code": code, "fetch_files": ["/mnt/b"]})
    assert a.json()["files"] == {"/mnt/b": b64("sauce")}, a.json()


def test_languages_no_registry_supplies_are_infra_errors(
    http: httpx.Client, backend: LocalCollimateBackend
) -> None:
    needs = {"julia": "Julia", "swift": "Swift", "lean": "Lean 4", "cuda": "GPU",
             "python_gpu": "GPU"}  # fmt: skip
    for language, named in needs.items():
        a = http.post("/run_code", json={"language": language, "code": "x"}).json()
        assert a["status"] == "SandboxError", a
        assert language in a["message"] and named in a["message"], a
    with CollimateClient(backend.base_url, timeout=300) as client:
        spec = ContestReward([("1\n", "1\n")], language="julia")
        with pytest.raises(CollimateError, match="julia"):
            grade(client, "py", "println(1)", spec)
        (flagged,) = grade_batch(client, "py", ["println(1)"], spec, on_infra_error="zero")
    assert flagged.infra_error and flagged.reward == 0.0
