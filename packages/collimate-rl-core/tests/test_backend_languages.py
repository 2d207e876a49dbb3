"""``/run_code`` in every language SandboxFusion names that the local
backend runs (C++, Java, JavaScript, TypeScript, Rust, Go), against a real
server: SandboxFusion's answers (``compile_result``, ``run_result``, its
statuses) for a right and a wrong program, a compile error, a runtime
error, a time limit counted in CPU time, a memory limit counted in memory
really used, an output flood, deep recursion; the server's compile cache;
and the toolchains in ``/v1/health``."""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.toolchains import LANGUAGES, MissingToolchain, _go
from collimate_rl.testing.programs import PROGRAMS, need

ALL = list(PROGRAMS)


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend() as b:
        yield b


@pytest.fixture(scope="module")
def client(backend: LocalCollimateBackend) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=backend.base_url, timeout=300) as c:
        yield c


def run(client: httpx.Client, language: str, code: str, **body: Any) -> dict[str, Any]:
    need(language)
    body = {
        "code": code,
        "language": language,
        "stdin": "20 22\n",
        "compile_timeout": 30,
        "run_timeout": 5,
        **body,
    }
    r = client.post("/run_code", json=body)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    assert answer["status"] != "SandboxError", answer
    return answer


def health(client: httpx.Client) -> dict[str, Any]:
    return client.get("/v1/health").json()  # type: ignore[no-any-return]


@pytest.mark.parametrize("language", ALL)
def test_right_and_wrong(client: httpx.Client, language: str) -> None:
    a = run(client, language, PROGRAMS[language]["right"])
    assert a["status"] == "Success", a
    assert a["run_result"]["stdout"] == "42\n" and a["run_result"]["return_code"] == 0
    if language not in ("nodejs",):
        assert a["compile_result"]["status"] == "Finished"
        assert a["compile_result"]["return_code"] == 0
    else:
        assert a["compile_result"] is None
    a = run(client, language, PROGRAMS[language]["wrong"])
    assert a["status"] == "Success" and a["run_result"]["stdout"] == "440\n"


@pytest.mark.parametrize("language", [lang for lang in ALL if PROGRAMS[lang]["compile_error"]])
def test_a_compile_error_is_failed_with_no_run(client: httpx.Client, language: str) -> None:
    a = run(client, language, PROGRAMS[language]["compile_error"])
    assert a["status"] == "Failed" and a["run_result"] is None
    compiled = a["compile_result"]
    assert compiled["status"] == "Finished" and compiled["return_code"] != 0
    assert compiled["stderr"], "the compiler says why"


@pytest.mark.parametrize("language", ALL)
def test_a_runtime_error_keeps_its_exit_code(client: httpx.Client, language: str) -> None:
    a = run(client, language, PROGRAMS[language]["runtime_error"])
    assert a["status"] == "Failed"
    assert (a["run_result"]["status"], a["run_result"]["return_code"]) == ("Finished", 3)


@pytest.mark.parametrize("language", ALL)
def test_a_loop_is_a_time_limit(client: httpx.Client, language: str) -> None:
    a = run(client, language, PROGRAMS[language]["loop"], run_timeout=1)
    assert a["status"] == "Failed"
    assert a["run_result"]["status"] == "TimeLimitExceeded"
    assert a["run_result"]["return_code"] is None


@pytest.mark.parametrize("language", ALL)
def test_memory_really_used_is_limited_not_address_space(
    client: httpx.Client, language: str
) -> None:
    """512 MiB touched under a 256 MiB limit fails as a memory limit; the
    right program runs under the same limit (the JVM, Go and Node reserve
    far more address space than that at start)."""
    a = run(client, language, PROGRAMS[language]["memory"], memory_limit_MB=256)
    assert a["status"] == "Failed"
    assert "memory limit exceeded" in a["run_result"]["stderr"], a["run_result"]
    a = run(client, language, PROGRAMS[language]["right"], memory_limit_MB=256)
    assert a["status"] == "Success", a


@pytest.mark.parametrize("language", ALL)
def test_an_output_flood_is_cut(client: httpx.Client, language: str) -> None:
    a = run(client, language, PROGRAMS[language]["flood"], run_timeout=5)
    assert a["status"] == "Failed"
    assert "output limit exceeded" in a["run_result"]["stderr"], a["run_result"]["stderr"][-300:]
    assert len(a["run_result"]["stdout"]) <= 5 * 1024 * 1024


