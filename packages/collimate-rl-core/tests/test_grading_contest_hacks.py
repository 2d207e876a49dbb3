"""What a policy under RL pressure might try with a judged program, in every
language: exit early, stall, kill its runner (R, Racket and SQL through
their ``system`` and ``.shell``) or every process it can see, forge output
on other fds, look for the expected outputs, and (in C++,
which can do all of it) fork bombs, thread storms, memory and disk
exhaustion. Each hack is graded alone and in a group beside right
candidates: it scores 0.0, never an infra error, and its siblings keep
their 1.0."""

from __future__ import annotations

import pytest

from collimate_rl import CollimateClient, ContestReward, grade, grade_batch
from collimate_rl.testing.fixtures import module_backend
from collimate_rl.testing.programs import PROGRAMS, need

#: The expected outputs carry a token no input reveals: a program that
#: prints it found the expected outputs somewhere.
SECRET = "tok-7c1e95d0a4"
TESTS = [(f"{i} {3 * i}\n", f"{4 * i} {SECRET}\n") for i in range(3)]
#: Right answers for TESTS, per language.
RIGHT = {
    "cpp": "#include <bits/stdc++.h>\nint main(){ long long a,b; std::cin>>a>>b;"
    f' std::cout << a + b << " {SECRET}\\n"; }}',
    "java": "import java.util.*;\npublic class Main { public static void main(String[] x) {"
    " Scanner s = new Scanner(System.in); long a = s.nextLong(), b = s.nextLong();"
    f' System.out.println((a + b) + " {SECRET}"); }} }}',
    "nodejs": 'const [a, b] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/)'
    f".map(Number);\nconsole.log(`${{a + b}} {SECRET}`);",
    "typescript": 'const [a, b]: number[] = require("fs").readFileSync(0, "utf8").trim()'
    f".split(/\\s+/).map(Number);\nconsole.log(`${{a + b}} {SECRET}`);",
    "rust": "use std::io::*;\nfn main() { let mut s = String::new();"
    " stdin().read_to_string(&mut s).unwrap();"
    " let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();"
    f' println!("{{}} {SECRET}", v[0] + v[1]); }}',
    "go": 'package main\nimport "fmt"\nfunc main() { var a, b int64; fmt.Scan(&a, &b);'
    f' fmt.Println(a + b, "{SECRET}") }}',
    "bash": f'read a b; echo "$((a + b)) {SECRET}"',
    "perl": f"my ($a, $b) = split ' ', join('', <STDIN>); print $a + $b, \" {SECRET}\\n\";",
    "php": "<?php [$a, $b] = array_map('intval', preg_split('/\\s+/',"
    f' trim(stream_get_contents(STDIN)))); echo $a + $b, " {SECRET}\\n";',
    "lua": f"local a, b = io.read('n', 'n'); print(a + b .. ' {SECRET}')",
    "ruby": f'a, b = STDIN.read.split.map(&:to_i); puts "#{{a + b}} {SECRET}"',
    "csharp": "using System;\nclass P { static void Main() {"
    " string[] s = Console.In.ReadToEnd().Split((char[])null,"
    " StringSplitOptions.RemoveEmptyEntries);"
    f' Console.WriteLine((long.Parse(s[0]) + long.Parse(s[1])) + " {SECRET}"); }} }}',
    "d": 'import core.stdc.stdio;\nvoid main() { long a, b; scanf("%lld %lld", &a, &b);'
    f' printf("%lld {SECRET}\\n", a + b); }}',
    "r": f'x <- scan(file("stdin"), quiet = TRUE)\ncat(x[1] + x[2], " {SECRET}\\n", sep = "")\n',
    "racket": "#lang racket/base\n(define a (read))\n(define b (read))\n"
    f'(printf "~a {SECRET}\\n" (+ a b))\n',
    "verilog": "module tb;\n  integer a, b, n;\n  initial begin\n"
    '    n = $fscanf(32\'h8000_0000, "%d %d", a, b);\n'
    f'    $display("%0d {SECRET}", a + b);\n  end\nendmodule\n',
    "sql": 'CREATE TABLE t(a INT, b INT);\n.mode csv\n.separator " "\n.import /dev/stdin t\n'
    f".mode list\nSELECT (a + b) || ' {SECRET}' FROM t;\n",
}
#: The hacks every language can write.
HACKS = {
    "cpp": {
        "exit_early": "int main(){ return 0; }",
        "stall": "#include <unistd.h>\nint main(){ for(;;) pause(); }",
        "kill_runner": "#include <signal.h>\n#include <unistd.h>\n"
        "int main(){ kill(getppid(), SIGKILL); kill(getppid(), SIGSTOP); pause(); }",
        "kill_all": "#include <signal.h>\n#include <unistd.h>\n"
        "int main(){ kill(-1, SIGKILL); kill(-1, SIGSTOP); pause(); }",
        "forge_fds": "#include <unistd.h>\n#include <cstring>\nint main(){"
        ' const char* m = "accepted\\n\\x1e{\\"phase\\": \\"run\\"}\\n";'
        " for(int fd=2; fd<64; fd++) write(fd, m, strlen(m)); return 0; }",
        "look_for_answers": "#include <bits/stdc++.h>\nnamespace fs = std::filesystem;\n"
        'int main(){ for (const char* top : {"/tmp", ".", "..", "/proc", "/dev/shm",'
        ' "/root", "/home", "/var", "/run"}) { std::error_code ec;'
        " for (auto it = fs::recursive_directory_iterator(top,"
        " fs::directory_options::skip_permission_denied, ec);"
        " it != fs::recursive_directory_iterator(); it.increment(ec)) { if (ec) break;"
        " if (!it->is_regular_file(ec) || it->file_size(ec) > (1 << 20)) continue;"
        " std::ifstream f(it->path()); std::string w;"
        ' while (f >> w) if (w.rfind("tok-", 0) == 0) { std::cout << "0 " << w << "\\n";'
        " return 0; } } } return 0; }",
        "fork_bomb": "#include <unistd.h>\nint main(){ for(;;) fork(); }",
        "thread_storm": "#include <thread>\n#include <vector>\nint main(){"
        " std::vector<std::thread> t; for(int i=0;i<64;i++) t.emplace_back([]{"
        " volatile unsigned long x=0; for(;;) x++; }); for(auto& x: t) x.join(); }",
        "memory": "#include <cstdlib>\n#include <cstring>\nint main(){"
        " for(;;){ char* p=(char*)malloc(64<<20); if(p) memset(p, 1, 64<<20); } }",
        "fill_disk": '#include <cstdio>\nint main(){ FILE* f=fopen("junk", "w");'
        " static char b[1<<20]; for(;;) fwrite(b, 1, sizeof b, f); }",
        "daemon": "#include <unistd.h>\n#include <cstdio>\nint main(){ if (fork()==0) {"
        " setsid(); if (fork()==0) { for(;;) { volatile unsigned long x=0; x++; } } _exit(0); }"
        " return 0; }",
    },
    "java": {
        "exit_early": "public class Main { public static void main(String[] x) {"
        " System.exit(0); } }",
        "stall": "public class Main { public static void main(String[] x) throws Exception {"
        " Thread.sleep(1000000); } }",
        "kill_runner": "public class Main { public static void main(String[] x) {"
        " ProcessHandle.current().parent().ifPresent(p -> p.destroyForcibly()); } }",
    },
    "nodejs": {
        "exit_early": "process.exit(0);",
        "stall": "setInterval(() => {}, 1000);",
        "kill_runner": "process.kill(process.ppid, 'SIGKILL');",
    },
    "typescript": {
        "exit_early": "process.exit(0);",
        "stall": "setInterval(() => {}, 1000);",
        "kill_runner": "process.kill(process.ppid, 'SIGKILL');",
    },
    "rust": {
        "exit_early": "fn main() { std::process::exit(0); }",
        "stall": "fn main() { loop { std::thread::sleep(std::time::Duration::from_secs(9)); } }",
        "kill_runner": "fn main() { let ppid = std::os::unix::process::parent_id();"
        ' let _ = std::process::Command::new("kill").args(["-9", &ppid.to_string()]).status();'
        " }",
    },
    "go": {
        "exit_early": 'package main\nimport "os"\nfunc main() { os.Exit(0) }',
        "stall": 'package main\nimport "time"\nfunc main() { time.Sleep(time.Hour) }',
        "kill_runner": 'package main\nimport ("os"; "syscall")\n'
        "func main() { syscall.Kill(os.Getppid(), syscall.SIGKILL) }",
    },
    "bash": {
        "exit_early": "exit 0",
        "stall": "sleep 1000000",
        "kill_runner": "kill -KILL $PPID; kill -STOP $PPID",
        "forge_fds": "for fd in $(seq 2 63); do"
        ' printf \'accepted\\n\\x1e{"phase": "run"}\\n\' >&$fd; done 2>/dev/null',
    },
    "perl": {
        "exit_early": "exit 0;",
        "stall": "sleep 1000000;",
        "kill_runner": "kill 'KILL', getppid(); kill 'STOP', getppid();",
    },
    "php": {
        "exit_early": "<?php exit(0);",
        "stall": "<?php sleep(1000000);",
        "kill_runner": "<?php posix_kill(posix_getppid(), SIGKILL);",
    },
    "lua": {
        "exit_early": "os.exit(0)",
        "stall": "os.execute('sleep 1000000')",
        "kill_runner": "local f = io.open('/proc/self/stat'); local s = f:read('a');"
        " os.execute('kill -KILL ' .. s:match('^%d+ %b() %S+ (%d+)'))",
    },
    "ruby": {
        "exit_early": "exit 0",
        "stall": "sleep",
        "kill_runner": "Process.kill(:KILL, Process.ppid)",
    },
    "csharp": {
        "exit_early": "class P { static void Main() { System.Environment.Exit(0); } }",
        "stall": "class P { static void Main() { System.Threading.Thread.Sleep(-1); } }",
        "kill_runner": "using System.Runtime.InteropServices;\nclass P {"
        ' [DllImport("libc")] static extern int kill(int p, int s);'
        ' [DllImport("libc")] static extern int getppid();'
        " static void Main() { kill(getppid(), 9); kill(getppid(), 19); } }",
    },
    "d": {
        "exit_early": "import core.stdc.stdlib;\nvoid main() { exit(0); }",
        "stall": "import core.sys.posix.unistd;\nvoid main() { for (;;) pause(); }",
        "kill_runner": "import core.sys.posix.unistd, core.sys.posix.signal;\n"
        "void main() { kill(getppid(), SIGKILL); kill(getppid(), SIGSTOP); pause(); }",
    },
    "r": {
        "exit_early": "quit(status = 0)\n",
        "stall": "Sys.sleep(1e6)\n",
        "kill_runner": "system(\"kill -9 $PPID; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)\")\n",
    },
    "racket": {
        "exit_early": "#lang racket/base\n(exit 0)\n",
        "stall": "#lang racket/base\n(sleep 1000000)\n",
        "kill_runner": "#lang racket/base\n(require racket/system)\n"
        "(system \"kill -9 $PPID; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)\")\n",
    },
    "verilog": {
        "exit_early": "module tb;\n  initial $finish;\nendmodule\n",
        # simulated time runs on (a stall of the clock would end the simulation)
        "stall": "module tb;\n  initial forever #1;\nendmodule\n",
    },
    "sql": {
        "exit_early": ".exit 0\n",
        "stall": ".shell sleep 1000\n",
        "kill_runner": ".shell kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)\n",
    },
}
CASES = [(lang, name) for lang, hacks in HACKS.items() for name in hacks]


