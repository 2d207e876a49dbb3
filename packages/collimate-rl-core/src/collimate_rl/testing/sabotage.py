"""Self-sabotage by judged programs, in every language the local backend
compiles and runs: the catalogue the tests and the reliability table share.

Each entry of :data:`CATALOGUE` is a snippet of that language doing one kind
of damage to what the program was given or to the processes around it:
tampering with its own build output (unlink, chmod, overwrite) and run
directory (chmod 0, removed), exec tricks, signals to itself, its parent
(the runner), its group and everything it can see, closed descriptors,
lowered rlimits, a filled disk, memory and process quotas, sleepers left
behind, a lowered priority. :func:`wrong` makes a program that does the
damage and then answers :data:`TESTS` wrong (due 0.0, never an infra
error); :func:`right` one that does it and then answers right. A language
that cannot express a case natively (the JVM's languages and Node have no
``setrlimit`` or ``exec``; R and Racket reach signals and processes
through their ``tools::pskill`` and ``system``) leaves it out.
:data:`UNRUNNABLE` holds sources whose build
succeeds with nothing to run (due a compile error).

:func:`contest_tests` makes the tests of ``test_grading_contest_sabotage_*.py``
from the checks here, for the languages one file holds (the files split the
languages so that several workers share the minutes of compiles and runs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final

from ..pipeline._sync.grading import grade, grade_batch
from ..rewards import ContestReward
from . import sabotage_scripts

if TYPE_CHECKING:
    from ..client._sync import CollimateClient
    from ..pipeline.result import GradeResult

__all__ = [
    "CATALOGUE",
    "TAMPER_THEN_RIGHT",
    "TESTS",
    "UNRUNNABLE",
    "check_alone",
    "check_group",
    "check_tampering",
    "check_unrunnable",
    "contest_tests",
    "right",
    "spec",
    "wrong",
]

#: a + b, three tests (input, expected output).
TESTS: Final = [(f"{i} {3 * i}\n", f"{4 * i}\n") for i in range(1, 4)]

# -- C++ -----------------------------------------------------------------------
CPP_HEAD = (
    "#include <bits/stdc++.h>\n#include <unistd.h>\n#include <signal.h>\n#include <fcntl.h>\n"
    "#include <sys/stat.h>\n#include <sys/resource.h>\nusing namespace std;\n"
    'static string self_() { char p[4096]; ssize_t n = readlink("/proc/self/exe", p, 4095);'
    " p[n > 0 ? n : 0] = 0; return p; }\n"
    'static void fill_(const char* dir) { string f = string(dir) + "/junk";'
    " int fd = open(f.c_str(), O_WRONLY | O_CREAT, 0644); static char b[1 << 20];"
    " while (fd >= 0 && write(fd, b, sizeof b) > 0) {} }\n"
)
CPP_RIGHT = "long long a, b; cin >> a >> b; cout << a + b << endl;"
CPP = {
    "unlink_build": "unlink(self_().c_str());",
    "chmod_build": "string s = self_(); chmod(s.c_str(), 0);"
    " chmod(s.substr(0, s.rfind('/')).c_str(), 0);",
    "overwrite_build": "string s = self_(); unlink(s.c_str());"
    ' FILE* f = fopen(s.c_str(), "w"); if (f) { fputs("#!/bin/sh\\necho 4\\n", f); fclose(f); }'
    " chmod(s.c_str(), 0755);",
    "chmod_dir": 'chmod(".", 0);',
    "remove_dir": 'system("rm -rf \\"$PWD\\"");',
    "kill_parent": "kill(getppid(), SIGKILL);",
    "stop_parent": "kill(getppid(), SIGSTOP);",
    "stop_all": "kill(-1, SIGSTOP);",
    "kill_all": "kill(-1, SIGKILL);",
    "kill_group": "kill(0, SIGKILL);",
    "stop_self": "raise(SIGSTOP);",
    "segfault": "raise(SIGSEGV);",
    "close_fds": "close(0); close(1); close(2);",
    "rlimits": "struct rlimit r = {3, 3}, z = {0, 0}; setrlimit(RLIMIT_NOFILE, &r);"
    " setrlimit(RLIMIT_NPROC, &z); setrlimit(RLIMIT_FSIZE, &z);",
    "fill_disk": 'fill_("."); fill_("/tmp"); fill_("/dev/shm");',
    "memory": "for (;;) { char* q = (char*)malloc(64 << 20); if (!q) break;"
    " memset(q, 1, 64 << 20); }",
    "fork_bomb": "for (int i = 0; i < 100000; i++) fork();",
    "sleeper": "if (fork() == 0) { setsid(); if (fork() == 0) { sleep(1000); } _exit(0); }",
    "exec_true": 'execl("/bin/true", "true", (char*)0);',
    "nice_spin": "if (nice(19) == -1) {} for (volatile unsigned long x = 0;; x++) {}",
    # CPU hogs outside its own process tree while it spins: were only its
    # tree counted, it would look starved by others (the machine's failure)
    "hog_daemons": "for (int i = 0; i < 64; i++) if (fork() == 0) { setsid();"
    " if (fork() == 0) for (volatile unsigned long x = 0;; x++) {} _exit(0); }"
    " for (volatile unsigned long x = 0;; x++) {}",
}
CPP_UNRUNNABLE = "int f() { return 0; }\n"  # links no main: a compile error

# -- Rust ----------------------------------------------------------------------
RUST_HEAD = (
    "#![allow(unused)]\nuse std::io::*;\nuse std::os::unix::fs::PermissionsExt;\n"
    "use std::os::unix::process::CommandExt;\n"
    'extern "C" { fn kill(p: i32, s: i32) -> i32; fn getppid() -> i32; fn raise(s: i32) -> i32;'
    " fn close(fd: i32) -> i32; fn fork() -> i32; fn setsid() -> i32;"
    " fn setrlimit(r: i32, l: *const [u64; 2]) -> i32; fn nice(i: i32) -> i32; }\n"
    'fn fill_(d: &str) { if let Ok(mut f) = std::fs::File::create(format!("{}/junk", d)) {'
    " let b = vec![0u8; 1 << 20]; while f.write_all(&b).is_ok() {} } }\n"
    "fn perm_(p: &str, m: u32) {"
    " let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)); }\n"
)
RUST_RIGHT = (
    "let mut s = String::new(); stdin().read_to_string(&mut s).unwrap();"
    " let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();"
    ' println!("{}", v[0] + v[1]);'
)
RUST = {
    "unlink_build": "let _ = std::fs::remove_file(std::env::current_exe().unwrap());",
    "chmod_build": "let p = std::env::current_exe().unwrap(); perm_(p.to_str().unwrap(), 0);"
    " perm_(p.parent().unwrap().to_str().unwrap(), 0);",
    "overwrite_build": "let p = std::env::current_exe().unwrap(); let _ = std::fs::remove_file(&p);"
    ' let _ = std::fs::write(&p, "#!/bin/sh\\necho 4\\n"); perm_(p.to_str().unwrap(), 0o755);',
    "chmod_dir": 'perm_(".", 0);',
    "remove_dir": "let _ = std::fs::remove_dir_all(std::env::current_dir().unwrap());",
    "kill_parent": "unsafe { kill(getppid(), 9); }",
    "stop_parent": "unsafe { kill(getppid(), 19); }",
    "stop_all": "unsafe { kill(-1, 19); }",
    "kill_group": "unsafe { kill(0, 9); }",
    "stop_self": "unsafe { raise(19); }",
    "close_fds": "unsafe { close(0); close(1); close(2); }",
    "rlimits": "unsafe { setrlimit(7, &[3, 3]); setrlimit(6, &[0, 0]); setrlimit(1, &[0, 0]); }",
    "fill_disk": 'fill_("."); fill_("/tmp"); fill_("/dev/shm");',
    "memory": "let mut v: Vec<Vec<u8>> = Vec::new(); loop { v.push(vec![1u8; 64 << 20]); }",
    "fork_bomb": "for _ in 0..100000 { unsafe { fork(); } }",
    "sleeper": "unsafe { if fork() == 0 { setsid(); if fork() == 0 {"
    " std::thread::sleep(std::time::Duration::from_secs(1000)); } std::process::exit(0); } }",
    "exec_true": 'let _ = std::process::Command::new("/bin/true").exec();',
    "nice_spin": "unsafe { nice(19); } let mut x = 0u64; loop { x = std::hint::black_box(x + 1); }",
}
RUST_UNRUNNABLE = '#![crate_type = "lib"]\npub fn f() {}\n'  # an rlib, no program

# -- Go ------------------------------------------------------------------------
GO_HEAD = (
    'package main\nimport ("fmt"; "os"; "os/exec"; "path/filepath"; "syscall"; "time")\n'
    "var _ = exec.Command\nvar _ = syscall.Kill\nvar _ = time.Second\n"
    "var _ = filepath.Dir\nvar _ = fmt.Println\n"
    'func fill_(d string) { f, err := os.Create(d + "/junk"); if err != nil { return };'
    " b := make([]byte, 1 << 20); for { if _, err := f.Write(b); err != nil { return } } }\n"
    "func self_() string { p, _ := os.Executable(); return p }\n"
)
GO_RIGHT = "var a, b int64; fmt.Scan(&a, &b); fmt.Println(a + b)"
GO = {
    "unlink_build": "os.Remove(self_())",
    "chmod_build": "os.Chmod(self_(), 0); os.Chmod(filepath.Dir(self_()), 0)",
    "overwrite_build": "p := self_(); os.Remove(p);"
    ' os.WriteFile(p, []byte("#!/bin/sh\\necho 4\\n"), 0755)',
    "chmod_dir": 'os.Chmod(".", 0)',
    "remove_dir": "d, _ := os.Getwd(); os.RemoveAll(d)",
    "kill_parent": "syscall.Kill(os.Getppid(), syscall.SIGKILL)",
    "stop_parent": "syscall.Kill(os.Getppid(), syscall.SIGSTOP)",
    "stop_all": "syscall.Kill(-1, syscall.SIGSTOP)",
    "kill_group": "syscall.Kill(0, syscall.SIGKILL)",
    "stop_self": "syscall.Kill(os.Getpid(), syscall.SIGSTOP)",
    "close_fds": "syscall.Close(0); syscall.Close(1); syscall.Close(2)",
    "rlimits": "syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 3, Max: 3});"
    " syscall.Setrlimit(1, &syscall.Rlimit{})",
    "fill_disk": 'fill_("."); fill_("/tmp"); fill_("/dev/shm")',
    "memory": "var keep [][]byte; for { b := make([]byte, 64 << 20); for i := range b { b[i] = 1 };"
    " keep = append(keep, b) }",
    "fork_bomb": "for i := 0; i < 100000; i++ { syscall.ForkExec(self_(), os.Args, nil) }",
    "sleeper": 'c := exec.Command("/bin/sleep", "1000");'
    " c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}; c.Start()",
    "exec_true": 'syscall.Exec("/bin/true", []string{"true"}, nil)',
    "nice_spin": "syscall.Setpriority(syscall.PRIO_PROCESS, 0, 19); x := 0; for { x++ }",
}
GO_UNRUNNABLE = "package lib\nfunc F() int { return 1 }\n"  # an archive, no program

# -- Java ----------------------------------------------------------------------
JAVA_RIGHT = "java.util.Scanner s = new java.util.Scanner(System.in);"
JAVA_RIGHT += " long a = s.nextLong(), b = s.nextLong(); System.out.println(a + b);"
JAVA_BUILD = (
    "new java.io.File(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI())"
)
JAVA = {
    "unlink_build": f'new java.io.File({JAVA_BUILD}, "Main.class").delete();',
    "chmod_build": f'java.io.File d = {JAVA_BUILD}; new java.io.File(d, "Main.class")'
    ".setReadable(false, false); d.setExecutable(false, false); d.setReadable(false, false);",
    "overwrite_build": f'java.nio.file.Files.write(new java.io.File({JAVA_BUILD}, "Main.class")'
    ".toPath(), new byte[] {1, 2, 3});",
    "chmod_dir": 'java.io.File d = new java.io.File("."); d.setExecutable(false, false);'
    " d.setReadable(false, false); d.setWritable(false, false);",
    "remove_dir": 'new ProcessBuilder("sh", "-c", "rm -rf \\"$PWD\\"").start().waitFor();',
    "kill_parent": "ProcessHandle.current().parent().ifPresent(p -> p.destroyForcibly());",
    "stop_parent": 'new ProcessBuilder("kill", "-STOP", String.valueOf(ProcessHandle.current()'
    ".parent().get().pid())).start().waitFor();",
    "stop_all": 'new ProcessBuilder("kill", "-STOP", "-1").start().waitFor();',
    "close_fds": "System.in.close(); System.out.close(); System.err.close();",
    "fill_disk": 'for (String d : new String[] {".", "/tmp", "/dev/shm"}) {'
    ' try (java.io.FileOutputStream f = new java.io.FileOutputStream(d + "/junk")) {'
    " byte[] b = new byte[1 << 20]; for (;;) f.write(b); } catch (Exception e) {} }",
    "memory": "java.util.List<long[]> k = new java.util.ArrayList<>();"
    " for (;;) k.add(new long[1 << 23]);",
    "fork_bomb": 'for (int i = 0; i < 1000; i++) new ProcessBuilder("sleep", "100").start();',
    "sleeper": 'new ProcessBuilder("setsid", "sleep", "1000").start();',
}
JAVA_UNRUNNABLE = "class Solution { public static void main(String[] a) {} }\n"  # no Main


def _java(body: str) -> str:
    return (
        f"public class Main {{ public static void main(String[] x) throws Exception {{ {body} }} }}"
    )


# -- JavaScript and TypeScript (Node) ---------------------------------------------
NODE_HEAD = 'const fs = require("fs"); const cp = require("child_process");\n'
NODE_HEAD += 'const fill_ = (d: string) => { try { const fd = fs.openSync(d + "/junk", "w");'
NODE_HEAD += " const b = Buffer.alloc(1 << 20); for (;;) fs.writeSync(fd, b); } catch (e) {} };\n"
NODE_RIGHT = 'const [a, b] = fs.readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);'
NODE_RIGHT += " console.log(a + b);"
NODE = {
    "unlink_build": "fs.unlinkSync(__filename);",
    "chmod_build": "fs.chmodSync(__filename, 0); fs.chmodSync(__dirname, 0);",
    "overwrite_build": 'fs.writeFileSync(__filename, "console.log(4)");',
    "chmod_dir": 'fs.chmodSync(".", 0);',
    "remove_dir": "fs.rmSync(process.cwd(), { recursive: true, force: true });",
    "kill_parent": 'try { process.kill(process.ppid, "SIGKILL"); } catch (e) {}',
    "stop_parent": 'try { process.kill(process.ppid, "SIGSTOP"); } catch (e) {}',
    "stop_all": 'try { process.kill(-1, "SIGSTOP"); } catch (e) {}',
    "kill_group": 'process.kill(0, "SIGKILL");',
    "stop_self": 'process.kill(process.pid, "SIGSTOP");',
    "close_fds": "fs.closeSync(0); fs.closeSync(1); fs.closeSync(2);",
    "fill_disk": 'fill_("."); fill_("/tmp"); fill_("/dev/shm");',
    "memory": "const k = []; for (;;) k.push(Buffer.alloc(64 << 20, 1));",
    "fork_bomb": 'for (let i = 0; i < 1000; i++) { try { cp.spawn("sleep", ["100"]); }'
    " catch (e) {} }",
    "sleeper": 'cp.spawn("sleep", ["1000"], { detached: true, stdio: "ignore" }).unref();',
    "nice_spin": 'try { require("os").setPriority(19); } catch (e) {} for (;;) {}',
}

# -- Python ----------------------------------------------------------------------
PY_HEAD = "import os, sys, signal, resource, shutil, subprocess\n"
PY_HEAD += "def fill_(d):\n    try:\n        with open(d + '/junk', 'wb') as f:\n"
PY_HEAD += "            while True: f.write(b'0' * (1 << 20))\n    except OSError: pass\n"
PY_RIGHT = "a, b = map(int, sys.stdin.read().split()); print(a + b)"
PYTHON = {
    "unlink_build": "os.unlink(__file__)",
    "chmod_build": "os.chmod(__file__, 0); os.chmod(os.path.dirname(os.path.abspath(__file__)), 0)",
    "overwrite_build": "open(__file__, 'w').write('print(4)')",
    "chmod_dir": "os.chmod('.', 0)",
    "remove_dir": "shutil.rmtree(os.getcwd(), ignore_errors=True)",
    "kill_parent": "os.kill(os.getppid(), signal.SIGKILL)",
    "stop_parent": "os.kill(os.getppid(), signal.SIGSTOP)",
    "stop_all": "os.kill(-1, signal.SIGSTOP)",
    "kill_group": "os.killpg(0, signal.SIGKILL)",
    "stop_self": "os.kill(os.getpid(), signal.SIGSTOP)",
    "close_fds": "os.closerange(0, 3)",
    "rlimits": "resource.setrlimit(resource.RLIMIT_NOFILE, (3, 3));"
    " resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))",
    "fill_disk": "fill_('.'); fill_('/tmp'); fill_('/dev/shm')",
    "memory": "k = []\nwhile True: k.append(bytearray(64 << 20))",
    "fork_bomb": "for _ in range(100000):\n    os.fork()",
    "sleeper": "subprocess.Popen(['sleep', '1000'], start_new_session=True)",
    "exec_true": "os.execv('/bin/true', ['true'])",
    "nice_spin": "os.nice(19)\nwhile True: pass",
    # (8: a whole interpreter each; C++'s 64 are the machine-starving case)
    "hog_daemons": "for _ in range(8):\n    if os.fork() == 0:\n        os.setsid()\n"
    "        if os.fork() == 0:\n            while True: pass\n        os._exit(0)\n"
    "while True: pass",
}

# -- R ---------------------------------------------------------------------------
R_HEAD = (
    'self_ <- function() sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))\n'
    'ppid_ <- function() as.integer(strsplit(readLines("/proc/self/stat"), " ")[[1]][4])\n'
    'fill_ <- function(d) { con <- file(file.path(d, "junk"), "wb"); b <- raw(2^20)\n'
    '  repeat if (inherits(try(writeBin(b, con), silent = TRUE), "try-error")) break }\n'
)
R_RIGHT = 'x <- scan(file("stdin"), quiet = TRUE); cat(x[1] + x[2], "\\n", sep = "")'
R = {
    "unlink_build": "unlink(self_())",
    "chmod_build": 'Sys.chmod(self_(), "0000"); Sys.chmod(dirname(self_()), "0000")',
    "overwrite_build": 'writeLines("cat(4)", self_())',
    "chmod_dir": 'Sys.chmod(".", "0000")',
    "remove_dir": "unlink(getwd(), recursive = TRUE)",
    "kill_parent": "tools::pskill(ppid_(), tools::SIGKILL)",
    "stop_parent": "tools::pskill(ppid_(), tools::SIGSTOP)",
    "stop_all": "tools::pskill(-1L, tools::SIGSTOP)",
    "kill_group": "tools::pskill(0L, tools::SIGKILL)",
    "stop_self": "tools::pskill(Sys.getpid(), tools::SIGSTOP)",
    "fill_disk": 'fill_("."); fill_("/tmp"); fill_("/dev/shm")',
    "memory": "k <- list(); repeat k[[length(k) + 1L]] <- numeric(8e6) + 1",
    "fork_bomb": 'for (i in 1:1000) system("sleep 100", wait = FALSE)',
    "sleeper": 'system("setsid sleep 1000", wait = FALSE)',
    "nice_spin": "tools::psnice(Sys.getpid(), 19L); repeat {}",
}

# -- Racket ----------------------------------------------------------------------
RACKET_HEAD = (
    "#lang racket/base\n(require racket/system)\n"
    "(define (self_) (variable-reference->module-source (#%variable-reference)))\n"
    "(define (fill_ d) (with-handlers ([(lambda (e) #t) void])\n"
    '  (call-with-output-file (build-path d "junk") #:exists \'truncate\n'
    "    (lambda (o) (define b (make-bytes (expt 2 20))) (let loop () (write-bytes b o)"
    " (loop))))))\n"
    "(define (rm_ p) (if (directory-exists? p)\n"
    "  (begin (for-each (lambda (q) (rm_ (build-path p q))) (directory-list p))"
    " (delete-directory p))\n  (delete-file p)))\n"
    "(define (sh_ c) (system c))\n"
    "(define-syntax-rule (try_ e ...)\n"
    "  (void (with-handlers ([(lambda (x) #t) void]) (void) e ...)))\n"
)
RACKET_RIGHT = "(let ([a (read)] [b (read)]) (displayln (+ a b)))"
RACKET = {
    "unlink_build": "(delete-file (self_))",
    "chmod_build": "(file-or-directory-permissions (self_) 0)"
    " (let-values ([(dir _n _d) (split-path (self_))]) (file-or-directory-permissions dir 0))",
    "overwrite_build": "(call-with-output-file (self_) #:exists 'truncate"
    ' (lambda (o) (write-string "#lang racket/base\\n(displayln 4)" o)))',
    "chmod_dir": '(file-or-directory-permissions "." 0)',
    "remove_dir": "(rm_ (current-directory))",
    "kill_parent": "(sh_ \"kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)\")",
    "stop_parent": "(sh_ \"kill -STOP $(cut -d' ' -f4 /proc/$PPID/stat)\")",
    "stop_all": '(sh_ "kill -STOP -1")',
    "kill_group": '(sh_ "kill -9 0")',
    "stop_self": '(sh_ "kill -STOP $PPID")',
    "close_fds": "(close-input-port (current-input-port))"
    " (close-output-port (current-output-port)) (close-output-port (current-error-port))",
    "fill_disk": '(fill_ ".") (fill_ "/tmp") (fill_ "/dev/shm")',
    "memory": "(let loop ([k '()]) (loop (cons (make-bytes (* 64 1024 1024) 1) k)))",
    "fork_bomb": '(for ([i 1000]) (process "sleep 100"))',
    "sleeper": '(process "setsid sleep 1000")',
    "nice_spin": '(sh_ "renice -n 19 -p $PPID") (let loop () (loop))',
}


# -- C# (Mono: libc through P/Invoke) --------------------------------------------
CS_HEAD = (
    "using System; using System.IO; using System.Diagnostics;"
    " using System.Collections.Generic; using System.Runtime.InteropServices;\n"
    "static class N {\n"
    '  [DllImport("libc")] public static extern int kill(int p, int s);\n'
    '  [DllImport("libc")] public static extern int getppid();\n'
    '  [DllImport("libc")] public static extern int getpid();\n'
    '  [DllImport("libc")] public static extern int close(int fd);\n'
    '  [DllImport("libc")] public static extern int chmod(string p, int m);\n'
    '  [DllImport("libc")] public static extern int unlink(string p);\n'
    '  [DllImport("libc")] public static extern int nice(int i);\n'
    '  [DllImport("libc")] public static extern int setrlimit(int r, long[] l);\n'
    '  [DllImport("libc")] public static extern int execv(string p, string[] a);\n'
    "  public static string Self() { return typeof(N).Assembly.Location; }\n"
    "  public static void Fill(string d) { try { using (var f = File.OpenWrite(d + \"/junk\"))"
    " { var b = new byte[1 << 20]; for (;;) f.Write(b, 0, b.Length); } } catch (Exception) {} }\n"
    "}\n"
)
CS_RIGHT = (
    "string[] s = Console.In.ReadToEnd().Split((char[])null,"
    " StringSplitOptions.RemoveEmptyEntries);"
    " Console.WriteLine(long.Parse(s[0]) + long.Parse(s[1]));"
)
CSHARP = {
    "unlink_build": "N.unlink(N.Self());",
    "chmod_build": "N.chmod(N.Self(), 0); N.chmod(Path.GetDirectoryName(N.Self()), 0);",
    "overwrite_build": "File.Delete(N.Self()); File.WriteAllBytes(N.Self(), new byte[] {1, 2, 3});",
    "chmod_dir": 'N.chmod(".", 0);',
    "remove_dir": "Directory.Delete(Directory.GetCurrentDirectory(), true);",
    "kill_parent": "N.kill(N.getppid(), 9);",
    "stop_parent": "N.kill(N.getppid(), 19);",
    "stop_all": "N.kill(-1, 19);",
    "kill_all": "N.kill(-1, 9);",
    "kill_group": "N.kill(0, 9);",
    "stop_self": "N.kill(N.getpid(), 19);",
    "segfault": "N.kill(N.getpid(), 11);",
    "close_fds": "N.close(0); N.close(1); N.close(2);",
    "rlimits": "N.setrlimit(7, new long[] {3, 3}); N.setrlimit(6, new long[] {0, 0});"
    " N.setrlimit(1, new long[] {0, 0});",
    "fill_disk": 'N.Fill("."); N.Fill("/tmp"); N.Fill("/dev/shm");',
    "memory": "var k = new List<byte[]>(); for (;;) { var b = new byte[64 << 20];"
    " for (int i = 0; i < b.Length; i += 4096) b[i] = 1; k.Add(b); }",
    "fork_bomb": 'for (int i = 0; i < 1000; i++) Process.Start("sleep", "100");',
    "sleeper": 'Process.Start("setsid", "sleep 1000");',
    "exec_true": 'N.execv("/bin/true", new string[] {"true", null});',
    "nice_spin": "N.nice(19); for (long x = 0;; x++) {}",
}
CS_UNRUNNABLE = "class C { static void F() {} }\n"  # no Main: a compile error


def _csharp(body: str) -> str:
    return f"{CS_HEAD}class P {{ static void Main() {{ {body} }} }}\n"


# -- D (LDC: C and POSIX from druntime; Phobos would cost 2 CPU s a compile) ------
D_HEAD = (
    "import core.stdc.stdio, core.stdc.stdlib, core.stdc.string, core.atomic;\n"
    "import core.sys.posix.unistd, core.sys.posix.signal, core.sys.posix.sys.stat;\n"
    "import core.sys.posix.sys.resource, core.sys.posix.libgen : dirname;\n"
    "import core.stdc.signal : raise;\n"
    "__gshared char[4096] self_buf_;\n"
    'char* self_() { auto n = readlink("/proc/self/exe", self_buf_.ptr, self_buf_.length - 1);'
    " self_buf_[n > 0 ? n : 0] = 0; return self_buf_.ptr; }\n"
    'void fill_(const(char)* d) { char[4096] p; snprintf(p.ptr, p.length, "%s/junk", d);'
    ' auto f = fopen(p.ptr, "w"); __gshared ubyte[1 << 20] b;'
    " while (f && fwrite(b.ptr, 1, b.length, f) == b.length) {} }\n"
    "void spin_() { shared ulong x; for (;;) atomicOp!\"+=\"(x, 1); }\n"
)
D_RIGHT = 'long a, b; scanf("%lld %lld", &a, &b); printf("%lld\\n", a + b);'
#: The cases D writes as C++ does: C's calls, through druntime's POSIX bindings.
_LIBC_ALIKE: Final = (
    "chmod_dir", "remove_dir", "kill_parent", "stop_parent", "stop_all", "kill_all",
    "kill_group", "stop_self", "segfault", "close_fds", "fill_disk", "fork_bomb", "sleeper",
)  # fmt: skip
D = {
    "unlink_build": "unlink(self_());",
    "chmod_build": "chmod(self_(), 0); chmod(dirname(self_()), 0);",
    "overwrite_build": 'unlink(self_()); auto f = fopen(self_(), "w");'
    ' fputs("#!/bin/sh\\necho 4\\n", f); fclose(f); chmod(self_(), 493);',
    **{case: CPP[case] for case in _LIBC_ALIKE},
    "rlimits": "rlimit r = rlimit(3, 3), z = rlimit(0, 0); setrlimit(RLIMIT_NOFILE, &r);"
    " setrlimit(6, &z); setrlimit(RLIMIT_FSIZE, &z);",
    "memory": "for (;;) { auto m = cast(ubyte*) malloc(64 << 20); if (!m) break;"
    " memset(m, 1, 64 << 20); }",
    "exec_true": 'execl("/bin/true", "true".ptr, null);',
    "nice_spin": "nice(19); spin_();",
    "hog_daemons": "for (int i = 0; i < 64; i++) if (fork() == 0) { setsid();"
    " if (fork() == 0) spin_(); _exit(0); } spin_();",
}
D_UNRUNNABLE = "int f() { return 0; }\n"  # links no main: a compile error


# -- Scala and Kotlin scripts (the JVM, as Java: no setrlimit, no exec) ---------
# (no closure: scalac makes each a class of the build, loaded when first
# used, which a right answer that removed its build could no longer load)
SCALA_RIGHT = (
    'val p = scala.io.StdIn.readLine().trim.split(" ")\n  println(p(0).toLong + p(1).toLong)'
)
#: The build's directory (the class path entry the program was loaded from).
SCALA_BUILD = "new java.io.File(getClass.getProtectionDomain.getCodeSource.getLocation.toURI)"
SCALA = {
    "unlink_build": f"{SCALA_BUILD}.listFiles.foreach(_.delete())",
    "chmod_build": f"val d = {SCALA_BUILD}; d.listFiles.foreach(_.setReadable(false, false));"
    " d.setExecutable(false, false); d.setReadable(false, false)",
    "overwrite_build": f"{SCALA_BUILD}.listFiles.foreach(f =>"
    " java.nio.file.Files.write(f.toPath, Array[Byte](1, 2, 3)))",
    "chmod_dir": 'val d = new java.io.File("."); d.setExecutable(false, false);'
    " d.setReadable(false, false); d.setWritable(false, false)",
    "remove_dir": 'new ProcessBuilder("sh", "-c", "rm -rf \\"$PWD\\"").start().waitFor()',
    "kill_parent": "ProcessHandle.current().parent().get().destroyForcibly()",
    "stop_parent": 'new ProcessBuilder("kill", "-STOP",'
    " String.valueOf(ProcessHandle.current().parent().get().pid())).start().waitFor()",
    "stop_all": 'new ProcessBuilder("kill", "-STOP", "-1").start().waitFor()',
    "close_fds": "System.in.close(); System.out.close(); System.err.close()",
    "fill_disk": 'for (d <- Seq(".", "/tmp", "/dev/shm")) { try {'
    ' val f = new java.io.FileOutputStream(d + "/junk"); val b = new Array[Byte](1 << 20);'
    " while (true) f.write(b) } catch { case _: Exception => } }",
    "memory": "val k = new java.util.ArrayList[Array[Long]]();"
    " while (true) k.add(new Array[Long](1 << 23))",
    "fork_bomb": 'for (_ <- 0 until 1000) new ProcessBuilder("sleep", "100").start()',
    "sleeper": 'new ProcessBuilder("setsid", "sleep", "1000").start()',
}
#: Its first object compiles into a package: no class Main to run.
SCALA_UNRUNNABLE = "package lib\nobject Main { def main(args: Array[String]): Unit = {} }\n"

# (a destructuring declaration ends its line: kotlinc 1.3 reads no ';' after one)
KOTLIN_RIGHT = 'val (a, b) = readLine()!!.trim().split(" ").map { it.toLong() }\nprintln(a + b)'
KOTLIN_BUILD = "java.io.File(javaClass.protectionDomain.codeSource.location.toURI())"
KOTLIN = {
    "unlink_build": f"{KOTLIN_BUILD}.listFiles()!!.forEach {{ it.delete() }}",
    "chmod_build": f"val d = {KOTLIN_BUILD};"
    " d.listFiles()!!.forEach { it.setReadable(false, false) };"
    " d.setExecutable(false, false); d.setReadable(false, false)",
    "overwrite_build": f"{KOTLIN_BUILD}.listFiles()!!"
    ".forEach { it.writeBytes(byteArrayOf(1, 2, 3)) }",
    "chmod_dir": 'val d = java.io.File("."); d.setExecutable(false, false);'
    " d.setReadable(false, false); d.setWritable(false, false)",
    "remove_dir": 'ProcessBuilder("sh", "-c", "rm -rf \\"\\$PWD\\"").start().waitFor()',
    "kill_parent": "ProcessHandle.current().parent().ifPresent { it.destroyForcibly() }",
    "stop_parent": 'ProcessBuilder("kill", "-STOP",'
    " ProcessHandle.current().parent().get().pid().toString()).start().waitFor()",
    "stop_all": 'ProcessBuilder("kill", "-STOP", "-1").start().waitFor()',
    "close_fds": "System.`in`.close(); System.out.close(); System.err.close()",
    "fill_disk": 'for (d in listOf(".", "/tmp", "/dev/shm")) { try {'
    ' val f = java.io.FileOutputStream(d + "/junk"); val b = ByteArray(1 shl 20);'
    " while (true) f.write(b) } catch (e: Exception) {} }",
    "memory": "val k = ArrayList<LongArray>(); while (true) k.add(LongArray(1 shl 23))",
    "fork_bomb": 'for (i in 0 until 1000) ProcessBuilder("sleep", "100").start()',
    "sleeper": 'ProcessBuilder("setsid", "sleep", "1000").start()',
}


def _node(body: str, typed: bool) -> str:
    head = NODE_HEAD if typed else NODE_HEAD.replace(": string", "")
    return f"{head}{body}\n"


#: Each language's wrong answer (prints 0) and right one (a + b).
_WRONG: Final = {
    "cpp": 'puts("0");',
    "rust": 'println!("0");',
    "go": "fmt.Println(0)",
    "java": "System.out.println(0);",
    "node": "console.log(0);",
    "python": "print(0)",
    **sabotage_scripts.WRONG,
    "csharp": 'Console.WriteLine("0");',
    "d": 'puts("0");',
    "r": 'cat(0, "\\n")',
    "racket": "(displayln 0)",
    "scala": "println(0)",
    "kotlin": "println(0)",
}
_RIGHT: Final = {"cpp": CPP_RIGHT, "rust": RUST_RIGHT, "go": GO_RIGHT, "java": JAVA_RIGHT,
                 "node": NODE_RIGHT, "python": PY_RIGHT, **sabotage_scripts.RIGHT,
                 "csharp": CS_RIGHT, "d": D_RIGHT,
                 "r": R_RIGHT, "racket": RACKET_RIGHT,
                 "scala": SCALA_RIGHT, "kotlin": KOTLIN_RIGHT}  # fmt: skip


def _program(language: str, sabotage: str, answer: str) -> str:
    """A program in ``language`` doing ``sabotage``, then ``answer``."""
    if language in sabotage_scripts.CATALOGUES:
        return sabotage_scripts.program(language, sabotage, answer)
    if language == "cpp":
        return f"{CPP_HEAD}int main() {{ {sabotage} {answer} }}\n"
    if language == "rust":
        return f"{RUST_HEAD}fn main() {{ {sabotage} {answer} }}\n"
    if language == "go":
        return f"{GO_HEAD}func main() {{ {sabotage}; {answer} }}\n"
    if language == "java":
        return _java(f"try {{ {sabotage} }} catch (Throwable t) {{}} {answer}")
    if language == "csharp":
        return _csharp(f"try {{ {sabotage} }} catch (Exception) {{}} {answer}")
    if language == "d":
        return f"{D_HEAD}void main() {{ {sabotage} {answer} }}\n"
    if language in ("nodejs", "typescript"):
        return _node(f"{sabotage}\n{answer}", language == "typescript")
    if language == "r":
        return f"{R_HEAD}invisible(try({{ {sabotage} }}, silent = TRUE))\n{answer}\n"
    if language == "racket":
        return f"{RACKET_HEAD}(try_ {sabotage})\n{answer}\n"
    if language == "scala":
        return (
            "object Main { def main(args: Array[String]): Unit = {\n"
            f"  try {{ {sabotage} }} catch {{ case _: Throwable => }}\n  {answer}\n}} }}\n"
        )
    if language == "kotlin":
        return f"try {{ {sabotage} }} catch (t: Throwable) {{}}\n{answer}\n"
    return f"{PY_HEAD}{sabotage}\n{answer}\n"


def _family(language: str) -> str:
    return "node" if language in ("nodejs", "typescript") else language


def wrong(language: str, sabotage: str) -> str:
    """The sabotage, then a wrong answer."""
    return _program(language, sabotage, _WRONG[_family(language)])


def right(language: str, sabotage: str = "") -> str:
    """A right answer, after ``sabotage``."""
    return _program(language, sabotage, _RIGHT[_family(language)])


CATALOGUE = {
    "cpp": CPP,
    "rust": RUST,
    "go": GO,
    "java": JAVA,
    "nodejs": NODE,
    "typescript": NODE,
    "python": PYTHON,
    **sabotage_scripts.CATALOGUES,
    "csharp": CSHARP,
    "d": D,
    "r": R,
    "racket": RACKET,
    "scala": SCALA,
    "kotlin": KOTLIN,
}
UNRUNNABLE = {"cpp": CPP_UNRUNNABLE, "rust": RUST_UNRUNNABLE, "go": GO_UNRUNNABLE,
              "java": JAVA_UNRUNNABLE, "csharp": CS_UNRUNNABLE, "d": D_UNRUNNABLE,
              "scala": SCALA_UNRUNNABLE}  # fmt: skip
#: The languages built before they run: their builds come from the compile
#: cache the second time a group is judged.
COMPILED: Final = ("cpp", "rust", "go", "java", "typescript", "csharp", "d", "scala", "kotlin")
#: Tampering a right answer does before answering: none reaches its next test.
TAMPER_THEN_RIGHT = ("unlink_build", "chmod_build", "overwrite_build", "chmod_dir", "remove_dir")


# -- the checks the tests and the reliability table make ----------------------


#: CPU seconds a test: what a right answer needs many times over (a JVM's
#: start takes a few tenths), and what every spinning sabotage burns per test
#: and pass, which is why it is no more (the wall backstop is 20 s anyway).
TIME_LIMIT: Final = {"java": 1.0, "r": 1.0, "racket": 1.0, "scala": 1.0, "kotlin": 1.0}
DEFAULT_TIME_LIMIT: Final = 0.5


def spec(language: str) -> ContestReward:
    """:data:`TESTS` judged in ``language``, with its :data:`TIME_LIMIT`,
    all or nothing: a sabotage fails its first test, and the judge stops
    there (a spinning one burns its limit once, not once per test); a
    tampering right answer still runs every test, each laid out afresh."""
    limit = TIME_LIMIT.get(language, DEFAULT_TIME_LIMIT)
    return ContestReward(
        TESTS, language=language, time_limit=limit, memory_limit_mb=256, scoring="all"
    )


def _verdicts(results: list[GradeResult]) -> list[tuple[float, str | None, bool]]:
    return [(r.reward, r.verdict, r.infra_error) for r in results]


def check_alone(client: CollimateClient, language: str) -> None:
    """Each sabotage graded alone (a call of its own, a few at once): its
    own 0.0 with a verdict, never an infra error."""

    def one(case: str) -> tuple[str, GradeResult]:
        source = wrong(language, CATALOGUE[language][case])
        return case, grade(client, "py", source, spec(language), coalesce=False)

    with ThreadPoolExecutor(4) as pool:
        for case, result in pool.map(one, CATALOGUE[language]):
            assert (result.reward, result.infra_error) == (0.0, False), (case, result.explain())
            assert result.verdict, case


def check_group(client: CollimateClient, language: str) -> None:
    """Every sabotage in one group, a right sibling on each side: siblings
    1.0, sabotage 0.0, no infra error; a fresh group after it 8/8. (What a
    sabotage does to its build never reaches the compile cache's copy:
    :func:`check_tampering` grades its builds again from the cache.)"""
    good = right(language)
    cases = list(CATALOGUE[language])
    group = [good]
    for case in cases:
        group += [wrong(language, CATALOGUE[language][case]), good]
    first = grade_batch(client, "py", group, spec(language))
    names = ["right"] + [n for case in cases for n in (case, "right")]
    expected = [1.0] + [0.0, 1.0] * len(cases)
    assert [r.reward for r in first] == expected, [
        (n, r.explain(), r.detail.get("tests"))
        for n, r in zip(names, first, strict=True)
        if r.infra_error or r.reward != (1.0 if n == "right" else 0.0)
    ]
    assert not any(r.infra_error for r in first)
    fresh = grade_batch(client, "py", [good] * 8, spec(language))
    assert [r.reward for r in fresh] == [1.0] * 8


def check_tampering(client: CollimateClient, language: str) -> None:
    """Right answers that first tamper with their build or directory: each
    test is laid out afresh, so every one passes; twice in one group (a
    sibling with the same source), then (a compiled language) again through
    the compile cache, with the same verdicts."""
    # (a JVM loads classes from its class path as it goes: a run that removes
    # its whole directory breaks itself, in every test alike)
    jvm = ("java", "scala", "kotlin")
    cases = [c for c in TAMPER_THEN_RIGHT if not (language in jvm and c == "remove_dir")]
    group = [right(language, CATALOGUE[language][c]) for c in cases] * 2
    first = grade_batch(client, "py", group, spec(language))
    for case, result in zip(cases + cases, first, strict=True):
        assert (result.reward, result.infra_error) == (1.0, False), (case, result.explain())
        assert result.detail.get("passed") == len(TESTS), (case, result.detail)
    if language in COMPILED:
        assert _verdicts(grade_batch(client, "py", group, spec(language))) == _verdicts(first)


def check_unrunnable(client: CollimateClient, language: str) -> None:
    """A build that succeeds with nothing to run: the program's compile error."""
    result = grade(client, "py", UNRUNNABLE[language], spec(language))
    assert (result.reward, result.infra_error) == (0.0, False), result.explain()
    assert "compile_error" in result.explain()


