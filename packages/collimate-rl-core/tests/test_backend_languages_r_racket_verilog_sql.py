"""R, Racket, Verilog (Icarus) and SQL (sqlite3) on a real local backend,
with the host's own toolchains: contest programs through
``ContestReward`` (every verdict each language has: right, wrong, partial
credit, runtime error, time, memory and output limits; Verilog's compile
error; a testlib checker written in R and in Racket, and one that fails),
MultiPL-E rows of R and Racket through the program harness (the canonical
answer 1.0; a mutant, an early exit, a redefinition of what the tests use
and hacks the names check cannot see 0.0), and ``/run_code`` with the
requests of SandboxFusion's own tests of these languages.

Limits are small (a loop gets 0.5 CPU seconds; R and Racket, whose start
takes ~0.2 of them, 1): the CI machine is small."""

from __future__ import annotations

import base64
import re
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

LANGS = ["r", "racket", "verilog", "sql"]
#: CPU seconds a test: R and Racket take ~0.2 to start.
TIME_LIMIT = {"r": 1.0, "racket": 1.0, "verilog": 0.5, "sql": 0.5}
#: ``a b`` -> ``a + b``, each right on its own by no other program here.
TESTS = [(f"{i} {3 * i}\n", f"{4 * i}\n") for i in range(3)]

R_READ = 'x <- scan(file("stdin"), quiet = TRUE)\n'
RKT_READ = "#lang racket/base\n(define a (read))\n(define b (read))\n"
#: Verilog reading ``a b`` from stdin (``$fscanf`` on STDIN), then ``{}``.
V_READ = (
    "module tb;\n  integer a, b, n;\n  initial begin\n"
    '    n = $fscanf(32\'h8000_0000, "%d %d", a, b);\n    {}\n    $finish;\n  end\nendmodule\n'
)
#: SQL loading ``a b`` from stdin as a table.
SQL_READ = 'CREATE TABLE t(a INT, b INT);\n.mode csv\n.separator " "\n.import /dev/stdin t\n'
SQL_ROWS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
PROGRAMS: dict[str, dict[str, str]] = {
    "r": {
        "right": R_READ + 'cat(x[1] + x[2], "\\n", sep = "")\n',
        "wrong": R_READ + 'cat(x[1] + x[2] + 1, "\\n", sep = "")\n',
        # right while a < 2: the first two tests of three
        "partial": R_READ + 'cat(if (x[1] < 2) x[1] + x[2] else x[1] - x[2], "\\n", sep = "")\n',
        "runtime_error": "quit(status = 3)\n",
        "loop": "repeat {}\n",
        "memory": 'x <- numeric(3e7) + 1\ncat(length(x), "\\n")\n',
        "flood": 's <- strrep("x", 65535)\nrepeat cat(s, "\\n", sep = "")\n',
    },
    "racket": {
        "right": RKT_READ + "(displayln (+ a b))\n",
        "wrong": RKT_READ + "(displayln (+ a b 1))\n",
        "partial": RKT_READ + "(displayln (if (< a 2) (+ a b) (- a b)))\n",
        "runtime_error": "#lang racket/base\n(exit 3)\n",
        "loop": "#lang racket/base\n(let loop () (loop))\n",
        "memory": "#lang racket/base\n(define s (make-bytes (* 200 1024 1024) 1))\n"
        "(displayln (bytes-length s))\n",
        # (bytes: strings are encoded as they are written, too slowly to flood)
        "flood": "#lang racket/base\n(define s (make-bytes 65536 120))\n"
        "(let loop () (write-bytes s) (loop))\n",
    },
    "verilog": {
        "right": V_READ.replace("{}", '$display("%0d", a + b);'),
        "wrong": V_READ.replace("{}", '$display("%0d", a + b + 1);'),
        "partial": V_READ.replace("{}", '$display("%0d", a < 2 ? a + b : a - b);'),
        "runtime_error": V_READ.replace("{}", '$fatal(1, "no answer");'),
        "compile_error": V_READ.replace("{}", '$display("%0d", a + b)'),
        # simulated time that never ends
        "loop": "module tb;\n  reg x = 0;\n  always #1 x = ~x;\nendmodule\n",
        "memory": "module tb;\n  byte d[];\n  initial begin\n    d = new[256 * 1024 * 1024];\n"
        '    $display("%0d", d.size());\n  end\nendmodule\n',
        "flood": 'module tb;\n  initial forever $display("%0s", {64{"xxxxxxxxxxxxxxxx"}});\n'
        "endmodule\n",
    },
    "sql": {
        "right": SQL_READ + "SELECT a + b FROM t;\n",
        "wrong": SQL_READ + "SELECT a + b + 1 FROM t;\n",
        "partial": SQL_READ + "SELECT CASE WHEN a < 2 THEN a + b ELSE a - b END FROM t;\n",
        "runtime_error": ".exit 3\n",
        "loop": SQL_ROWS + "SELECT count(*) FROM c;\n",
        "memory": "SELECT length(randomblob(200 * 1024 * 1024));\n",
        "flood": SQL_ROWS + "SELECT hex(zeroblob(32768)) FROM c;\n",
    },
}