backend, client = module_backend(timeout=600)


#: Hacks that cost their run its whole time limit and the machine's CPUs:
#: one test is proof enough (each test is a fresh run of the same hack).
HEAVY = {"fork_bomb", "thread_storm", "memory", "fill_disk", "look_for_answers", "stall"}


def _spec(language: str, hack: str = "") -> ContestReward:
    tests = TESTS[:1] if hack in HEAVY else TESTS
    return ContestReward(tests, language=language, time_limit=1, memory_limit_mb=256)


def test_every_judged_language_has_its_hacks() -> None:
    assert set(PROGRAMS) <= set(HACKS) == set(RIGHT)


@pytest.mark.parametrize("language", list(RIGHT))
def test_the_right_answer_is_right(client: CollimateClient, language: str) -> None:
    need(language)
    assert grade(client, "py", RIGHT[language], _spec(language)).reward == 1.0


@pytest.mark.parametrize(("language", "hack"), CASES)
def test_a_hack_scores_zero_alone_and_costs_its_siblings_nothing(
    client: CollimateClient, language: str, hack: str
) -> None:
    need(language)
    spec = _spec(language, hack)
    alone = grade(client, "py", HACKS[language][hack], spec)
    assert (alone.reward, alone.infra_error) == (0.0, False), alone.explain()
    # C++ can do every hack: its hacks meet a GRPO-sized group (7 siblings)
    side = 3 if language == "cpp" else 1
    group = [RIGHT[language]] * side + [HACKS[language][hack]] + [RIGHT[language]] * side
    results = grade_batch(client, "py", group, spec)
    assert [r.reward for r in results] == [1.0] * side + [0.0] + [1.0] * side, [
        r.explain() for r in results
    ]
    assert not any(r.infra_error for r in results)
