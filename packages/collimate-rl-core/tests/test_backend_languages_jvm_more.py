"""Scala and Kotlin scripts on a real local backend, with the host's scalac
and kotlinc: contest programs through ``ContestReward`` (every verdict:
right, wrong, partial credit, compile error, runtime error, time, memory
and output limits, a checker's), a MultiPL-E Scala row through the
program harness (the canonical answer 1.0; a mutant, an early exit, a
redefinition of what the tests use and a forged equality 0.0), and
``/run_code`` as
SandboxFusion's own tests of ``scala`` and ``kotlin_script`` send it.

A JVM starts in a few tenths of a CPU second: time limits are 1 s, and
each language's candidates go in as few grade calls as their limits allow
(the CI machine is small)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from collimate_rl import CollimateClient, ContestReward, ProgramReward, grade, grade_batch
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.jvm_languages import scala_object
from collimate_rl.local_backend.toolchains import (
    ALIASES,
    LANGUAGES,
    find_toolchains,
)
from collimate_rl.rewards.rows import hub_ground_truth, row_task
from collimate_rl.testing.fixtures import module_backend
from collimate_rl.testing.programs import need

LANGS = ["scala", "kotlin"]
#: ``a b`` -> ``a + b``, each right on its own by no other program here.
TESTS = [(f"{i} {3 * i}\n", f"{4 * i}\n") for i in range(3)]


def _scala(body: str) -> str:
    return (
        "object Main {\n  def main(args: Array[String]): Unit = {\n"
        '    val Array(a, b) = scala.io.StdIn.readLine().trim.split("\\\\s+").map(_.toLong)\n'
        f"    {body}\n  }}\n}}\n"
    )


def _kotlin(body: str) -> str:
    return (
        f'val (a, b) = readLine()!!.trim().split(Regex("\\\\s+")).map {{ it.toLong() }}\n{body}\n'
    )


PROGRAMS: dict[str, dict[str, str]] = {
    "scala": {
        "right": _scala("println(a + b)"),
        "wrong": _scala("println(a + b + 1)"),
        # right while a < 2: the first two tests of three
        "partial": _scala("println(if (a < 2) a + b else a - b)"),
        # two numbers summing to the answer: right only for the checker
        "split": _scala('println(s"$a $b")'),
        "compile_error": _scala('val x: Int = "s"'),
        "runtime_error": _scala("sys.exit(3)"),
        "loop": _scala("while (true) {}"),
        "memory": _scala(
            "val k = new java.util.ArrayList[Array[Long]]()\n"
            "    while (true) k.add(Array.fill(1 << 23)(a + 1))"
        ),
        "flood": _scala('val s = "x" * 65535 + "\\n"\n    while (true) print(s)'),
    },
    "kotlin": {
        "right": _kotlin("println(a + b)"),
        "wrong": _kotlin("println(a + b + 1)"),
        "partial": _kotlin("println(if (a < 2) a + b else a - b)"),
        "split": _kotlin('println("$a $b")'),
        "compile_error": _kotlin('val x: Int = "s"'),
        "runtime_error": _kotlin("kotlin.system.exitProcess(3)"),
        "loop": _kotlin("while (true) {}"),
        "memory": _kotlin(
            "val k = ArrayList<LongArray>()\nwhile (true) k.add(LongArray(1 shl 23) { a + 1 })"
        ),
        "flood": _kotlin('val s = "x".repeat(65535) + "\\n"\nwhile (true) print(s)'),
    },
}
#: An open-r1 checker: right when the two numbers printed sum to the answer.
CHECKER = {
    "protocol": "openr1",
    "language": "python",
    "source": "import sys\ninp, correct, got = (open(p).read().split() for p in sys.argv[1:4])\n"
    "print(1 if len(got) == 2 and int(got[0]) + int(got[1]) == int(correct[0]) else 0)\n",
}

backend, client = module_backend(timeout=600)


def test_the_languages_and_their_sandbox_fusion_names() -> None:
    assert set(LANGS) <= set(LANGUAGES)
    assert ALIASES["scala"] == "scala"
    assert ALIASES["kotlin"] == ALIASES["kotlin_script"] == ALIASES["kt"] == "kotlin"


def test_the_scala_object_is_found_as_sandbox_fusion_finds_it() -> None:
    assert scala_object("object HelloWorld {\n def main(args: Array[String]) = {}\n}") == (
        "HelloWorld"
    )
    assert scala_object("// x\n    object Main extends App {\n  foo()\n}") == "Main"
    assert scala_object("class A extends B {}\nobject C") is None  # extends ... { came first
    assert scala_object("class A { def main(args: Array[String]) = {} }") is None


@pytest.mark.parametrize("language", LANGS)
def test_every_verdict(client: CollimateClient, language: str) -> None:
    need(language)
    programs = PROGRAMS[language]
    spec = ContestReward(TESTS, language=language, time_limit=1, memory_limit_mb=256)
    # the programs that run out of a limit, on one test (they cost CPU)
    one = ContestReward(TESTS[:1], language=language, time_limit=1, memory_limit_mb=256)
    checked = ContestReward(TESTS, language=language, time_limit=1, checker=CHECKER)
    names = ["right", "wrong", "partial", "compile_error", "runtime_error", "loop", "flood",
             "split", "wrong"]  # fmt: skip
    specs = [spec] * 5 + [one] * 2 + [checked] * 2
    results = grade_batch(client, "py", [programs[n] for n in names], specs)
    got = [(r.reward, r.detail.get("verdicts")) for r in results]
    assert not any(r.infra_error for r in results), [r.explain() for r in results]
    assert got[0] == (1.0, ["accepted"] * 3), results[0].explain()
    assert got[1] == (0.0, ["wrong_answer"] * 3)
    assert got[2] == (pytest.approx(2 / 3), ["accepted", "accepted", "wrong_answer"])
    assert got[3] == (0.0, ["compile_error"] * 3)
    assert got[4] == (0.0, ["runtime_error"] * 3)
    assert got[5] == (0.0, ["time_limit"])
    assert got[6] == (0.0, ["output_limit"])
    assert got[7] == (1.0, ["accepted"] * 3), results[7].explain()  # the checker's
    assert got[8] == (0.0, ["wrong_answer"] * 3)
    # 512 MiB touched under 256: the memory it used (its resident set),
    # never the JVM's OutOfMemoryError; judged alone, with time to spare
    roomy = ContestReward(TESTS[:1], language=language, time_limit=5, memory_limit_mb=256)
    memory = grade(client, "py", programs["memory"], roomy)
    assert (memory.reward, memory.detail["verdicts"]) == (0.0, ["memory_limit"]), memory.explain()


#: MultiPL-E's HumanEval_53_add in Scala, as SandboxFusion's samples
#: (``sandbox/tests/datasets/samples/Multi-PLE/humaneval-scala.jsonl``) hold it.
SCALA_ADD = {
    "name": "HumanEval_53_add",
    "language": "scala",
    "prompt": "import scala.math._\nimport scala.collection.mutable._\nobject Problem {\n"
    "    // Add two numbers x and y\n    // >>> add((2l), (3l))\n    // (5l)\n"
    "    // >>> add((5l), (7l))\n    // (12l)\n    def add(x : Long, y : Long) : Long = {\n",
    "tests": "    }\n    def main(args: Array[String]) = {\n"
    + "".join(
        f"    assert(add(({x}l), ({y}l)) == ({x + y}l));\n"
        for x, y in ((0, 1), (1, 0), (2, 3), (5, 7), (7, 5))
    )
    + "    }\n\n}\n",
    "stop_tokens": ["\n    }\n"],
}
#: Whole programs past the function (judged without the stop tokens, which
#: would cut them), each due 0.0; the other hacks are
#: ``test_grading_program_hacks``' (``SCALA_HACKS``).
SCALA_PAST = {
    # the object's body runs when the tests' main is first called
    "exit_early": "        x + y\n    }\n    sys.exit(0)\n    def z() = {\n",
    # refused without a compile
    "define_assert": "        x - y\n    }\n    def assert(b: Boolean) = {}\n    def z() = {\n",
}
#: HumanEval_111_histogram's tests compare with ``.equals``: a mutable Map
#: of the candidate's whose equals always agrees (its name escaped), refused.
SCALA_HISTOGRAM = {
    "prompt": "import scala.math._\nimport scala.collection.mutable._\nobject Problem {\n"
    "    def histogram(test : String) : Map[String,Long] = {\n",
    "tests": "    }\n    def main(args: Array[String]) = {\n"
    '    assert(histogram(("a b b a")).equals((Map[String,Long]("a" -> 2l, "b" -> 2l))));\n'
    "    }\n\n}\n",
    "forged": "        new HashMap[String, Long] { override def \\u0065quals(o: Any) = true }\n",
}


def test_a_multipl_e_scala_row(client: CollimateClient) -> None:
    """MultiPL-E's row through the harness: its canonical answer 1.0, a
    mutant 0.0 (an assert fails), an exit 0 before the tests and a
    redefinition of what the tests use 0.0, a forged equality refused."""
    need("scala")
    row = dict(SCALA_ADD)
    task = row_task(hub_ground_truth(row), row=row)
    assert isinstance(task.spec, ProgramReward) and task.spec.language == "scala"
    uncut = ProgramReward(row["tests"], language="scala", prompt=row["prompt"], time_limit=2)
    histogram = ProgramReward(
        SCALA_HISTOGRAM["tests"], language="scala", prompt=SCALA_HISTOGRAM["prompt"]
    )
    names = ["right", "wrong", *SCALA_PAST, "forged_equals"]
    sources = [task.program("        x + y\n    }\n"), task.program("        x - y\n    }\n")]
    sources += [row["prompt"] + body for body in SCALA_PAST.values()]
    sources.append(SCALA_HISTOGRAM["prompt"] + SCALA_HISTOGRAM["forged"])
    specs = [task.spec] * 2 + [uncut] * len(SCALA_PAST) + [histogram]
    results = grade_batch(client, "py", sources, specs)
    assert not any(r.infra_error for r in results), [r.explain() for r in results]
    got = dict(zip(names, results, strict=True))
    assert got["right"].reward == 1.0, got["right"].explain()
    assert [got[n].reward for n in names[1:]] == [0.0] * (len(names) - 1), [
        (n, got[n].explain()) for n in names
    ]
    assert got["wrong"].detail["verdicts"] == ["runtime_error"]  # an assert failed
    assert got["exit_early"].detail["verdicts"] == ["wrong_answer"], got["exit_early"].detail
    assert "before its tests ended" in got["exit_early"].explain()
    assert "redefines assert" in got["define_assert"].explain()
    assert "redefines equals" in got["forged_equals"].explain()


def _run(http: httpx.Client, language: str, code: str, **more: Any) -> dict[str, Any]:
    answer = http.post("/run_code", json={"code": code, "language": language, **more})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_run_code_scala_as_sandbox_fusion_tests_it(backend: LocalCollimateBackend) -> None:
    """SandboxFusion's own tests of its Scala runner: print, sleep past the timeout,
    ``assert`` passing and failing in ``main`` and in ``extends App``; and
    its answer to a program with no object."""
    need("scala")
    hello = (
        "object HelloWorld {\n    def main(args: Array[String]): Unit = {\n        BODY\n    }\n}\n"
    )
    with httpx.Client(base_url=backend.base_url, timeout=300) as http:
        printing = hello.replace("BODY", 'println("Hello, World!")')
        a = _run(http, "scala", printing, compile_timeout=20, run_timeout=5)
        assert (a["status"], a["run_result"]["stdout"]) == ("Success", "Hello, World!\n"), a
        assert a["compile_result"]["return_code"] == 0
        a = _run(http, "scala", hello.replace("BODY", "Thread.sleep(5 * 1000)"), compile_timeout=20,
                 run_timeout=1)  # fmt: skip
        assert (a["status"], a["run_result"]["status"]) == ("Failed", "TimeLimitExceeded"), a
        for ok, check in ((True, "(0l) == (0l)"), (False, "(1l) == (0l)")):
            in_main = hello.replace("BODY", f"assert({check});")
            in_app = (
                f"object Main extends App {{\n  def foo() = {{ assert({check}); }}\n  foo()\n}}\n"
            )
            for code in (in_main, in_app):
                a = _run(http, "scala", code, compile_timeout=20)
                assert a["run_result"]["status"] == "Finished", a
                assert a["status"] == ("Success" if ok else "Failed"), a
                if not ok:
                    assert "assertion failed" in a["run_result"]["stderr"], a
        a = _run(http, "scala", "class A { def f = 1 }\n")
        assert (a["status"], a["compile_result"]["status"], a["run_result"]) == (
            "Failed", "Error", None,
        ), a  # fmt: skip
        assert a["compile_result"]["stderr"] == "Object name not found."


#: The programs of SandboxFusion's own tests of its Kotlin script runner.
KOTLIN_CHECK = (
    "fun minCost() : Int {\n    return 0\n}\n\nfun main() {\n    var x : Int = minCost();\n"
    "    var y : Int = WANT;\n    if (x != y) {\n"
    '        throw Exception("Exception -- test case did not pass. x = " + x)\n    }\n}\n\nmain()\n'
)


def test_run_code_kotlin_script_as_sandbox_fusion_tests_it(
    backend: LocalCollimateBackend,
) -> None:
    """SandboxFusion's own tests of its Kotlin script runner: print, sleep past the
    timeout, a check passing and one throwing; a compile error is its run's
    failure there (it runs the script from source), so here too."""
    need("kotlin")
    with httpx.Client(base_url=backend.base_url, timeout=300) as http:
        a = _run(http, "kotlin_script", '\nprintln("Hello, World!")\n    ', run_timeout=30)
        assert (a["status"], a["run_result"]["stdout"].strip()) == ("Success", "Hello, World!"), a
        assert a["compile_result"] is None
        sleeper = 'fun main() {\n    println("Starting...")\n    Thread.sleep(2000)\n' \
            '    println("Finished!")\n}\n\nmain()\n'  # fmt: skip
        a = _run(http, "kotlin_script", sleeper, run_timeout=1)
        assert (a["status"], a["run_result"]["status"]) == ("Failed", "TimeLimitExceeded"), a
        a = _run(http, "kotlin_script", KOTLIN_CHECK.replace("WANT", "0"), run_timeout=40)
        assert (a["status"], a["run_result"]["status"]) == ("Success", "Finished"), a
        a = _run(http, "kotlin_script", KOTLIN_CHECK.replace("WANT", "1"), run_timeout=20)
        assert (a["status"], a["run_result"]["status"]) == ("Failed", "Finished"), a
        assert "java.lang.Exception" in a["run_result"]["stderr"]
        a = _run(http, "kotlin_script", 'val x: Int = "s"\n')
        assert (a["status"], a["compile_result"], a["run_result"]["status"]) == (
            "Failed", None, "Finished",
        ), a  # fmt: skip
        assert a["run_result"]["return_code"] != 0 and "type mismatch" in a["run_result"]["stderr"]


def test_health_names_each_compiler_with_its_version() -> None:
    found = find_toolchains()
    for language, name in (("scala", "scalac 2."), ("kotlin", "kotlinc 1.")):
        need(language)
        tc = found[language]
        assert tc.describe()["available"] and tc.describe()["compiler"].startswith(name)  # type: ignore[union-attr]
        assert " on java " in tc.describe()["compiler"]  # type: ignore[union-attr]