#: A testlib checker (``checker input output answer``) accepting any two
#: numbers that add up to the answer, in R and in Racket; a program printing
#: ``0 a+b`` (right by the checker only), and a checker that always fails.
CHECKERS: dict[str, dict[str, str]] = {
    "r": {
        "checker": "a <- commandArgs(TRUE)\nout <- scan(a[2], quiet = TRUE)\n"
        "ans <- scan(a[3], quiet = TRUE)\n"
        "quit(status = if (length(out) == 2 && sum(out) == ans) 0 else 1)\n",
        "split": R_READ + 'cat(0, x[1] + x[2], "\\n")\n',
        "broken": "quit(status = 3)\n",
    },
    "racket": {
        "checker": "#lang racket/base\n(define args (current-command-line-arguments))\n"
        "(define (numbers file) (with-input-from-file file\n"
        "  (lambda () (let loop ([acc '()]) (define v (read))\n"
        "    (if (eof-object? v) (reverse acc) (loop (cons v acc)))))))\n"
        "(define out (numbers (vector-ref args 1)))\n"
        "(define ans (numbers (vector-ref args 2)))\n"
        "(exit (if (and (= (length out) 2) (= (apply + out) (car ans))) 0 1))\n",
        "split": RKT_READ + '(printf "0 ~a\\n" (+ a b))\n',
        "broken": "#lang racket/base\n(exit 3)\n",
    },
}

