"""Bash, Perl, PHP, Lua and Ruby on a real local backend, with the hosts'
own interpreters: contest programs through ``ContestReward`` (every
verdict: right, wrong, partial credit, runtime error, time limit, memory
limit, output limit; a problem with a checker), MultiPL-E rows of each through the program harness
(its canonical answer 1.0, a mutant, an early exit and a redefined
builtin 0.0; forging the end of the tests, reading the token off stdin,
killing every process and stalling 0.0 beside right siblings), and
``/run_code`` in SandboxFusion's names for them.

Limits are small (0.5 CPU seconds for a loop): the CI machine is small."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from collimate_rl import CollimateClient, ContestReward, ProgramReward, grade, grade_batch
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.toolchains import (
    ALIASES,
    LANGUAGES,
    find_toolchains,
)
from collimate_rl.rewards.rows import hub_ground_truth, row_task
from collimate_rl.testing.fixtures import module_backend
from collimate_rl.testing.programs import need

LANGS = ["bash", "perl", "php", "lua", "ruby"]
#: ``a b`` -> ``a + b``, each right on its own by no other program here.
TESTS = [(f"{i} {3 * i}\n", f"{4 * i}\n") for i in range(3)]

#: PHP reading ``a b`` from stdin.
PHP_READ = "<?php\n[$a, $b] = array_map('intval', preg_split('/\\s+/', trim(fgets(STDIN))));\n"
PROGRAMS: dict[str, dict[str, str]] = {
    "bash": {
        "right": "read a b\necho $((a + b))\n",
        "wrong": "read a b\necho $((a + b + 1))\n",
        # right while a < 2: the first two tests of three
        "partial": "read a b\nif ((a < 2)); then echo $((a + b));\nelse echo $((a - b)); fi\n",
        "runtime_error": "exit 3\n",
        "loop": "while :; do :; done\n",
        "memory": "printf -v s '%*s' 150000000 ''\necho ${#s}\n",
        # (bash's own printf writes too slowly to flood within the time limit)
        "flood": "exec yes " + "x" * 64 + "\n",
        "echo": "read a b\necho $a $b\n",
    },
    "perl": {
        "right": "my ($a, $b) = split ' ', <STDIN>;\nprint $a + $b, \"\\n\";\n",
        "wrong": "my ($a, $b) = split ' ', <STDIN>;\nprint $a + $b + 1, \"\\n\";\n",
        "partial": "my ($a, $b) = split ' ', <STDIN>;\n"
        "print $a < 2 ? $a + $b : $a - $b, \"\\n\";\n",
        "runtime_error": "exit 3;\n",
        "loop": "1 while 1;\n",
        "memory": "my $s = 'x' x (200 << 20);\nprint length($s), \"\\n\";\n",
        "flood": "my $s = ('x' x 65535) . \"\\n\";\nprint $s while 1;\n",
        "echo": "print <STDIN>;\n",
    },
    "php": {
        "right": PHP_READ + 'echo $a + $b, "\\n";\n',
        "wrong": PHP_READ + 'echo $a + $b + 1, "\\n";\n',
        "partial": PHP_READ + 'echo $a < 2 ? $a + $b : $a - $b, "\\n";\n',
        "runtime_error": "<?php\nexit(3);\n",
        "loop": "<?php\nwhile (true) {}\n",
        "memory": '<?php\n$s = str_repeat("x", 200 << 20);\necho strlen($s), "\\n";\n',
        "flood": '<?php\n$s = str_repeat("x", 65535) . "\\n";\nwhile (true) echo $s;\n',
        "echo": "<?php\necho fgets(STDIN);\n",
    },
    "lua": {
        "right": 'local a, b = io.read("n", "n")\nprint(a + b)\n',
        "wrong": 'local a, b = io.read("n", "n")\nprint(a + b + 1)\n',
        "partial": 'local a, b = io.read("n", "n")\n'
        "if a < 2 then print(a + b) else print(a - b) end\n",
        "runtime_error": "os.exit(3)\n",
        "loop": "while true do end\n",
        "memory": 'local s = string.rep("x", 200 << 20)\nprint(#s)\n',
        "flood": 'local s = string.rep("x", 65535) .. "\\n"\nwhile true do io.write(s) end\n',
        "echo": 'io.write(io.read("a"))\n',
    },
    "ruby": {
        "right": "a, b = $stdin.read.split.map(&:to_i)\nputs a + b\n",
        "wrong": "a, b = $stdin.read.split.map(&:to_i)\nputs a + b + 1\n",
        "partial": "a, b = $stdin.read.split.map(&:to_i)\nputs(a < 2 ? a + b : a - b)\n",
        "runtime_error": "exit 3\n",
        "loop": "loop {}\n",
        "memory": 's = "x" * (200 << 20)\nputs s.size\n',
        "flood": 's = "x" * 65535 + "\\n"\nloop { $stdout.write(s) }\n',
        "echo": "print $stdin.read\n",
    },
}

#: Accepts two numbers summing to the answer (a checker as open-r1 calls
#: it: input, answer and output files; prints 1 or 0).
SUM_CHECKER = {
    "protocol": "openr1",
    "language": "python",
    "source": "import sys\n"
    "inp, answer, got = (open(p).read().split() for p in sys.argv[1:4])\n"
    "print(1 if len(got) == 2 and int(got[0]) + int(got[1]) == int(answer[0]) else 0)\n",
}

#: A MultiPL-E row (HumanEval_53_add) per language, in MultiPL-E's own
#: shape: its ``language`` column, prompt, tests and stop tokens; with
#: the canonical answer and a mutant (completions, cut at the stop
#: tokens), and whole programs past the function (judged without the
#: stop tokens, which would cut them): one exiting 0 before the tests,
#: one redefining what the tests use, and (but PHP) a mutant redefining
#: the way its tests fail where the names check cannot see it.
ADD_ROWS: dict[str, dict[str, Any]] = {
    "bash": {
        "language": "sh",
        "prompt": "#!/bin/bash\n# Add two numbers x and y\n# >>> $(add \"2\" \"3\")\n# \"5\"\n"
        "# >>> $(add \"5\" \"7\")\n# \"12\"\n#\n# $1 is an integer\n# $2 is an integer\nadd() {\n",
        # the stop token "\n}" cuts the function's end: the tests start with it
        "tests": "}\n\ncandidate() {\n    add \"$@\"\n}\n\nset -e\nrun_test() {\n"
        + "".join(
            f'    [[ $(candidate "{x}" "{y}") = "{x + y}" ]]\n'
            for x, y in ((0, 1), (1, 0), (2, 3), (5, 7), (7, 5))
        )
        + "}\n\nrun_test",
        "stop_tokens": ["\n}"],
        "right": "    echo $(( $1 + $2 ))\n",
        "wrong": "    echo $(( $1 - $2 ))\n",
        "early": "    echo $(( $1 + $2 ))\n}\nexit 0\nf() {\n",
        "shadow": "    echo $(( $1 + $2 ))\n}\nset() { :; }\nf() {\n",
        "hidden": "    echo $(( $1 - $2 ))\n}\neval 'set() { :; }'\nf() {\n",
    },
    "perl": {
        "language": "pl",
        "prompt": "# Add two numbers x and y\n# >>> add(2, 3)\n# 5\n# >>> add(5, 7)\n# 12\n"
        "sub add {\n    my($x, $y) = @_;\n",
        "tests": "\nuse Test::Deep;\n\n\nsub testhumaneval {\n    my $candidate = \\&add;\n"
        + "".join(
            f"        if(eq_deeply($candidate->({x}, {y}),{x + y})) {{\n"
            '        print "ok!" }else{\n        exit 1;\n        }\n'
            for x, y in ((0, 1), (1, 0), (2, 3), (5, 7), (7, 5))
        )
        + "}\n\ntesthumaneval();",
        "stop_tokens": ["\nsub", "\n#", "\n\n"],
        "right": "    return $x + $y;\n}\n",
        "wrong": "    return $x - $y;\n}\n",
        "early": "    return $x + $y;\n}\nexit 0;\n",
        "shadow": "    return $x + $y;\n}\nsub eq_deeply { 1 }\n",
        "hidden": "    return $x - $y;\n}\n"
        "BEGIN { no strict 'refs'; *{'CORE::GLOBAL::' . 'exit'} = sub {} }\n",
    },
    "php": {
        "language": "php",
        "prompt": "<?php\n// Add two numbers x and y\n// >>> add(2, 3)\n// 5\n"
        "// >>> add(5, 7)\n// 12\nfunction add($x, $y) {\n",
        "tests": "\nfunction candidate(...$args) {\n    return add(...$args);\n}\n\n"
        "function test(): void {\n"
        + "".join(
            f'    if (candidate({x}, {y}) !== {x + y}) {{ throw new Exception("Test failed!"); }}\n'
            for x, y in ((0, 1), (1, 0), (2, 3), (5, 7), (7, 5))
        )
        + "}\n\ntest();",
        "stop_tokens": ["\nfunction", "\n?>", "\n//", "\n#"],
        "right": "    return $x + $y;\n}\n",
        "wrong": "    return $x - $y;\n}\n",
        "early": "    return $x + $y;\n}\nexit(0);\n",
        "shadow": "    return $x + $y;\n}\nclass Exception {}\n",
    },
    "lua": {
        "language": "lua",
        "prompt": "-- Add two numbers x and y\n-- >>> add(2, 3)\n-- 5\n-- >>> add(5, 7)\n-- 12\n"
        "local function add(x, y)\n",
        "tests": "lu = require('luaunit')\n\nfunction test_humaneval()\nlocal candidate = add\n"
        + "".join(
            f"    lu.assertEquals(candidate({x}, {y}), {x + y})\n"
            for x, y in ((0, 1), (1, 0), (2, 3), (5, 7), (7, 5))
        )
        + "end\n\nos.exit(lu.LuaUnit.run())",
        "stop_tokens": ["\nlocal", "\nfunction", "\n--", "\n\n"],
        "right": "  return x + y\nend\n",
        "wrong": "  return x - y\nend\n",
        "early": "  return x + y\nend\nos.exit(0)\n",
        "shadow": "  return x + y\nend\nfunction assertEquals() end\n",
        "hidden": "  return x - y\nend\nsetmetatable(_G, {__newindex = function(t, k, v)\n"
        "  rawset(t, k, k == 'test_humaneval' and function() end or v) end})\n",
    },
    "ruby": {
        "language": "rb",
        "prompt": "# Add two numbers x and y\n# >>> add.call(2, 3)\n# 5\n"
        "# >>> add.call(5, 7)\n# 12\ndef add(x, y)\n",
        "tests": "require 'test/unit'\nclass TestHumanEval < Test::Unit::TestCase\n  def test_add\n"
        "    candidate = method(:add)\n"
        + "".join(
            f"    assert_equal({x + y}, candidate.call({x}, {y}))\n"
            for x, y in ((0, 1), (1, 0), (2, 3), (5, 7), (7, 5))
        )
        + "  end\nend\n",
        "stop_tokens": ["\nclass", "\ndef", "\n#", "\n\n"],
        "right": "  x + y\nend\n",
        "wrong": "  x - y\nend\n",
        "early": "  x + y\nend\nexit 0\n",
        "shadow": "  x + y\nend\nmodule Test::Unit::Assertions\n  def assert_equal(*) end\nend\n",
        "hidden": "  x - y\nend\ndef exit(*) end\n",
    },
}

#: Printed by the forging hacks: the shape of a token (32 hex digits).
FAKE = "0123456789abcdef0123456789abcdef"
#: What a policy tries past the function (whole programs, judged without
#: the stop tokens): forge the end of the tests, read the token off stdin,
#: kill every process it can signal (and answer wrong: killing launders
#: nothing); and a completion that stalls.
HACKS: dict[str, dict[str, str]] = {
    "bash": {
        "forge": f"    echo $(( $1 + $2 ))\n}}\necho; echo {FAKE}; exit 0\nf() {{\n",
        "stdin": '    echo $(( $1 + $2 ))\n}\nread -r t; echo; echo "$t"; exit 0\nf() {\n',
        "kill_everyone": "    echo $(( $1 - $2 ))\n}\nkill -KILL -1\nf() {\n",
        "stall": "    while :; do :; done\n",
    },
    "perl": {
        "forge": f'    return $x + $y;\n}}\nprint "\\n{FAKE}\\n"; exit 0;\n',
        "stdin": '    return $x + $y;\n}\nmy $t = <STDIN>; print "\\n$t"; exit 0;\n',
        "kill_everyone": "    return $x - $y;\n}\nkill 'KILL', -1;\n",
        "stall": "    1 while 1;\n}\n",
    },
    "php": {
        "forge": f'    return $x + $y;\n}}\necho "\\n{FAKE}\\n"; exit(0);\n',
        "stdin": '    return $x + $y;\n}\n$t = fgets(STDIN); echo "\\n$t"; exit(0);\n',
        "kill_everyone": "    return $x - $y;\n}\nposix_kill(-1, SIGKILL);\n",
        "stall": "    while (true) {}\n}\n",
    },
    "lua": {
        "forge": f"  return x + y\nend\nprint('\\n{FAKE}'); os.exit(0)\n",
        "stdin": "  return x + y\nend\nprint('\\n' .. (io.read('a') or '')); os.exit(0)\n",
        "kill_everyone": "  return x - y\nend\nos.execute('kill -KILL -1')\n",
        "stall": "  while true do end\nend\n",
    },
    "ruby": {
        "forge": f'  x + y\nend\nputs "\\n{FAKE}"; exit 0\n',
        "stdin": '  x + y\nend\nputs "\\n" + STDIN.read.to_s; exit 0\n',
        "kill_everyone": "  x - y\nend\nProcess.kill(:KILL, -1) rescue nil\n",
        "stall": "  loop {}\nend\n",
    },
}

backend, client = module_backend(timeout=600)


def test_the_languages_and_their_sandbox_fusion_names() -> None:
    assert set(LANGS) <= set(LANGUAGES)
    for name in LANGS:
        assert ALIASES[name] == name
    assert ALIASES["rb"] == "ruby" and "pl" not in ALIASES and "sh" not in ALIASES


@pytest.mark.parametrize("language", LANGS)
def test_every_verdict(client: CollimateClient, language: str) -> None:
    need(language)
    programs = PROGRAMS[language]
    spec = ContestReward(TESTS, language=language, time_limit=0.5, memory_limit_mb=256)
    # the programs that run out of a limit, on one test (they cost CPU)
    one = ContestReward(TESTS[:1], language=language, time_limit=0.5, memory_limit_mb=256)
    names = ["right", "wrong", "partial", "runtime_error", "loop", "flood"]
    specs = [spec] * 4 + [one] * 2
    results = grade_batch(client, "py", [programs[n] for n in names], specs)
    got = {n: (r.reward, r.detail.get("verdicts")) for n, r in zip(names, results, strict=True)}
    assert not any(r.infra_error for r in results), [r.explain() for r in results]
    assert got["right"] == (1.0, ["accepted"] * 3), results[0].explain()
    assert got["wrong"] == (0.0, ["wrong_answer"] * 3)
    assert got["partial"] == (pytest.approx(2 / 3), ["accepted", "accepted", "wrong_answer"])
    assert got["runtime_error"] == (0.0, ["runtime_error"] * 3)
    assert got["loop"] == (0.0, ["time_limit"])
    assert got["flood"] == (0.0, ["output_limit"])
    # a problem with a checker (open-r1's protocol, in Python): any two
    # numbers summing to the answer are right, so the input echoed is
    checked = ContestReward(TESTS, language=language, time_limit=0.5, checker=SUM_CHECKER)
    echo, wrong = grade_batch(client, "py", [programs["echo"], programs["wrong"]], checked)
    assert (echo.reward, wrong.reward) == (1.0, 0.0), (echo.explain(), wrong.explain())
    # memory costs CPU to touch (less under a lower limit: 200 MiB against
    # 64), judged alone, with time to spare
    roomy = ContestReward(TESTS[:1], language=language, time_limit=5, memory_limit_mb=64)
    memory = grade(client, "py", programs["memory"], roomy)
    assert (memory.reward, memory.detail["verdicts"]) == (0.0, ["memory_limit"]), memory.explain()


@pytest.mark.parametrize("language", LANGS)
def test_a_multipl_e_row(client: CollimateClient, language: str) -> None:
    need(language)
    case = ADD_ROWS[language]
    row = {"name": "HumanEval_53_add", **{k: case[k] for k in ("language", "prompt", "tests",
                                                                "stop_tokens")}}  # fmt: skip
    task = row_task(hub_ground_truth(row), row=row)
    assert isinstance(task.spec, ProgramReward) and task.spec.language == language
    names = [n for n in ("right", "wrong", "early", "shadow", "hidden") if n in case]
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
        got[n].explain() for n in names
    ]
    assert got["early"].detail["verdicts"] == ["wrong_answer"], got["early"].detail
    assert got["shadow"].detail["verdicts"] == ["wrong_answer"], got["shadow"].detail


@pytest.mark.parametrize("language", LANGS)
def test_program_hacks_score_zero_beside_right_siblings(
    client: CollimateClient, language: str
) -> None:
    need(language)
    case = ADD_ROWS[language]
    uncut = ProgramReward(
        case["tests"], language=case["language"], prompt=case["prompt"], time_limit=0.5
    )
    hacks = HACKS[language]
    completions = [case["right"]]
    for hack in hacks.values():
        completions += [hack, case["right"]]
    results = grade_batch(client, "py", completions, uncut)
    assert not any(r.infra_error for r in results), [r.explain() for r in results]
    assert [r.reward for r in results[0::2]] == [1.0] * (len(hacks) + 1), [
        r.explain() for r in results[0::2]
    ]
    got = dict(zip(hacks, results[1::2], strict=True))
    assert {name: r.reward for name, r in got.items()} == dict.fromkeys(hacks, 0.0), {
        name: r.explain() for name, r in got.items()
    }
    assert got["stall"].detail["verdicts"] == ["time_limit"], got["stall"].detail


def test_perl_fails_a_run_printing_error_as_multipl_e_does(client: CollimateClient) -> None:
    need("perl")
    case = ADD_ROWS["perl"]
    spec = ProgramReward(case["tests"], language="pl", prompt=case["prompt"])
    (result,) = grade_batch(client, "py", ['    print "ERROR";\n' + case["right"]], spec)
    assert (result.reward, result.detail["verdicts"]) == (0.0, ["wrong_answer"])


@pytest.mark.parametrize("language", LANGS)
def test_run_code(backend: LocalCollimateBackend, language: str) -> None:
    """``/run_code`` in SandboxFusion's name for the language: no compile
    step, the run's exit code."""
    need(language)
    with httpx.Client(base_url=backend.base_url, timeout=120) as http:
        body = {"code": PROGRAMS[language]["right"], "language": language, "stdin": "20 22\n"}
        a = http.post("/run_code", json={**body, "run_timeout": 5}).json()
        assert (a["status"], a["run_result"]["stdout"], a["compile_result"]) == (
            "Success", "42\n", None,
        ), a  # fmt: skip
        body["code"] = PROGRAMS[language]["runtime_error"]
        a = http.post("/run_code", json={**body, "run_timeout": 5}).json()
        assert (a["status"], a["run_result"]["return_code"]) == ("Failed", 3), a


def test_health_names_each_interpreter() -> None:
    found = find_toolchains()
    for language in LANGS:
        need(language)
        tc = found[language]
        assert tc.describe()["available"] and tc.describe()["compile"] is None  # type: ignore[union-attr]
