"""Programs in each language the local backend compiles and runs, for
tests of judges and of ``/run_code``: one per behaviour a judge must tell
apart.

Each reads two integers from stdin and prints their sum (``right``), or
gets it wrong, fails to compile, exits nonzero, loops, allocates and
touches far more memory than allowed, or floods stdout.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from collimate_rl.local_backend.toolchains import MissingToolchain, find_toolchains

CPP = {
    "right": "#include <bits/stdc++.h>\nint main(){long long a,b;std::cin>>a>>b;"
    'std::cout<<a+b<<"\\n";}',
    "wrong": "#include <bits/stdc++.h>\nint main(){long long a,b;std::cin>>a>>b;"
    'std::cout<<a*b<<"\\n";}',
    "compile_error": "int main(){ return undefined_name; }",
    "runtime_error": "#include <cstdlib>\nint main(){ std::exit(3); }",
    "loop": "int main(){ volatile unsigned long x=0; for(;;) x++; }",
    "memory": "#include <bits/stdc++.h>\nint main(){ size_t n=512u<<20; char*p=(char*)malloc(n);"
    " for(size_t i=0;i<n;i+=4096) p[i]=1; std::cout<<(int)p[n-4096]; }",
    "flood": '#include <cstdio>\nint main(){ for(;;) fputs("xxxxxxxxxxxxxxxx\\n", stdout); }',
    "deep": "#include <cstdio>\nint f(int n){ volatile int pad[16]; pad[0]=n;"
    ' return n? f(n-1)+1 : pad[0]; }\nint main(){ printf("%d\\n", f(1000000)); }',
}
JAVA = {
    "right": "import java.util.*;\npublic class Main { public static void main(String[] x) {"
    " Scanner s = new Scanner(System.in); long a = s.nextLong(), b = s.nextLong();"
    " System.out.println(a + b); } }",
    "wrong": "import java.util.*;\npublic class Main { public static void main(String[] x) {"
    " Scanner s = new Scanner(System.in); long a = s.nextLong(), b = s.nextLong();"
    " System.out.println(a * b); } }",
    "compile_error": "public class Main { public static void main(String[] x) { int y = ; } }",
    "runtime_error": "public class Main { public static void main(String[] x) {"
    " System.exit(3); } }",
    "loop": "public class Main { public static void main(String[] x) { long i = 0;"
    " while (true) { i++; } } }",
    "memory": "public class Main { public static void main(String[] x) {"
    " java.util.List<byte[]> l = new java.util.ArrayList<>();"
    " for (int i = 0; i < 512; i++) { byte[] b = new byte[1 << 20];"
    " for (int j = 0; j < b.length; j += 4096) b[j] = 1; l.add(b); }"
    " System.out.println(l.size()); } }",
    "flood": "public class Main { public static void main(String[] x) {"
    " byte[] b = new byte[1 << 16]; java.util.Arrays.fill(b, (byte) 'x');"
    " while (true) System.out.write(b, 0, b.length); } }",
    "deep": "public class Main { static int f(int n) { return n == 0 ? 0 : f(n - 1) + 1; }"
    " public static void main(String[] x) { System.out.println(f(1000000)); } }",
}
JAVASCRIPT = {
    "right": 'const [a, b] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/)'
    ".map(BigInt);\nconsole.log((a + b).toString());",
    "wrong": 'const [a, b] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/)'
    ".map(BigInt);\nconsole.log((a * b).toString());",
    "compile_error": None,  # run from source: a syntax error is a runtime error
    "runtime_error": "process.exit(3);",
    "loop": "let i = 0; for (;;) { i++; }",
    "memory": "const l = []; for (let i = 0; i < 512; i++) { const b = Buffer.alloc(1 << 20, 1);"
    " l.push(b); } console.log(l.length);",
    "flood": 'for (;;) process.stdout.write("xxxxxxxxxxxxxxxx\\n".repeat(1024));',
    "deep": None,  # V8's stack is its own (not the process's): no deep recursion
}
TYPESCRIPT = {
    "right": 'const [a, b]: bigint[] = require("fs").readFileSync(0, "utf8").trim()'
    ".split(/\\s+/).map(BigInt);\nconsole.log((a + b).toString());",
    "wrong": 'const [a, b]: bigint[] = require("fs").readFileSync(0, "utf8").trim()'
    ".split(/\\s+/).map(BigInt);\nconsole.log((a * b).toString());",
    "compile_error": "const x: number = 'not a number';\nconsole.log(x);",
    "runtime_error": "process.exit(3);",
    "loop": "let i: number = 0; for (;;) { i++; }",
    "memory": "const l: Buffer[] = []; for (let i = 0; i < 512; i++) {"
    " l.push(Buffer.alloc(1 << 20, 1)); } console.log(l.length);",
    "flood": 'for (;;) process.stdout.write("xxxxxxxxxxxxxxxx\\n".repeat(1024));',
    "deep": None,
}
RUST = {
    "right": "use std::io::*;\nfn main() { let mut s = String::new();"
    " stdin().read_to_string(&mut s).unwrap();"
    " let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();"
    ' println!("{}", v[0] + v[1]); }',
    "wrong": "use std::io::*;\nfn main() { let mut s = String::new();"
    " stdin().read_to_string(&mut s).unwrap();"
    " let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();"
    ' println!("{}", v[0] * v[1]); }',
    "compile_error": 'fn main() { let x: i32 = "no"; }',
    "runtime_error": "fn main() { std::process::exit(3); }",
    "loop": "fn main() { let mut i: u64 = 0; loop { i = std::hint::black_box(i + 1); } }",
    "memory": "fn main() { let mut v: Vec<Vec<u8>> = Vec::new();"
    ' for _ in 0..512 { v.push(vec![1u8; 1 << 20]); } println!("{}", v.len()); }',
    "flood": "use std::io::Write;\nfn main() { let mut o = std::io::stdout().lock();"
    " let b = [b'x'; 1 << 16]; loop { o.write_all(&b).unwrap(); } }",
    "deep": "fn f(n: u64) -> u64 { if n == 0 { 0 } else { std::hint::black_box(f(n - 1)) + 1 } }\n"
    'fn main() { println!("{}", f(1_000_000)); }',
}
GO = {
    "right": 'package main\nimport "fmt"\nfunc main() { var a, b int64; fmt.Scan(&a, &b);'
    " fmt.Println(a + b) }",
    "wrong": 'package main\nimport "fmt"\nfunc main() { var a, b int64; fmt.Scan(&a, &b);'
    " fmt.Println(a * b) }",
    "compile_error": "package main\nfunc main() { x := }",
    "runtime_error": 'package main\nimport "os"\nfunc main() { os.Exit(3) }',
    "loop": "package main\nfunc main() { i := 0; for { i++ } }",
    "memory": 'package main\nimport "fmt"\nfunc main() { l := [][]byte{};'
    " for i := 0; i < 512; i++ { b := make([]byte, 1<<20);"
    " for j := range b { b[j] = 1 }; l = append(l, b) }; fmt.Println(len(l)) }",
    "flood": 'package main\nimport ("bufio"; "os")\nfunc main() { w := bufio.NewWriter(os.Stdout);'
    ' for { w.WriteString("xxxxxxxxxxxxxxxx\\n") } }',
    "deep": 'package main\nimport "fmt"\nfunc f(n int) int { if n == 0 { return 0 };'
    " return f(n-1) + 1 }\nfunc main() { fmt.Println(f(1000000)) }",
}
#: The right program in Python (judged like the others by ``/v1/judge``).
PYTHON_SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
#: SandboxFusion's name for each language, and its programs.
PROGRAMS = {
    "cpp": CPP,
    "java": JAVA,
    "nodejs": JAVASCRIPT,
    "typescript": TYPESCRIPT,
    "rust": RUST,
    "go": GO,
}
OURS = {
    "cpp": "cpp",
    "java": "java",
    "nodejs": "javascript",
    "typescript": "typescript",
    "rust": "rust",
    "go": "go",
    "python": "python",
}


def need(language: str) -> None:
    """Skip when this host lacks the language's toolchain; in CI (where
    ``.ci/run`` installs every one) fail instead: a toolchain that went
    missing there must not hide its tests."""
    import pytest  # (only tests call this)

    found = find_toolchains()[OURS.get(language, language)]
    if isinstance(found, MissingToolchain):
        if os.environ.get("CI"):
            pytest.fail(f"CI must have every toolchain: {found.message()}")
        pytest.skip(found.message())


def program_rows() -> list[dict[str, Any]]:
    """Rows of MultiPL-E, HumanEval-X and MBXP (``program_rows.jsonl``),
    each ``{"dataset", "language", "row", "right", "wrong"}``: ``row`` as
    ``datasets`` loads it, ``right`` and ``wrong`` completions.

    HumanEval-X's and MBXP's rows are copied from their released files
    (canonical solutions as ``right``; MBXP's Go has none, so its ``right``
    is written here). MultiPL-E's come from its repository's prompt files,
    their doc comments commented line by line as on the Hub (the
    repository's copies leave later lines bare), with bodies written here
    (MultiPL-E ships no solutions)."""
    path = Path(__file__).with_name("program_rows.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