#: A MultiPL-E row (HumanEval_53_add) per language, in MultiPL-E's own
#: shape: its ``language`` column, prompt, tests and stop tokens; with
#: the canonical answer and a mutant (completions, cut at the stop
#: tokens), and whole programs past the function (judged without the stop
#: tokens, which would cut them): a right one with a helper of its own
#: (1.0: the names check and the reset leave it be), one exiting 0 before
#: the tests, one redefining what the tests use, and mutants hiding such a
#: redefinition where the names check cannot see it.
ADD_ROWS: dict[str, dict[str, Any]] = {
    "r": {
        "language": "r",
        "prompt": "# Add two numbers x and y\n# >>> add(2, 3)\n# 5\n# >>> add(5, 7)\n# 12\n"
        "add <- function(x, y) {\n",
        "tests": "test_humaneval <- function() {\ncandidate <- add\n"
        + "".join(
            f"    stopifnot(isTRUE(all.equal(candidate({x}, {y}), {x + y})))\n"
            for x, y in ((0, 1), (1, 0), (2, 3), (5, 7), (7, 5))
        )
        + "}\ntest_humaneval()",
        "stop_tokens": ["\n#", "\n```"],
        "right": "  return(x + y)\n}\n",
        "wrong": "  return(x - y)\n}\n",
        # right, with a helper of its own (a dotted name, as R has them)
        "helper": "  add.two(x, y)\n}\nadd.two <- function(a, b) {\n  a + b\n}\n",
        "early": "  return(x + y)\n}\nquit(status = 0)\n",
        "shadow": "  return(x + y)\n}\nstopifnot <- function(...) invisible()\n",
        "hidden": {
            # stopifnot redefined through a string
            "assign": "  return(x - y)\n}\n"
            "assign(paste0('stop', 'ifnot'), function(...) invisible(), envir = globalenv())\n",
            # an S3 method of all.equal for the candidate's own class
            "s3": "  structure(x - y, class = 'sneaky')\n}\n"
            "assign(paste0('all.equal', '.sneaky'), function(...) TRUE)\n",
            # an environment of its own on the search path
            "attach": "  return(x - y)\n}\n"
            "eval(parse(text = paste0('att', 'ach(list(stopifnot = function(...) NULL))')))\n",
            # the tests' own function, bound actively beforehand: their
            # definition would not replace it
            "active": "  return(x - y)\n}\neval(parse(text = paste0('makeActive', 'Binding(',"
            " '\"test_humaneval\", function(v) function() NULL, globalenv())')))\n",
            # right on the first two tests, then errors let R go on
            "on_error": "  options(error = function() NULL)\n  if (x == 0) 1 else x - y\n}\n",
        },
    },
    "racket": {
        "language": "rkt",
        "prompt": "#lang racket\n\n;; Add two numbers x and y\n;; >>> (add 2 3)\n;; 5\n"
        ";; >>> (add 5 7)\n;; 12\n(define (add x y)\n",
        "tests": "(require rackunit)\n\n(define (test-humaneval) \n\n  (let (( candidate add))\n"
        + "".join(
            f"    (check-equal? (candidate {x} {y}) {x + y})\n"
            for x, y in ((0, 1), (1, 0), (2, 3), (5, 7), (7, 5))
        )
        + "))\n\n(test-humaneval)",
        "stop_tokens": ["\n(define ", "\n#|", "\n;", "\n("],
        "right": "  (+ x y))\n",
        "wrong": "  (- x y))\n",
        "helper": "  (plus x y))\n(define (plus a b) (+ a b))\n",
        "early": "  (+ x y))\n(exit 0)\n",
        "shadow": "  (+ x y))\n(define-syntax-rule (check-equal? a b) (void))\n",
        "hidden": {
            # rackunit's failures silenced (rackunit's own checks would go on, exit 0)
            "handler": "  (- x y))\n(require (only-in rackunit current-check-handler))\n"
            "(current-check-handler void)\n",
            # stdin read by a macro, while the module is expanded
            "macro": "  (+ x y))\n(require (for-syntax racket/base racket/port))\n"
            "(define-syntax (stdin stx) (datum->syntax stx (port->string)))\n"
            '(printf "\\n~a\\n" (stdin))\n(exit 0)\n',
            # back to the top level from inside the first test
            "continuation": "  (if k (k 0) (+ x y)))\n(define k #f)\n(let/cc c (set! k c))\n",
            # a right answer that writes to stderr, which MultiPL-E fails
            "stderr": '  (eprintf "debug\\n")\n  (+ x y))\n',
        },
    },
}

backend, client = module_backend(timeout=600)


def test_the_languages_and_their_sandbox_fusion_names() -> None:
    assert set(LANGS) <= set(LANGUAGES)
    assert {ALIASES[n] for n in ("r", "racket", "rkt", "verilog", "sql")} == set(LANGS)


@pytest.mark.parametrize("language", LANGS)
def test_every_verdict(client: CollimateClient, language: str) -> None:
    need(language)
    programs = PROGRAMS[language]
    limit = TIME_LIMIT[language]
    spec = ContestReward(TESTS, language=language, time_limit=limit, memory_limit_mb=256)
    # the programs that run out of a limit, on one test (they cost CPU)
    one = ContestReward(TESTS[:1], language=language, time_limit=limit, memory_limit_mb=256)
    names = ["right", "wrong", "partial", "runtime_error", "loop", "flood"]
    specs = [spec] * 4 + [one] * 2
    if "compile_error" in programs:
        names.append("compile_error")
        specs.append(spec)
    results = grade_batch(client, "py", [programs[n] for n in names], specs)
    got = {n: (r.reward, r.detail.get("verdicts")) for n, r in zip(names, results, strict=True)}
    assert not any(r.infra_error for r in results), [r.explain() for r in results]
    assert got["right"] == (1.0, ["accepted"] * 3), results[0].explain()
    assert got["wrong"] == (0.0, ["wrong_answer"] * 3)
    assert got["partial"] == (pytest.approx(2 / 3), ["accepted", "accepted", "wrong_answer"])
    assert got["runtime_error"] == (0.0, ["runtime_error"] * 3)
    assert got["loop"] == (0.0, ["time_limit"])
    assert got["flood"] == (0.0, ["output_limit"])
    if "compile_error" in got:
        compiled = results[names.index("compile_error")]
        assert compiled.reward == 0.0 and "compile_error" in compiled.explain(), compiled.explain()
    # memory costs CPU to touch (less under a lower limit), judged alone,
    # with time to spare
    roomy = ContestReward(TESTS[:1], language=language, time_limit=5, memory_limit_mb=64)
    memory = grade(client, "py", programs["memory"], roomy)
    assert (memory.reward, memory.detail["verdicts"]) == (0.0, ["memory_limit"]), memory.explain()


