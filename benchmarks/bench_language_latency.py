"""What one ``POST /run_code`` costs in each language our local backend
runs: the first request of a source (for a compiled language the compile
cache is cold: the source is new) and the same request again (its build
cached), wall milliseconds at the client, median of rounds.

Why: a verl user sends one request per test, so the first request is what
a candidate's compile costs once and the second what each of its other
tests costs; the two together say which languages a training step can
afford and where the compile cache earns its keep.

Every language ``collimate_rl.local_backend.toolchains.find_toolchains()``
finds on this host is measured with a hello-world-class program that reads
one line of stdin and prints it (each round's source carries a comment of
its own, so the first request compiles; a warm-up round before them is not
kept, so the server's and each language's own start are not counted); a
test-framework mode (pytest, junit, jest, go_test) runs one passing test
instead, on its language's toolchain, and is judged by its status. A
language this backend does not know, whose toolchain the host lacks, or
that ``/run_code`` refuses is listed as skipped, with why. Every answer is
checked: a wrong output or a failed status makes the run exit 1.

    python benchmarks/bench_language_latency.py [--rounds 5] [--languages cpp,python]
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from _results import add_out_option, write_results
from _sandbox_fusion_peer import run_code
from _sides import ours_backend

from collimate_rl.local_backend.toolchains import Toolchain, find_toolchains

LINE = "hello from collimate\n"


@dataclass(frozen=True)
class Sample:
    """A program and how to tell it ran right."""

    code: str
    comment: str  # a line comment's start: the per-round tag goes after the code
    #: ``True``: it echoes :data:`LINE`; ``False``: a test mode, judged by its status.
    echoes: bool = True


#: One sample per language, keyed by our language name (toolchains.LANGUAGES,
#: and the ones other branches add: a language the backend does not know yet
#: is skipped, so its sample waits here).
SAMPLES: dict[str, Sample] = {
    "cpp": Sample(
        "#include <bits/stdc++.h>\n"
        "int main() { std::string s; std::getline(std::cin, s); std::cout << s << '\\n'; }\n",
        "//",
    ),
    "java": Sample(
        "import java.io.*;\n\n"
        "public class Main {\n"
        "    public static void main(String[] args) throws IOException {\n"
        "        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));\n"
        "        System.out.println(in.readLine());\n"
        "    }\n"
        "}\n",
        "//",
    ),
    "javascript": Sample(
        'const line = require("fs").readFileSync(0, "utf8").split("\\n")[0];\nconsole.log(line);\n',
        "//",
    ),
    "typescript": Sample(
        'import * as fs from "fs";\n'
        'const line: string = fs.readFileSync(0, "utf8").split("\\n")[0];\n'
        "console.log(line);\n",
        "//",
    ),
    "rust": Sample(
        "use std::io::stdin;\n\n"
        "fn main() {\n"
        "    let mut line = String::new();\n"
        "    stdin().read_line(&mut line).unwrap();\n"
        '    println!("{}", line.trim_end());\n'
        "}\n",
        "//",
    ),
    "go": Sample(
        "package main\n\n"
        'import (\n\t"bufio"\n\t"fmt"\n\t"os"\n)\n\n'
        "func main() {\n"
        "\tin := bufio.NewScanner(os.Stdin)\n"
        "\tin.Scan()\n"
        "\tfmt.Println(in.Text())\n"
        "}\n",
        "//",
    ),
    "python": Sample("print(input())\n", "#"),
    "bash": Sample('read -r line\necho "$line"\n', "#"),
    "perl": Sample("my $line = <STDIN>;\nprint $line;\n", "#"),
    "php": Sample('<?php\n$line = fgets(STDIN);\necho rtrim($line, "\\n"), "\\n";\n', "#"),
    "lua": Sample('local line = io.read("l")\nprint(line)\n', "--"),
    "ruby": Sample("line = gets\nputs line.chomp\n", "#"),
    "csharp": Sample(
        "using System;\n\n"
        "public class Program\n"
        "{\n"
        "    public static void Main(string[] args)\n"
        "    {\n"
        "        Console.WriteLine(Console.ReadLine());\n"
        "    }\n"
        "}\n",
        "//",
    ),
    "d": Sample(
        "import std.stdio;\nimport std.string;\n\n"
        "void main() {\n    writeln(readln().chomp());\n}\n",
        "//",
    ),
    "scala": Sample(
        "object Main {\n"
        "  def main(args: Array[String]): Unit = {\n"
        "    println(scala.io.StdIn.readLine())\n"
        "  }\n"
        "}\n",
        "//",
    ),
    "kotlin": Sample("println(readLine())\n", "//"),  # a script: /run_code's kotlin_script
    "r": Sample(
        'line <- readLines(file("stdin"), n = 1)\ncat(line, "\\n", sep = "")\n',
        "#",
    ),
    "racket": Sample("#lang racket\n(displayln (read-line))\n", ";"),
    "verilog": Sample(
        "module tb;\n"
        "  reg [8*64:1] line;\n"
        "  integer got;\n"
        "  initial begin\n"
        "    got = $fgets(line, 32'h8000_0000);\n"
        '    $write("%0s", line);\n'
        "    $finish;\n"
        "  end\n"
        "endmodule\n",
        "//",
    ),
    "sql": Sample(f"SELECT '{LINE.strip()}';\n", "--"),
    "pytest": Sample(
        "def echo(text):\n    return text\n\n\ndef test_echo():\n    assert echo('a') == 'a'\n",
        "#",
        echoes=False,
    ),
    "junit": Sample(
        "import org.junit.jupiter.api.Test;\n"
        "import static org.junit.jupiter.api.Assertions.*;\n\n"
        "class Echo {\n"
        "    static String echo(String s) { return s; }\n"
        "}\n\n"
        "class EchoTest {\n"
        "    @Test\n"
        '    void echoes() { assertEquals("a", Echo.echo("a")); }\n'
        "}\n",
        "//",
        echoes=False,
    ),
    "jest": Sample(
        "function echo(s) { return s; }\n\n"
        "test('echoes', () => {\n  expect(echo('a')).toBe('a');\n});\n",
        "//",
        echoes=False,
    ),
    "go_test": Sample(
        "package main\n\n"
        'import "testing"\n\n'
        "func Echo(s string) string { return s }\n\n"
        "func TestEcho(t *testing.T) {\n"
        '\tif Echo("a") != "a" {\n\t\tt.Fatal("no echo")\n\t}\n'
        "}\n",
        "//",
        echoes=False,
    ),
}


#: The test-framework modes, and the language whose toolchain each runs on.
MODES = {"pytest": "python", "junit": "java", "jest": "javascript", "go_test": "go"}

#: Our language names that ``/run_code`` spells SandboxFusion's way.
WIRE_NAMES = {"javascript": "nodejs", "r": "R", "d": "D_ut", "kotlin": "kotlin_script"}


def body(language: str, code: str, compile_timeout: float) -> dict[str, Any]:
    """A verl-shaped ``/run_code`` request of ``code`` in ``language`` (ours)."""
    return {
        "code": code,
        "stdin": LINE,
        "language": WIRE_NAMES.get(language, language),
        "compile_timeout": compile_timeout,
        "run_timeout": 10,
        "memory_limit_MB": 1024,
        "files": {},
        "fetch_files": [],
    }


def refused(answer: dict[str, Any]) -> str | None:
    """Why the backend does not run the language at all (``None``: it does)."""
    message = str(answer.get("message") or "")
    if answer.get("status") == "SandboxError" and "not available on this backend" in message:
        return message
    return None


def problem(sample: Sample, answer: dict[str, Any]) -> str | None:
    """What is wrong with an answer (``None``: nothing)."""
    run = answer.get("run_result") or {}
    if answer.get("status") != "Success":
        return f"status {answer.get('status')}: {str(answer)[:600]}"
    if sample.echoes and run.get("stdout") != LINE:
        return f"stdout {run.get('stdout')!r}, wanted {LINE!r}"
    return None


def timed(
    conn: http.client.HTTPConnection, request: dict[str, Any]
) -> tuple[float, dict[str, Any]]:
    """One request: its wall ms at the client, and its answer."""
    started = time.perf_counter()
    answer = run_code(conn, request)
    return (time.perf_counter() - started) * 1000, answer


def compile_cache(url: str) -> dict[str, int]:
    health = httpx.get(f"{url}/v1/health", timeout=30).json()
    counters: dict[str, int] = health.get("compile_cache") or {}
    return counters


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--languages", default="", help="comma-separated (default: every one)")
    ap.add_argument("--compile-timeout", type=float, default=120.0)
    add_out_option(ap)
    args = ap.parse_args(argv)
    wanted = [x for x in args.languages.split(",") if x] or list(SAMPLES)

    found = find_toolchains()
    toolchains: dict[str, Toolchain] = {}
    skipped: dict[str, str] = {}
    for name in wanted:
        chain = found.get(MODES.get(name, name))
        if name not in SAMPLES:
            skipped[name] = "no sample program here"
        elif chain is None:
            skipped[name] = "not a language of this backend (yet)"
        elif not isinstance(chain, Toolchain):
            skipped[name] = f"toolchain missing on this host (install: {chain.install})"
        else:
            toolchains[name] = chain
    unsampled = sorted(set(found) - set(SAMPLES))
    if unsampled:
        print(f"languages of the backend without a sample here: {', '.join(unsampled)}")

    first: dict[str, list[float]] = {n: [] for n in toolchains}
    cached: dict[str, list[float]] = {n: [] for n in toolchains}
    errors: dict[str, str] = {}
    run_id = uuid.uuid4().hex[:12]
    print(
        f"languages: {len(toolchains)} found of {len(wanted)}; {args.rounds} round(s); "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    with ours_backend() as url:
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=args.compile_timeout + 60)
        before = compile_cache(url)
        try:
            for r in range(args.rounds + 1):  # round 0: each language's warm-up, not kept
                for name in toolchains:
                    if name in errors or name in skipped:
                        continue
                    sample = SAMPLES[name]
                    code = f"{sample.code}{sample.comment} run {run_id} round {r}\n"
                    request = body(name, code, args.compile_timeout)
                    for times in (first, cached):
                        try:
                            ms, answer = timed(conn, request)
                        except RuntimeError as exc:  # not a 200: refused, not measured
                            errors[name] = str(exc)[:600]
                            break
                        why = refused(answer)
                        if why:
                            print(f"{name}: refused: {why}")
                            skipped[name] = "this backend's /run_code does not run it yet"
                            break
                        wrong = problem(sample, answer)
                        if wrong:
                            errors[name] = wrong
                            break
                        if r:
                            times[name].append(ms)
                print(f"round {r} done" if r else "warm-up done", flush=True)
        finally:
            conn.close()
        cache = {k: compile_cache(url).get(k, 0) - before.get(k, 0) for k in ("compiles", "hits")}

    rows = []
    print(f"\n{'language':<12} {'toolchain':<34} {'first ms':>9} {'cached ms':>10}")
    for name, chain in toolchains.items():
        if name in skipped:
            continue
        if name in errors:
            print(f"{name:<12} {chain.compiler:<34} FAILED: {errors[name]}")
            continue
        f, c = statistics.median(first[name]), statistics.median(cached[name])
        kind = "compiled" if chain.compiled else "interpreted"
        rows.append({"language": name, "toolchain": chain.compiler, "kind": kind,
                     "first_ms": f, "cached_ms": c,
                     "first_ms_rounds": first[name], "cached_ms_rounds": cached[name]})  # fmt: skip
        print(f"{name:<12} {chain.compiler:<34} {f:>9.0f} {c:>10.0f}")
    for name, why in skipped.items():
        print(f"{name:<12} skipped: {why}")
    print(f"compile cache over the run: +{cache['compiles']} compiles, +{cache['hits']} hits")
    figures = {
        "languages": rows,
        "skipped": skipped,
        "failed": errors,
        "compile_cache": cache,
    }
    chart = {
        "name": "latency",
        "kind": "bar",
        "title": f"One /run_code per language, median of {args.rounds} rounds",
        "categories": [row["language"] for row in rows],
        "series": [
            {"name": "first request (new source)", "values": [row["first_ms"] for row in rows]},
            {"name": "the same again (cached)", "values": [row["cached_ms"] for row in rows]},
        ],
        "y_label": "wall ms at the client, lower is better",
    }
    write_results(__file__, args, figures, [chart])
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