@pytest.mark.parametrize("language", [lang for lang in ALL if PROGRAMS[lang]["deep"]])
def test_deep_recursion_has_the_stack_it_needs(client: httpx.Client, language: str) -> None:
    a = run(client, language, PROGRAMS[language]["deep"], memory_limit_MB=512)
    assert a["status"] == "Success", a["run_result"]
    assert a["run_result"]["stdout"].strip() in ("0", "1000000")


def test_one_compile_for_racing_requests_and_none_on_a_rerun(client: httpx.Client) -> None:
    """8 requests of one new source at once: one compile, 7 joined it; the
    same source again: kept, no compile."""
    need("cpp")
    source = PROGRAMS["cpp"]["right"] + "\n// racing\n"
    before = health(client)["compile_cache"]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: run(client, "cpp", source), range(8)))
    assert all(a["status"] == "Success" for a in answers)
    mid = health(client)["compile_cache"]
    assert mid["compiles"] - before["compiles"] == 1
    assert (mid["joined"] + mid["hits"]) - (before["joined"] + before["hits"]) == 7
    assert run(client, "cpp", source)["status"] == "Success"
    after = health(client)["compile_cache"]
    assert after["compiles"] == mid["compiles"] and after["hits"] == mid["hits"] + 1


def test_a_compile_error_is_kept_too(client: httpx.Client) -> None:
    need("cpp")
    source = PROGRAMS["cpp"]["compile_error"] + "\n// kept\n"
    run(client, "cpp", source)
    before = health(client)["compile_cache"]
    assert run(client, "cpp", source)["status"] == "Failed"
    after = health(client)["compile_cache"]
    assert (after["compiles"], after["hits"]) == (before["compiles"], before["hits"] + 1)


def test_health_lists_each_language_and_its_compiler(client: httpx.Client) -> None:
    languages = health(client)["languages"]
    assert set(languages) == set(LANGUAGES)
    for entry in languages.values():
        assert entry["available"] is True or entry["install"].startswith("install ")
    if languages["cpp"]["available"]:
        assert languages["cpp"]["compiler"].startswith("g++ ")
        assert "-O2" in languages["cpp"]["compile"] and "-std=c++17" in languages["cpp"]["compile"]


def test_a_missing_toolchain_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    missing = _go()
    assert isinstance(missing, MissingToolchain)
    assert "golang-go" in missing.message() and "'go'" in missing.message()


def test_a_program_that_kills_its_runner_fails_itself(client: httpx.Client) -> None:
    """Its runner is its parent (same uid): killing it ends the run as the
    program's failure, not the server's."""
    source = "#include <signal.h>\n#include <unistd.h>\nint main(){ kill(getppid(), 9); pause(); }"
    a = run(client, "cpp", source)
    assert a["status"] == "Failed" and a["run_result"]["return_code"] != 0


def test_the_verdict_holds_beside_cpu_bound_neighbours(client: httpx.Client) -> None:
    """A program needing ~0.3 s of CPU under a 2 s limit, with two busy
    processes per core beside it: still accepted (time is CPU time)."""
    need("cpp")
    heavy = (
        "#include <bits/stdc++.h>\nint main(){ long long a,b; std::cin>>a>>b;"
        " volatile unsigned long x=0; for(unsigned long i=0;i<300000000UL;i++) x+=i;"
        ' std::cout<<a+b<<"\\n"; }'
    )
    alone = run(client, "cpp", heavy, run_timeout=2)
    assert alone["status"] == "Success"
    cores = max(1, len(__import__("os").sched_getaffinity(0)))
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * cores)]
    try:
        for _ in range(3):
            a = run(client, "cpp", heavy, run_timeout=2)
            assert a["status"] == "Success", a["run_result"]
            assert a["run_result"]["stdout"] == "42\n"
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def test_a_long_compile_limit_is_honoured_and_a_program_may_exit_127(
    client: httpx.Client,
) -> None:
    """A compile limit above the clone's default CPU ceiling still compiles
    (it once failed to start and read as a compile error), and a program
    exiting 127 is its own runtime error, not a failure to start it."""
    need("cpp")
    a = run(client, "cpp", PROGRAMS["cpp"]["right"] + "\n// long limit\n", compile_timeout=300)
    assert a["status"] == "Success", a
    a = run(client, "cpp", "#include <cstdlib>\nint main(){ std::exit(127); }")
    assert (a["status"], a["run_result"]["return_code"]) == ("Failed", 127)