@pytest.mark.parametrize("language", ["r", "racket"])
def test_a_checker_in_the_language(client: CollimateClient, language: str) -> None:
    """A testlib checker written in R or Racket accepts any right split of
    the answer; one that fails (exit 3) is the judge's failure, never the
    program's 0.0."""
    need(language)
    case = CHECKERS[language]
    checker = {"protocol": "testlib", "language": language, "source": case["checker"]}
    broken = {**checker, "source": case["broken"]}
    tests = TESTS[1:]
    specs = [ContestReward(tests, language=language, time_limit=2, checker=checker)] * 2 + [
        ContestReward(tests, language=language, time_limit=2, checker=broken)
    ]
    sources = [case["split"], PROGRAMS[language]["wrong"], PROGRAMS[language]["right"]]
    split, wrong, unjudged = grade_batch(client, "py", sources, specs, on_infra_error="zero")
    assert split.reward == 1.0, split.explain()
    assert (wrong.reward, wrong.infra_error) == (0.0, False), wrong.explain()
    assert unjudged.infra_error, unjudged.explain()


@pytest.mark.parametrize("language", ["r", "racket"])
def test_a_multipl_e_row(client: CollimateClient, language: str) -> None:
    need(language)
    case = ADD_ROWS[language]
    row = {"name": "HumanEval_53_add", **{k: case[k] for k in ("language", "prompt", "tests",
                                                                "stop_tokens")}}  # fmt: skip
    task = row_task(hub_ground_truth(row), row=row)
    assert isinstance(task.spec, ProgramReward) and task.spec.language == language
    hidden = case["hidden"]
    names = ["right", "wrong", "helper", "early", "shadow", *hidden]
    sources = {**{n: case[n] for n in names[:5]}, **hidden}
    uncut = ProgramReward(case["tests"], language=case["language"], prompt=case["prompt"])
    results = grade_batch(
        client,
        "py",
        [task.program(sources[n]) for n in names],
        [task.spec] * 2 + [uncut] * (len(names) - 2),
    )
    got = dict(zip(names, results, strict=True))
    assert not any(r.infra_error for r in results), [r.explain() for r in results]
    assert got["right"].reward == 1.0, got["right"].explain()
    assert got["helper"].reward == 1.0, got["helper"].explain()
    wrong = [n for n in names if n not in ("right", "helper")]
    assert {n: got[n].reward for n in wrong} == dict.fromkeys(wrong, 0.0), [
        (n, got[n].explain()) for n in names if got[n].reward
    ]
    assert got["early"].detail["verdicts"] == ["wrong_answer"], got["early"].detail
    assert got["shadow"].detail["verdicts"] == ["wrong_answer"], got["shadow"].detail