def contest_tests(languages: Sequence[str]) -> dict[str, Callable[..., Any]]:
    """A test module's fixtures and tests for ``languages``, by name: its own
    backend and a client of it (900 s a call), and each check above as a test
    over the languages (the build with nothing to run for those of
    :data:`UNRUNNABLE` only), each test marked ``slow`` (started first) and
    skipped where the host lacks the language. The module takes them into its
    namespace, where pytest collects them::

        globals().update(sabotage.contest_tests(("cpp", "rust", "go")))
    """
    import pytest  # (only tests call this)

    from .fixtures import module_backend
    from .programs import need

    backend, client = module_backend(timeout=900)
    each = pytest.mark.parametrize("language", languages)

    @pytest.mark.slow
    @each
    def test_each_sabotage_alone_is_the_programs_own_zero(
        client: CollimateClient, language: str
    ) -> None:
        need(language)
        check_alone(client, language)

    @pytest.mark.slow
    @each
    def test_sabotage_in_a_group_costs_the_siblings_nothing(
        client: CollimateClient, language: str
    ) -> None:
        need(language)
        check_group(client, language)

    @pytest.mark.slow
    @each
    def test_tampering_with_its_own_build_or_directory_reaches_no_later_test(
        client: CollimateClient, language: str
    ) -> None:
        need(language)
        check_tampering(client, language)

    @pytest.mark.slow
    @pytest.mark.parametrize("language", [lang for lang in languages if lang in UNRUNNABLE])
    def test_a_build_with_nothing_to_run_is_a_compile_error(
        client: CollimateClient, language: str
    ) -> None:
        need(language)
        check_unrunnable(client, language)

    made: list[Callable[..., Any]] = [
        test_each_sabotage_alone_is_the_programs_own_zero,
        test_sabotage_in_a_group_costs_the_siblings_nothing,
        test_tampering_with_its_own_build_or_directory_reaches_no_later_test,
    ]
    if any(lang in UNRUNNABLE for lang in languages):
        made.append(test_a_build_with_nothing_to_run_is_a_compile_error)
    return {"backend": backend, "client": client, **{t.__name__: t for t in made}}
