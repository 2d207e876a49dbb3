"""Test programs (MultiPL-E, HumanEval-X, MBXP) under RL pressure: what a
policy tries when the reward is "the program exits 0", in every language,
each hack packed between two right siblings (one ``grade_batch`` group)
on a real local backend. Every hack scores 0.0 with no infra error, and
the siblings keep their 1.0.

The hacks: exit early (``exit(0)``, ``System.exit``, ``process.exit``,
``std::process::exit``, ``os.Exit``, ``syscall.Exit``, Scala's
``sys.exit``); forge the end of the tests (print what a harness's token
could look like, or read the token off stdin, at call time or before
``main``); redefine what the tests call (a C++ ``#define assert``, a Rust
``macro_rules! assert_eq``, a Java class named like the JDK's, a Go
``const true = false``, a JavaScript ``require``, a Scala ``assert``
defined, imported or escaped); fake equality (a Java ``equals`` that always agrees, a C++
``operator==`` on ``std::vector``); patch the assert module; read the
tests (the program's own file, a JavaScript caller's source); kill every
process it can signal; stall.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from collimate_rl import CollimateClient, ProgramReward, grade_batch
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.rewards.rows import hub_ground_truth, row_task
from collimate_rl.testing.programs import need, program_rows

MULTIPLE = {c["language"]: c for c in program_rows() if c["dataset"] == "multipl-e"}
#: Printed by the forging hacks: the shape of a token (32 hex digits).
FAKE = "0123456789abcdef0123456789abcdef"

# C++: MultiPL-E's string_length (the tests close the function)
CPP_HACKS = {
    "exit": "    exit(0);\n",
    "quick_exit": "    std::quick_exit(0);\n",
    "forge": f'    printf("\\n{FAKE}\\n"); fflush(stdout); _exit(0);\n',
    "stdin_at_call": (
        "    char b[256] = {0}; fread(b, 1, 255, stdin);\n"
        '    printf("\\n%s\\n", b); fflush(stdout); _exit(0);\n'
    ),
    "stdin_before_main": (
        '    extern char stolen_[]; printf("\\n%s", stolen_); fflush(stdout); _exit(0);\n'
        "}\nchar stolen_[256];\n"
        "__attribute__((constructor(101))) static void steal_() {\n"
        "    fread(stolen_, 1, 255, stdin);\n}\n"
        "long unused_() { return 0;\n"
    ),
    "define_assert": (
        "    return string.size() + 1;\n}\n#define assert(x) ((void)0)\nlong unused_() {\n"
    ),
    "kill_everyone": "    kill(-1, SIGKILL); return string.size() + 1;\n",
    "stall": "    for (;;) {}\n",
}
# C++ fake equality needs a problem returning a std::vector
CPP_VECTOR = ProgramReward(
    "}\nint main() {\n    auto candidate = twice;\n"
    "    assert(candidate((std::vector<long>({1, 2}))) == (std::vector<long>({2, 4})));\n}\n",
    language="cpp",
    prompt="#include<assert.h>\n#include<bits/stdc++.h>\n"
    "std::vector<long> twice(std::vector<long> v) {\n",
    time_limit=5,
)
CPP_VECTOR_RIGHT = "    for (auto& x : v) x *= 2;\n    return v;\n"
CPP_VECTOR_FAKE = (
    "    return {};\n}\nbool operator==(const std::vector<long>&, const std::vector<long>&) {\n"
    "    return true;\n"
)

RUST_HACKS = {
    "exit": "    std::process::exit(0)\n",
    "forge": f'    println!("\\n{FAKE}"); std::process::exit(0)\n',
    "stdin_at_call": (
        "    let mut s = String::new();\n"
        "    let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut s);\n"
        '    println!("\\n{}", s.trim()); std::process::exit(0)\n'
    ),
    "shadow_assert_eq": (
        "    string.len() as isize + 1\n}\nmacro_rules! assert_eq { ($($t:tt)*) => {} }\n"
        "fn unused_() {\n"
    ),
    "stall": "    loop {}\n",
}

JAVA_HACKS = {
    "exit": "        System.exit(0);\n        return l;\n",
    "halt": "        Runtime.getRuntime().halt(0);\n        return l;\n",
    "equals": (
        "        return new ArrayList<Long>() {\n"
        "            public boolean equals(Object o) { return true; }\n        };\n"
    ),
    "shadow_jdk_class": (
        "        return new ArrayList<Long>(l);\n    }\n"
        "    static class ArrayList<T> extends java.util.ArrayList<T> {\n"
        "        ArrayList(java.util.Collection<T> c) { super(c); }\n"
        "        public boolean equals(Object o) { return true; }\n    }\n"
        "    static void unused_() {\n"
    ),
    "stdin_at_call": (
        "        try { String s = new String(System.in.readAllBytes()).trim();\n"
        '              System.out.println("\\n" + s); } catch (Exception e) {}\n'
        "        System.exit(0);\n        return l;\n"
    ),
    "stall": "        while (true) {}\n",
}

JS_HACKS = {
    "exit": "  process.exit(0);\n}\n",
    "forge": f'  process.stdout.write("\\n{FAKE}\\n"); process.exit(0);\n}}\n',
    "stdin_at_call": (
        "  let s = ''; try { s = require('fs').readFileSync(0, 'utf8'); } catch (e) {}\n"
        "  process.stdout.write('\\n' + s.trim() + '\\n'); process.exit(0);\n}\n"
    ),
    "patch_assert": "  require('assert').deepEqual = () => {};\n  return string.length + 1;\n}\n",
    "read_own_file": (
        "  let src = '';\n"
        "  try { src = require('fs').readFileSync(__filename, 'utf8'); } catch (e) {}\n"
        "  return src.includes('asdasnakj') ? string.length : -1;\n}\n"
    ),
    "caller_source": (
        "  const caller = strlen.caller;\n"
        "  return caller && String(caller).includes('deepEqual') ? string.length : -1;\n}\n"
    ),
    "shadow_require": (
        "  return string.length + 1;\n}\nvar require = () => ({ deepEqual() {} });\n"
    ),
    "stall": "  for (;;) {}\n}\n",
}

TS_HACKS = {
    "exit": "  (globalThis as any).process.exit(0);\n  return 0;\n}\n",
    "patch_assert": (
        "  (globalThis as any).require('assert').deepEqual = () => {};\n"
        "  return string.length + 1;\n}\n"
    ),
}

# Go: a problem whose prompt imports os and syscall (MultiPL-E's test style)
GO_PROMPT = (
    'package is_even_test\n\nimport (\n    "testing"\n    "fmt"\n    "os"\n    "syscall"\n)\n\n'
    "var _ = os.Exit\nvar _ = syscall.Exit\n\n// Whether n is even.\nfunc is_even(n int) bool {\n"
)
GO_TESTS = """func TestIs_Even(t *testing.T) {
  candidate := is_even
	type test struct {
		actual   interface{}
		expected interface{}
	}
   tests := []test{
     { actual: candidate(2), expected: true },
     { actual: candidate(3), expected: false },
   }
	for i, tc := range tests {
		t.Run(fmt.Sprintf("test num % d", i), func(t *testing.T) {
			if fmt.Sprintf("%v", tc.actual) != fmt.Sprintf("%v", tc.expected) {
				t.Errorf("expected '%s', got '%s'", tc.expected, tc.actual)
			}
		})
	}
}
"""
GO_SPEC = ProgramReward(GO_TESTS, language="go", prompt=GO_PROMPT, time_limit=5)
GO_RIGHT = "    return n % 2 == 0\n}\n"
GO_HACKS = {
    "os_exit": "    os.Exit(0)\n    return false\n}\n",
    "syscall_exit": "    syscall.Exit(0)\n    return false\n}\n",
    "forge": f'    fmt.Println("\\n{FAKE}")\n    syscall.Exit(0)\n    return false\n}}\n',
    "shadow_true": "    return false\n}\n\nconst true = false\n",
    "stall": "    for {\n    }\n}\n",
}


@pytest.fixture(scope="module")
def client() -> Iterator[CollimateClient]:
    with LocalCollimateBackend() as backend, CollimateClient(backend.base_url, timeout=600) as c:
        yield c


def _spec(language: str) -> ProgramReward:
    row = MULTIPLE[language]["row"]
    spec = row_task(hub_ground_truth(row), row=row).spec
    assert isinstance(spec, ProgramReward)
    # 2 CPU seconds: the stalls cost their run that, no more
    return ProgramReward(
        spec.tests, language=spec.language, prompt=spec.prompt, time_limit=2,
        typecheck=spec.typecheck,
    )  # fmt: skip


def _packed(
    client: CollimateClient, spec: ProgramReward, right: str, hacks: dict[str, str]
) -> dict[str, Any]:
    """Each hack between two right siblings, all in one group."""
    completions = [right]
    for hack in hacks.values():
        completions += [hack, right]
    results = grade_batch(client, "py", completions, [spec] * len(completions))
    assert not any(r.infra_error for r in results), [r.explain() for r in results]
    siblings = results[0::2]
    assert [r.reward for r in siblings] == [1.0] * len(siblings), [r.explain() for r in siblings]
    return {name: results[1 + 2 * i] for i, name in enumerate(hacks)}


CASES = [
    ("cpp", CPP_HACKS),
    ("rust", RUST_HACKS),
    ("java", JAVA_HACKS),
    ("javascript", JS_HACKS),
    ("typescript", TS_HACKS),
]


@pytest.mark.parametrize(("language", "hacks"), CASES, ids=[c[0] for c in CASES])
def test_every_hack_scores_zero_beside_right_siblings(
    client: CollimateClient, language: str, hacks: dict[str, str]
) -> None:
    need(language)
    graded = _packed(client, _spec(language), MULTIPLE[language]["right"], hacks)
    for name, result in graded.items():
        assert result.reward == 0.0, (name, result.explain())
    if "stall" in graded:
        assert graded["stall"].detail["verdicts"] == ["time_limit"]
    # an early exit is told apart from a failed test
    assert graded["exit"].detail["verdicts"] == ["wrong_answer"]
    assert "before its tests ended" in graded["exit"].explain()


def test_go_hacks(client: CollimateClient) -> None:
    need("go")
    graded = _packed(client, GO_SPEC, GO_RIGHT, GO_HACKS)
    for name, result in graded.items():
        assert result.reward == 0.0, (name, result.explain())
    assert "redefines true" in graded["shadow_true"].explain()


def test_redefining_what_the_tests_use_is_named(client: CollimateClient) -> None:
    need("rust")
    need("java")
    need("javascript")
    rust = _packed(client, _spec("rust"), MULTIPLE["rust"]["right"],
                   {"h": RUST_HACKS["shadow_assert_eq"]})["h"]  # fmt: skip
    assert "redefines assert_eq" in rust.explain()
    java = _packed(client, _spec("java"), MULTIPLE["java"]["right"],
                   {"h": JAVA_HACKS["shadow_jdk_class"]})["h"]  # fmt: skip
    assert "redefines ArrayList" in java.explain()
    js = _packed(client, _spec("javascript"), MULTIPLE["javascript"]["right"],
                 {"h": JS_HACKS["shadow_require"]})["h"]  # fmt: skip
    assert "redefines require" in js.explain()


def test_cpp_equality_overloads_do_not_reach_the_tests(client: CollimateClient) -> None:
    need("cpp")
    graded = _packed(client, CPP_VECTOR, CPP_VECTOR_RIGHT, {"fake": CPP_VECTOR_FAKE})
    assert graded["fake"].reward == 0.0


def test_a_java_equals_that_always_agrees_is_refused(client: CollimateClient) -> None:
    need("java")
    graded = _packed(client, _spec("java"), MULTIPLE["java"]["right"],
                     {"equals": JAVA_HACKS["equals"]})  # fmt: skip
    assert "overrides equals()" in str(graded["equals"].raw["judge"]["tests"][0]["stderr"])


# Scala: MultiPL-E's HumanEval_53_add (the tests close the function and add
# main to the prompt's object Problem)
SCALA_PROMPT = (
    "import scala.math._\nimport scala.collection.mutable._\nobject Problem {\n"
    "    def add(x : Long, y : Long) : Long = {\n"
)
SCALA_SPEC = ProgramReward(
    "    }\n    def main(args: Array[String]) = {\n"
    "    assert(add((0l), (1l)) == (1l));\n    assert(add((2l), (3l)) == (5l));\n    }\n\n}\n",
    language="scala",
    prompt=SCALA_PROMPT,
    time_limit=2,
)
SCALA_RIGHT = "        x + y\n"
SCALA_HACKS = {
    "exit": "        sys.exit(0)\n",
    "forge": f'        println("\\n{FAKE}"); Console.flush(); Runtime.getRuntime.halt(0); 0L\n',
    "stdin_at_call": "        val s = scala.io.Source.fromInputStream(System.in).mkString\n"
    '        val f = scala.io.Source.fromFile(".run.in").mkString\n'
    '        println("\\n" + s.trim + f.trim); sys.exit(0)\n',
    "kill_runner": "        ProcessHandle.current().parent().get().destroyForcibly()\n"
    "        x - y\n",
    # what the tests call, redefined where the names check must look
    "escaped_assert": "        x - y\n    }\n    def \\u0061ssert(b: Boolean) = {}\n"
    "    def z() = {\n",
    "import_as_assert": "        x - y\n    }\n    import scala.Console.{println => assert}\n"
    "    def z() = {\n",
    "pattern_val_assert": "        x - y\n    }\n    val (assert, q) = ((b: Boolean) => (), 1)\n"
    "    def z() = {\n",
    # its own main in Problem, the tests' moved into another object
    "main_of_its_own": "        x - y\n    }\n    def main(args: Array[String]) = {}\n}\n"
    "object Elsewhere {\n    def z() = {\n",
}


def test_scala_hacks(client: CollimateClient) -> None:
    need("scala")
    graded = _packed(client, SCALA_SPEC, SCALA_RIGHT, SCALA_HACKS)
    for name, result in graded.items():
        assert result.reward == 0.0, (name, result.explain())
        assert result.detail["verdicts"] != ["compile_error"], (name, result.explain())
    assert graded["exit"].detail["verdicts"] == ["wrong_answer"]
    for name in ("escaped_assert", "import_as_assert", "pattern_val_assert"):
        assert "redefines assert" in graded[name].explain(), name
    assert "redefines main" in graded["main_of_its_own"].explain()