#: SandboxFusion's own tests of these languages (sandbox/tests/runners/
#: test_r.py, test_racket.py, test_verilog.py): the request, the status and
#: the run's status they expect, and what its stdout (or stderr) holds.
SF_R = [
    (
        {"code": '\nmyString <- "Hello, World!"\nprint ( myString )\n    ', "run_timeout": 5},
        "Success", "Finished", ("stdout", "Hello, World!"),
    ),
    (
        {"code": '\nSys.sleep(5)\nprint("Finished waiting for 5 seconds.")\n', "run_timeout": 5},
        "Failed", "TimeLimitExceeded", None,
    ),
    ({"code": "\nstopifnot(isTRUE(all.equal(0, 0)))\n    "}, "Success", "Finished", None),
    (
        {"code": "\nstopifnot(isTRUE(all.equal(1, 0)))\n    "},
        "Failed", "Finished", ("stderr", "Execution halted"),
    ),
]  # fmt: skip
SF_RACKET = [
    (
        {"code": '\n#lang racket\n\n(display "Hello, World!")\n    ', "run_timeout": 5},
        "Success", "Finished", ("stdout", "Hello, World!"),
    ),
    (
        {
            "code": '\n#lang racket\n\n(display "Starting sleep...")\n(sleep 10)\n'
            '(display "Sleep complete!")\n    ',
            "run_timeout": 5,
        },
        "Failed", "TimeLimitExceeded", None,
    ),
    (
        {
            "code": '\n#lang racket\n\n;; Return length of given string\n(define (strlen string)\n'
            "  (string-length string))\n                             \n(require rackunit)\n\n"
            "(define (test-humaneval)\n\n  (let (( candidate strlen))\n"
            '    (check-within (candidate "") 0 0.001)\n'
            '    (check-within (candidate "x") 1 0.001)\n'
            '    (check-within (candidate "asdasnakj") 9 0.001)\n))\n\n(test-humaneval)\n    '
        },
        "Success", "Finished", None,
    ),
]  # fmt: skip

#: A VerilogEval problem as SandboxFusion's test_verilog.py sends it, cut
#: to its shape: a reference module, a stimulus, the ``tb`` comparing them
#: (and dumping a wave file), then the candidate's ``top_module``.
VERILOG_EVAL = """
`timescale 1 ps/1 ps
module reference_module(input a, input b, output out_assign, output reg out_alwaysblock);
\tassign out_assign = a & b;
\talways @(*) out_alwaysblock = a & b;
endmodule

module stimulus_gen (input clk, output reg a, b);
\tinitial begin
\t\tint count; count = 0;
\t\t{a,b} <= 1'b0;
\t\trepeat(10) @(posedge clk) {a,b} <= count++;
\t\trepeat(200) @(posedge clk, negedge clk) {b,a} <= $random;
\t\t#1 $finish;
\tend
endmodule

module tb();
\ttypedef struct packed { int errors; int clocks; } stats;
\tstats stats1;
\treg clk=0;
\tinitial forever #5 clk = ~clk;
\tlogic a, b, out_assign_ref, out_assign_dut, out_alwaysblock_ref, out_alwaysblock_dut;
\tinitial begin
\t\t$dumpfile("wave.vcd");
\t\t$dumpvars(1, stim1.clk, a, b, out_assign_ref, out_assign_dut);
\tend
\twire tb_match = ( { out_assign_ref, out_alwaysblock_ref } ===
\t\t( { out_assign_ref, out_alwaysblock_ref } ^ { out_assign_dut, out_alwaysblock_dut }
\t\t^ { out_assign_ref, out_alwaysblock_ref } ) );
\tstimulus_gen stim1 (.clk, .a, .b);
\treference_module good1 (.a, .b, .out_assign(out_assign_ref),
\t\t.out_alwaysblock(out_alwaysblock_ref));
\ttop_module top_module1 (.a, .b, .out_assign(out_assign_dut),
\t\t.out_alwaysblock(out_alwaysblock_dut));
\tfinal $display("Mismatches: %1d in %1d samples", stats1.errors, stats1.clocks);
\talways @(posedge clk, negedge clk) begin
\t\tstats1.clocks++;
\t\tif (!tb_match) stats1.errors++;
\tend
endmodule

module top_module(input a, input b, output out_assign, output reg out_alwaysblock);
"""


@pytest.mark.parametrize(
    ("language", "body", "status", "run_status", "holds"),
    [("R", *case) for case in SF_R] + [("racket", *case) for case in SF_RACKET],
)
def test_run_code_as_sandbox_fusions_own_tests(
    backend: LocalCollimateBackend,
    language: str,
    body: dict[str, Any],
    status: str,
    run_status: str,
    holds: tuple[str, str] | None,
) -> None:
    need(language.lower())
    with httpx.Client(base_url=backend.base_url, timeout=120) as http:
        a = http.post("/run_code", json={**body, "language": language}).json()
    assert (a["status"], a["run_result"]["status"]) == (status, run_status), a
    if holds is not None:
        assert holds[1] in a["run_result"][holds[0]], a


