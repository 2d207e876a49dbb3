"""C# (Mono) and D (LDC) on a real local backend, with the host's own
compilers: contest programs through ``ContestReward`` (every verdict:
right, wrong, partial credit, compile error, runtime error, time, memory
and output limits, a problem judged by a checker written in the other
language), MultiPL-E rows of each through the program harness (its
canonical answer 1.0; a mutant, an early exit, a redefinition of what the
tests use and the harness's language-specific guards 0.0), and
``/run_code`` answering SandboxFusion's own test requests for ``csharp``
and ``D_ut`` as SandboxFusion does.

Limits are small (0.5 CPU seconds for a loop): the CI machine is small."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from collimate_rl import CollimateClient, ContestReward, ProgramReward, grade_batch
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.toolchains import (
    ALIASES,
    LANGUAGES,
    find_toolchains,
)
from collimate_rl.rewards.rows import hub_ground_truth, row_task
from collimate_rl.testing.fixtures import module_backend
from collimate_rl.testing.programs import need

LANGS = ["csharp", "d"]
#: ``a b`` -> ``a + b``, each right on its own by no other program here.
TESTS = [(f"{i} {3 * i}\n", f"{4 * i}\n") for i in range(3)]

_CS_READ = (
    "using System;\nusing System.Collections.Generic;\nclass P {\n  static void Main() {\n"
    "    string[] s = Console.In.ReadToEnd().Split((char[])null,"
    " StringSplitOptions.RemoveEmptyEntries);\n"
    "    long a = long.Parse(s[0]), b = long.Parse(s[1]);\n"
)
#: (C's stdio from druntime: an optimized compile importing Phobos'
#: std.stdio costs 2 CPU seconds, this one 0.05)
_D_READ = 'import core.stdc.stdio;\nvoid main() {\n  long a, b;\n  scanf("%lld %lld", &a, &b);\n'
PROGRAMS: dict[str, dict[str, str]] = {
    "csharp": {
        "right": _CS_READ + "    Console.WriteLine(a + b);\n  }\n}\n",
        "wrong": _CS_READ + "    Console.WriteLine(a + b + 1);\n  }\n}\n",
        # right while a < 2: the first two tests of three
        "partial": _CS_READ + "    Console.WriteLine(a < 2 ? a + b : a - b);\n  }\n}\n",
        "split": _CS_READ + '    Console.WriteLine(a + " " + b);\n  }\n}\n',
        "compile_error": "class P { static void Main() { int x = ; } }\n",
        "runtime_error": _CS_READ + '    throw new InvalidOperationException("no");\n  }\n}\n',
        "loop": _CS_READ + "    for (;;) { a++; }\n  }\n}\n",
        "memory": _CS_READ + "    var keep = new List<byte[]>();\n"
        "    for (;;) { var m = new byte[16 << 20]; for (int i = 0; i < m.Length; i += 4096)"
        " m[i] = 1; keep.Add(m); }\n  }\n}\n",
        "flood": _CS_READ + "    string x = new string('x', 65535);\n"
        "    for (;;) Console.WriteLine(x);\n  }\n}\n",
    },
    "d": {
        "right": _D_READ + '  printf("%lld\\n", a + b);\n}\n',
        "wrong": _D_READ + '  printf("%lld\\n", a + b + 1);\n}\n',
        "partial": _D_READ + '  printf("%lld\\n", a < 2 ? a + b : a - b);\n}\n',
        "split": _D_READ + '  printf("%lld %lld\\n", a, b);\n}\n',
        "compile_error": "void main() { int x = ; }\n",
        "runtime_error": _D_READ + '  throw new Exception("no");\n}\n',
        "loop": _D_READ + '  for (;;) { a = a * 3 + b; if (a == 42) printf("!"); }\n}\n',
        "memory": _D_READ + "  ubyte[][] keep;\n"
        "  for (;;) { auto m = new ubyte[16 << 20]; m[] = 1; keep ~= m; }\n}\n",
        "flood": _D_READ + "  char[65536] x = 'x';\n"
        "  for (;;) fwrite(x.ptr, 1, x.length, stdout);\n}\n",
    },
}
#: A testlib checker (argv: input output answer) accepting two numbers that
#: sum to the answer, in the other language than the candidates'.
CHECKERS: dict[str, str] = {
    "csharp": "import core.stdc.stdio;\nint main(string[] argv) {\n  long x, y, want;\n"
    '  auto output = fopen((argv[2] ~ "\\0").ptr, "r");\n'
    '  auto answer = fopen((argv[3] ~ "\\0").ptr, "r");\n'
    '  if (fscanf(answer, "%lld", &want) != 1) return 3;\n'
    '  if (fscanf(output, "%lld %lld", &x, &y) != 2) return 2;\n'
    "  return x + y == want ? 0 : 1;\n}\n",
    "d": "using System;\nusing System.IO;\nclass C {\n  static int Main(string[] argv) {\n"
    "    string[] got = File.ReadAllText(argv[1]).Split((char[])null,"
    " StringSplitOptions.RemoveEmptyEntries);\n"
    "    long want = long.Parse(File.ReadAllText(argv[2]).Trim());\n"
    "    if (got.Length != 2) return 2;\n"
    "    return long.Parse(got[0]) + long.Parse(got[1]) == want ? 0 : 1;\n  }\n}\n",
}
CHECKER_LANGUAGE = {"csharp": "d", "d": "csharp"}

#: MultiPL-E's HumanEval_53_add in each language, in its own shape, with
#: the canonical answer and a mutant (completions, cut at the stop tokens),
#: and whole programs past the function (judged uncut): ``early`` exits 0
#: before the tests, ``shadow`` redefines what the tests use, the others
#: test the language's own guards (see the program harness).
_CS_ADD_TESTS = (
    "    }\n    public static void Main(string[] args) {\n"
    + "".join(
        f"    Debug.Assert(Add(({x}L), ({y}L)) == ({x + y}L));\n"
        for x, y in ((0, 1), (1, 0), (2, 3), (5, 7), (7, 5))
    )
    + "    }\n\n}\n"
)
_D_ADD_TESTS = (
    "unittest\n{\n    alias candidate = add;\n\n"
    + "".join(
        f"    assert(candidate({x}L, {y}L) == {x + y}L);\n"
        for x, y in ((0, 1), (1, 0), (2, 3), (5, 7), (7, 5))
    )
    + "}\nvoid main(){}"
)
ADD_ROWS: dict[str, dict[str, Any]] = {
    "csharp": {
        "language": "cs",
        "prompt": "using System;\nusing System.Numerics;\nusing System.Diagnostics;\n"
        "using System.Collections.Generic;\nusing System.Linq;\nusing System.Text;\n"
        "using System.Security.Cryptography;\nclass Problem {\n"
        "    // Add two numbers x and y\n    // >>> Add((2L), (3L))\n    // (5L)\n"
        "    // >>> Add((5L), (7L))\n    // (12L)\n    public static long Add(long x, long y) {\n",
        "tests": _CS_ADD_TESTS,
        "stop_tokens": ["\n    }\n"],
        "right": "        return x + y;\n",
        "wrong": "        return x - y;\n",
        # the tests' class's static constructor runs before its Main
        "early": "        return x + y;\n    }\n"
        "    static Problem() { System.Environment.Exit(0); }\n    static void F() {\n",
        "shadow": "        return x - y;\n    }\n"
        "    class Debug { public static void Assert(bool c) {} }\n    static void F() {\n",
        # Mono goes on after a failed Debug.Assert: silencing them would pass
        "listeners": "        Debug.Listeners.Clear();\n        return x - y;\n",
        # its own failed assert fails it, as MultiPL-E's harness does
        "own_assert": "        Debug.Assert(x < 0, \"mine\");\n        return x + y;\n",
        "forged": "        return x - y;\n    }\n    class EqualList : List<long> {\n"
        "        public override bool Equals(object o) { return true; }\n"
        "        public override int GetHashCode() { return 0; }\n    }\n    static void F() {\n",
    },
    "d": {
        "language": "d",
        "prompt": "import std.math;\n/*\nAdd two numbers x and y\n    >>> add(2L, 3L)\n    5L\n"
        "    >>> add(5L, 7L)\n    12L\n    \n*/\nlong add(long x, long y) \n",
        "tests": _D_ADD_TESTS,
        "stop_tokens": ["\n\n", "\nvoid", "\nbool", "\nint"],
        "right": "{\n    return x + y;\n}\n",
        "wrong": "{\n    return x - y;\n}\n",
        "early": "{\n    return x + y;\n}\n"
        "shared static this() { import core.stdc.stdlib : exit; exit(0); }\n",
        # libc's memcmp, which array equality calls, replaced for the whole
        # program (every == on arrays then holds); and hidden in a mixin
        "shadow": "{\n    return x - y;\n}\n"
        "extern(C) int memcmp(const void* a, const void* b, size_t n) { return 0; }\n",
        "mixin": "{\n    return x - y;\n}\n"
        'mixin("extern" ~ "(C) int memcmp(const void* a, const void* b, size_t n)"'
        ' ~ " { return 0; }");\n',
        # druntime's unittest run skipped: the harness runs them itself
        "tester": "{\n    return x - y;\n}\nshared static this() {\n    import core.runtime;\n"
        "    Runtime.extendedModuleUnitTester = () => UnitTestResult(0, 0, true, false);\n}\n",
    },
}

backend, client = module_backend(timeout=600)


def test_the_languages_and_their_sandbox_fusion_names() -> None:
    assert {"csharp", "d", "d_ut"} <= set(LANGUAGES)
    assert [ALIASES[n] for n in ("csharp", "cs", "c#", "d", "d_ut")] == [
        "csharp", "csharp", "csharp", "d", "d_ut",
    ]  # fmt: skip


@pytest.mark.parametrize("language", LANGS)
def test_every_verdict(client: CollimateClient, language: str) -> None:
    need(language)
    programs = PROGRAMS[language]
    spec = ContestReward(TESTS, language=language, time_limit=0.5, memory_limit_mb=256)
    # the programs that run out of a limit, on one test (they cost CPU)
    one = ContestReward(TESTS[:1], language=language, time_limit=0.5, memory_limit_mb=256)
    names = ["right", "wrong", "partial", "compile_error", "runtime_error", "loop", "flood"]
    specs = [spec] * 5 + [one] * 2
    results = grade_batch(client, "py", [programs[n] for n in names], specs)
    got = {n: (r.reward, r.detail.get("verdicts")) for n, r in zip(names, results, strict=True)}
    assert not any(r.infra_error for r in results), [r.explain() for r in results]
    assert got["right"] == (1.0, ["accepted"] * 3), results[0].explain()
    assert got["wrong"] == (0.0, ["wrong_answer"] * 3)
    assert got["partial"] == (pytest.approx(2 / 3), ["accepted", "accepted", "wrong_answer"])
    assert results[3].reward == 0.0 and "compile_error" in results[3].explain()
    assert got["runtime_error"] == (0.0, ["runtime_error"] * 3)
    assert got["loop"] == (0.0, ["time_limit"])
    assert got["flood"] == (0.0, ["output_limit"])
    # memory, judged with time to spare: the memory limit's verdict
    # (never a crash of the runtime's heap under the limit); and a right
    # answer under a tight limit runs (Mono's heap reserves address space,
    # not memory)
    roomy = ContestReward(TESTS[:1], language=language, time_limit=5, memory_limit_mb=64)
    tight = ContestReward(TESTS[:1], language=language, time_limit=1, memory_limit_mb=32)
    memory, small = grade_batch(client, "py", [programs["memory"], programs["right"]],
                                [roomy, tight])  # fmt: skip
    assert (memory.reward, memory.detail["verdicts"]) == (0.0, ["memory_limit"]), memory.explain()
    assert small.reward == 1.0, small.explain()


@pytest.mark.parametrize("language", LANGS)
def test_a_checker_problem(client: CollimateClient, language: str) -> None:
    """Two numbers summing to the answer, accepted by a testlib checker in
    the other language (a plain comparison would refuse them)."""
    need(language)
    need(CHECKER_LANGUAGE[language])
    checker = {"protocol": "testlib", "language": CHECKER_LANGUAGE[language],
               "source": CHECKERS[language]}  # fmt: skip
    spec = ContestReward(TESTS, language=language, time_limit=1, checker=checker)
    split, wrong = grade_batch(
        client, "py", [PROGRAMS[language]["split"], PROGRAMS[language]["right"]], spec
    )
    assert (split.reward, wrong.reward) == (1.0, 0.0), (split.explain(), wrong.explain())


@pytest.mark.parametrize("language", LANGS)
def test_a_multipl_e_row(client: CollimateClient, language: str) -> None:
    need(language)
    case = ADD_ROWS[language]
    row = {"name": "HumanEval_53_add", **{k: case[k] for k in ("language", "prompt", "tests",
                                                                "stop_tokens")}}  # fmt: skip
    task = row_task(hub_ground_truth(row), row=row)
    assert isinstance(task.spec, ProgramReward) and task.spec.language == language
    names = [n for n in case if n not in ("language", "prompt", "tests", "stop_tokens")]
    uncut = ProgramReward(case["tests"], language=case["language"], prompt=case["prompt"])
    results = grade_batch(
        client,
        "py",
        [task.program(case[n]) for n in names],
        [task.spec] * 2 + [uncut] * (len(names) - 2),
    )
    got = dict(zip(names, results, strict=True))
    assert not any(r.infra_error for r in results), [r.explain() for r in results]
    assert got["right"].reward == 1.0, got["right"].explain()
    assert [got[n].reward for n in names[1:]] == [0.0] * (len(names) - 1), [
        (n, got[n].explain()) for n in names
    ]
    assert got["early"].detail["verdicts"] == ["wrong_answer"], got["early"].detail
    assert got["shadow"].detail["verdicts"] == ["wrong_answer"], got["shadow"].detail


def test_csharp_rows_join_as_multipl_e_joins_them(client: CollimateClient) -> None:
    """A completion ending in a ``//`` comment keeps the tests' first line
    (the closing brace) out of it; one with a ``Main`` of its own beside the
    tests' is csc's compile error (two entry points), as in MultiPL-E."""
    need("csharp")
    case = ADD_ROWS["csharp"]
    spec = ProgramReward(case["tests"], language="cs", prompt=case["prompt"])
    commented, two_mains = grade_batch(
        client,
        "py",
        [
            "        return x + y;\n        // done",
            "        return x + y;\n    }\n    public static void Main() {\n",
        ],
        spec,
    )
    assert commented.reward == 1.0, commented.explain()
    assert two_mains.reward == 0.0 and "CS0017" in two_mains.explain(), two_mains.explain()


def test_a_d_module_named_as_a_librarys_is_refused(client: CollimateClient) -> None:
    """``module std.typecons;`` would make the candidate's ``tuple`` the one
    the tests import."""
    need("d")
    tests = "unittest { assert(pair() == tuple(1, 2)); }\nvoid main(){}"
    tests = "import std.typecons;\n" + tests  # (a whole program: no prompt)
    spec = ProgramReward(tests, language="d")
    forged = (
        "module std.typecons;\nauto tuple(A...)(A a) { return 0; }\nauto pair() { return 0; }\n"
    )
    (result,) = grade_batch(client, "py", [forged], spec)
    assert result.reward == 0.0 and "a library's name" in result.explain(), result.explain()


#: SandboxFusion's own tests of its csharp and D_ut runners (its runners'
#: test files for the two languages): each request, and the status, run
#: status and stdout they assert.
_CS_SLEEP = (
    "\n    using System;\n    using System.Threading;\n\n    public class Program\n    {\n"
    "        public static void Main(string[] args)\n        {\n"
    "            Thread.Sleep(200); // Sleep for 200 milliseconds\n        }\n    }\n    "
)
SANDBOX_FUSION: list[tuple[dict[str, Any], str, str, str | None]] = [
    (
        {"language": "csharp", "run_timeout": 20,
         "code": "\n    using System;\n\n    public class Program\n    {\n"
         "        public static void Main(string[] args)\n        {\n"
         '            Console.WriteLine("123");\n        }\n    }\n    '},
        "Success", "Finished", "123\n",
    ),
    (
        {"language": "csharp", "run_timeout": 0.1, "compile_timeout": 1, "code": _CS_SLEEP},
        "Failed", "TimeLimitExceeded", None,
    ),
    (
        {"language": "csharp",
         "code": "\n    using System;\n    using System.Diagnostics;\n\n    public class Program\n"
         "    {\n        public static void Main(string[] args)\n        {\n"
         '            Debug.Assert(1 == 2, "Assertion failed");\n        }\n    }\n    '},
        "Failed", "Finished", "",
    ),
    (
        # no using System: dotnet's implicit usings
        {"language": "csharp", "stdin": "65535",
         "code": "\n    public class Program\n    {\n"
         "        public static void Main(string[] args)\n        {\n"
         "            Console.WriteLine(Convert.ToInt32(Console.ReadLine()));\n        }\n"
         "    }\n                             "},
        "Success", "Finished", "65535\n",
    ),
    (
        {"language": "D_ut", "run_timeout": 5,
         "code": '\nimport std.stdio; \n \nvoid main(string[] args) { \n'
         '   writeln("Hello, World!"); \n}\n    '},
        "Success", "Finished", "Hello, World!\n",
    ),
    (
        {"language": "D_ut", "run_timeout": 1,
         "code": "\nimport core.thread;\nimport std.stdio;\n\nvoid sleepSeconds() {\n"
         '    Thread.sleep( dur!("seconds")( 5 ) );\n}\n\nvoid main() {\n    sleepSeconds();\n'
         '    writeln("5 seconds have passed.");\n}\n    '},
        "Failed", "TimeLimitExceeded", None,
    ),
    (
        {"language": "D_ut", "code": "\nunittest\n{\n    assert(0 == 0);\n}\nvoid main(){}\n    "},
        "Success", "Finished", "",
    ),
    (
        {"language": "D_ut", "code": "\nunittest\n{\n    assert(0 == 1);\n}\nvoid main(){}\n    "},
        "Failed", "Finished", "",
    ),
]  # fmt: skip


def test_run_code_answers_sandbox_fusions_own_tests(backend: LocalCollimateBackend) -> None:
    need("csharp")
    need("d")
    with httpx.Client(base_url=backend.base_url, timeout=120) as http:
        for body, status, run_status, stdout in SANDBOX_FUSION:
            a = http.post("/run_code", json=body).json()
            assert (a["status"], a["run_result"]["status"]) == (status, run_status), (body, a)
            if stdout is not None:
                assert a["run_result"]["stdout"] == stdout, (body, a)
            if "Debug.Assert" in body["code"]:
                # .NET's failed assert: the message on stderr, the process ended
                assert "Assertion failed" in a["run_result"]["stderr"], a
                assert a["run_result"]["return_code"] == 134, a
            if "assert(0 == 1)" in body["code"]:
                assert "1/1 modules FAILED unittests" in a["run_result"]["stderr"], a


def test_health_names_each_compiler_with_its_version() -> None:
    found = find_toolchains()
    for language, starts in (("csharp", "mcs "), ("d", "ldc2 "), ("d_ut", "ldc2 ")):
        need(language)
        described = found[language].describe()
        assert described["available"] and described["compile"], described
        assert described["compiler"].startswith(starts), described


def test_the_judge_takes_no_d_ut(backend: LocalCollimateBackend) -> None:
    """``d_ut`` is judged by the program's own unittests: like the
    test-framework modes, ``/run_code`` only."""
    body = {"problems": [{"language": "d_ut", "tests": [["", ""]]}], "candidates": [{"source": ""}]}
    r = httpx.post(f"{backend.base_url}/v1/judge", json=body, timeout=60)
    assert r.status_code == 400 and "unknown language" in r.json()["error"], r.text