@pytest.mark.parametrize(
    ("completion", "mismatches"),
    [
        ("assign out_assign = a & b;\nalways @(*) out_alwaysblock = a & b;\nendmodule\n", 0),
        ("assign out_assign = a | b;\nalways @(*) out_alwaysblock = a & b;\nendmodule\n", None),
    ],
)
def test_run_code_verilog_eval(
    backend: LocalCollimateBackend, completion: str, mismatches: int | None
) -> None:
    """SandboxFusion's verilog test: the whole program compiled with ``-s
    tb`` and simulated; its ``final`` block reports the mismatches (the
    run succeeds either way: VerilogEval reads the count)."""
    need("verilog")
    body = {"code": VERILOG_EVAL + completion, "language": "verilog"}
    with httpx.Client(base_url=backend.base_url, timeout=120) as http:
        a = http.post("/run_code", json={**body, "compile_timeout": 40, "run_timeout": 40}).json()
        assert (a["status"], a["run_result"]["status"]) == ("Success", "Finished"), a
        assert a["compile_result"]["status"] == "Finished", a
        out = a["run_result"]["stdout"]
        if mismatches == 0:
            assert "Mismatches: 0 in" in out, out
        else:
            assert "Mismatches: 0 in" not in out and "Mismatches: " in out, out
        # a compile error: Failed, with the compiler's message and no run
        broken = {**body, "code": "module tb; initial $display(1) endmodule\n"}
        b = http.post("/run_code", json=broken).json()
        assert (b["status"], b["run_result"]) == ("Failed", None), b
        assert b["compile_result"]["return_code"] != 0 and "syntax" in b["compile_result"]["stderr"]


@pytest.mark.parametrize("language", ["R", "racket", "verilog", "sql"])
def test_run_code(backend: LocalCollimateBackend, language: str) -> None:
    """``/run_code`` in SandboxFusion's name for the language: the program
    reads its stdin, and a run that fails returns its exit code."""
    ours = language.lower()
    need(ours)
    programs = PROGRAMS[ours]
    with httpx.Client(base_url=backend.base_url, timeout=120) as http:
        body = {"code": programs["right"], "language": language, "stdin": "20 22\n"}
        a = http.post("/run_code", json={**body, "run_timeout": 5}).json()
        assert (a["status"], a["run_result"]["stdout"]) == ("Success", "42\n"), a
        assert (a["compile_result"] is None) == (ours != "verilog"), a
        if ours == "verilog":  # compiled once: the same program again is a cache hit
            before = http.get("/v1/health").json()["compile_cache"]
            again = http.post("/run_code", json={**body, "run_timeout": 5}).json()
            after = http.get("/v1/health").json()["compile_cache"]
            assert again["run_result"]["stdout"] == "42\n", again
            assert (after["compiles"], after["hits"]) == (before["compiles"], before["hits"] + 1)
        failing = programs["runtime_error"]
        a = http.post("/run_code", json={**body, "code": failing, "run_timeout": 5}).json()
        code = 1 if ours == "verilog" else 3  # ($fatal exits 1)
        assert (a["status"], a["run_result"]["return_code"]) == ("Failed", code), a


def test_run_code_sql_files(backend: LocalCollimateBackend) -> None:
    """A request's files are beside the program: SQL reads a CSV file it
    was given, and a database file it writes can be fetched."""
    need("sql")
    code = (
        "CREATE TABLE t(a INT, b INT);\n.mode csv\n.import data.csv t\n"
        "SELECT sum(a * b) FROM t;\nVACUUM INTO 'out.db';\n"
    )
    files = {"data.csv": base64.b64encode(b"1,2\n3,4\n").decode()}
    body = {"code": code, "language": "sql", "files": files, "fetch_files": ["out.db"]}
    with httpx.Client(base_url=backend.base_url, timeout=120) as http:
        a = http.post("/run_code", json=body).json()
    assert (a["status"], a["run_result"]["stdout"]) == ("Success", "14\n"), a
    assert base64.b64decode(a["files"]["out.db"]).startswith(b"SQLite format 3\0"), a


def test_health_names_each_toolchain_with_its_version() -> None:
    found = find_toolchains()
    for language in LANGS:
        need(language)
        described = found[language].describe()
        assert described["available"] and re.search(r"\d+\.\d+", described["compiler"]), described
        assert (described["compile"] is not None) == (language == "verilog"), described
