"""A candidate and its dataset's test program, put together so that only a
program whose tests ran to their end passes.

MultiPL-E, HumanEval-X and MBXP judge a program as ``prompt + completion +
tests`` run once: it passes when it exits 0. Taken literally, a candidate
that calls ``exit(0)`` before the first test passes, and so does one that
redefines what the tests call (a C++ macro ``assert``, a Rust ``vec!``, a
Go ``const true = false``, a JavaScript ``JSON``), or overloads the
equality they compare with. Here:

* **The end of the tests is proven.** Each run's stdin is a fresh random
  token. The harness reads it before any of the candidate's code runs,
  puts ``/dev/null`` in its place and deletes the file it came from; it
  prints the token only when the tests' ``main`` returned normally (a C++
  or Rust guard destroyed at the end of ``main``, a Java launcher that
  calls the tests' ``main``, a Go ``TestMain`` or deferred call, the last
  statement of a JavaScript program). A run passes when it exits 0 *and*
  its output ends with that token; an early exit, a forged "OK" or a
  stalled run does not.
* **The tests are out of the candidate's reach.** C++ tests are compiled
  as a translation unit of their own, from the prompt's declarations
  (``-Wl,--allow-multiple-definition``: the tests' own definitions win),
  so no macro, overload or helper of the candidate reaches them. In the
  other languages a candidate that declares, at its top level, a name the
  tests use (and neither the prompt nor the tests declare) is judged
  wrong without running. JavaScript tests run in strict mode (a function
  cannot see its strict caller's source), the globals and prototypes they
  use are frozen and the program's file is deleted before the candidate
  runs; a Java class of the candidate that overrides ``equals`` of a JDK
  class or interface is refused by the launcher.
* **Names of the harness are secret.** They are derived from a key made at
  server start and the program, so the same program keeps its compiled
  form (the compile cache) while no candidate can name them.

What stays open, by the nature of a program that shares its process with
its tests: a candidate written against this harness that reads its own
process's memory, or (C++) runs code before the program's first
initializer (an IFUNC resolver), could find the token. No model
stumbles on that by chance; the tests of ``test_grading_program_hacks``
show the generic attacks fail in every language.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from ..rewards.appended_tests import without_trailing_comments
from .go_cache import GO_LIBRARIES
from .toolchains import Toolchain, node_module_roots

__all__ = ["Assembly", "ProgramRejected", "assemble", "new_token", "run_passed"]

#: The key the harness's names are derived from (fresh at every server start).
_KEY: Final = os.urandom(32)
#: Libraries of the datasets' tests, where Debian puts them.
JAVATUPLES_JAR: Final = "/usr/share/java/javatuples.jar"


class ProgramRejected(Exception):
    """The candidate is judged wrong without running (it redefines a name
    its tests use, or is not a program its language compiles); the message
    says why, ``verdict`` how it is judged."""

    def __init__(self, message: str, verdict: str = "wrong_answer") -> None:
        super().__init__(message)
        self.verdict = verdict


class ProgramUnusable(Exception):
    """The tests are not a test program this harness can run (no ``main``
    to guard): the request's fault, not the candidate's."""


@dataclass(frozen=True)
class Assembly:
    """What to compile and run for one candidate."""

    source: str
    files: dict[str, str]  # name -> base64, written beside the source
    toolchain: Toolchain


def new_token() -> str:
    """A run's end-of-tests token (its stdin)."""
    return os.urandom(16).hex()


def run_passed(stdout: bytes, token: str) -> tuple[bool, bytes]:
    """Whether the output ends with ``token`` on a line of its own, and the
    output without it (what is shown of the run)."""
    body = stdout.rstrip(b"\n")
    mark = token.encode()
    if body == mark or body.endswith(b"\n" + mark):
        return True, body[: -len(mark)].rstrip(b"\n") + b"\n"
    return False, stdout


def _tag(*parts: str) -> str:
    digest = hmac.new(_KEY, "\0".join(parts).encode("utf-8", "surrogatepass"), hashlib.sha256)
    return "Collimate" + digest.hexdigest()[:20]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8", "surrogatepass")).decode()


# -- names a candidate declares and tests use -----------------------------------

_COMMENTS: Final = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_STRINGS: Final = re.compile(r'"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`')
_CHARS: Final = re.compile(r"'(?:\\[^'\n]{1,10}|[^'\\\n])'")
_JS_STRINGS: Final = re.compile(r"'(?:\\.|[^'\\\n])*'")
_IDENT: Final = re.compile(r"[A-Za-z_$][\w$]*")

_DECLARES: Final = {
    "rust": re.compile(
        r"\b(?:struct|enum|union|trait|type|mod|fn|const|static|macro_rules\s*!)\s+"
        r"(?:mut\s+)?([A-Za-z_]\w*)|\bas\s+([A-Za-z_]\w*)\s*[;,}]"
    ),
    "go": re.compile(r"\b(?:func|type|var|const)\s+([A-Za-z_]\w*)"),
    "java": re.compile(r"\b(?:class|interface|enum|record)\s+([A-Za-z_]\w*)"),
    "javascript": re.compile(r"\b(?:function\s*\*?|class|var|let|const)\s*([A-Za-z_$][\w$]*)"),
    "typescript": re.compile(
        r"\b(?:function\s*\*?|class|var|let|const|type|interface|enum|namespace)\s*"
        r"([A-Za-z_$][\w$]*)"
    ),
}
#: Go's grouped declarations: ``var ( a = 1; b = 2 )``.
_GO_GROUP: Final = re.compile(r"\b(?:var|const|type)\s*\(([^()]*)\)")


def _code_only(text: str, language: str) -> str:
    """``text`` with comments and string / character literals blanked
    (their words are not names); newlines and braces of code kept."""
    text = _COMMENTS.sub(" ", text)
    text = _STRINGS.sub('""', text)
    chars = _JS_STRINGS if language in ("javascript", "typescript") else _CHARS
    return chars.sub("''", text)


def _top_level(code: str, start: int) -> str:
    """The text of ``code`` from ``start`` that sits at brace depth 0 (the
    depth counted from the beginning of ``code``)."""
    depth, out = 0, []
    for i, ch in enumerate(code):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif depth == 0 and i >= start:
            out.append(ch)
            continue
        if i >= start:
            out.append(" " if depth else ch)
    return "".join(out)


def _declared(code: str, language: str) -> set[str]:
    names: set[str] = set()
    for m in _DECLARES[language].finditer(code):
        names.update(g for g in m.groups() if g)
    if language == "go":
        for group in _GO_GROUP.finditer(code):
            for line in group.group(1).splitlines():
                first = _IDENT.match(line.strip())
                if first:
                    names.add(first.group())
    return names


def shadowed_names(language: str, candidate: str, tests: str, prompt: str | None) -> list[str]:
    """Names the candidate declares at its top level (past the prompt) that
    the tests use and neither the prompt nor the tests declare."""
    if language not in _DECLARES:
        return []
    code = _code_only(candidate, language)
    start = 0
    if prompt and candidate.startswith(prompt):
        start = len(_code_only(prompt, language))
    if language == "java":  # a nested class shadows as well as a top-level one
        own = _declared(code[start:], language)
    else:
        own = _declared(_top_level(code, start), language)
    tests_code = _code_only(tests, language)
    used = set(_IDENT.findall(tests_code))
    theirs = _declared(tests_code, language)
    if prompt:
        theirs |= _declared(_code_only(prompt, language), language)
    return sorted((own & used) - theirs)


# -- per language ---------------------------------------------------------------

_CPP_MAIN: Final = re.compile(r"\bint\s+main\s*\([^)]*\)\s*\{")
_RUST_MAIN: Final = re.compile(r"\bfn\s+main\s*\(\s*\)\s*(?:->[^{]*)?\{")
_GO_MAIN: Final = re.compile(r"\bfunc\s+main\s*\(\s*\)\s*\{")
_GO_TEST: Final = re.compile(r"\bfunc\s+Test\w*\s*\(\s*\w+\s+\*\s*testing\.T\s*\)")
_GO_PACKAGE: Final = re.compile(r"^\s*package\s+\w+[^\n]*\n", re.MULTILINE)
_GO_IMPORTS: Final = re.compile(
    r'(?:\s*import\s*(?:\([^)]*\)|[\w.]*\s*"[^"]*")\s*;?)+', re.MULTILINE
)
_JAVA_PUBLIC_CLASS: Final = re.compile(
    r"^public\s+((?:final\s+|abstract\s+)*(?:class|interface|enum|record)\s)", re.M
)
_JAVA_CLASS: Final = re.compile(r"\b(?:class|interface|enum|record)\s+([A-Za-z_]\w*)")

# Raw system calls, so a candidate's own ``read`` / ``dup2`` (symbols it
# may define, interposing libc's) never see the token.
_CPP_SYSCALLS: Final = r"""
#if defined(__x86_64__)
static long {T}_sys(long n, long a, long b, long c) {
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}
enum { {T}_READ = 0, {T}_WRITE = 1, {T}_OPEN = 2, {T}_DUP2 = 33, {T}_UNLINK = 87 };
#elif defined(__aarch64__)
static long {T}_sys(long n, long a, long b, long c) {
  register long x8 __asm__("x8") = n; register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b; register long x2 __asm__("x2") = c;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
  return x0;
}
enum { {T}_READ = 63, {T}_WRITE = 64, {T}_OPENAT = 56, {T}_DUP3 = 24, {T}_UNLINKAT = 35 };
#else
#error "the program harness knows x86_64 and aarch64"
#endif
"""

_CPP_HARNESS: Final = r"""
#include <cstdio>
#include <iostream>
namespace {
__SYSCALLS__
char {T}_token[128];
long {T}_size = 0;
void {T}_begin(int, char**, char**) {
  long got;
  while ({T}_size < 127 &&
         (got = {T}_sys({T}_READ, 0, (long)({T}_token + {T}_size), 127 - {T}_size)) > 0)
    {T}_size += got;
#if defined(__x86_64__)
  long null = {T}_sys({T}_OPEN, (long)"/dev/null", 0, 0);
  if (null >= 0) {T}_sys({T}_DUP2, null, 0, 0);
  {T}_sys({T}_UNLINK, (long)".run.in", 0, 0);
#else
  long null = {T}_sys({T}_OPENAT, -100, (long)"/dev/null", 0);
  if (null >= 0) {T}_sys({T}_DUP3, null, 0, 0);
  {T}_sys({T}_UNLINKAT, -100, (long)".run.in", 0);
#endif
}
__attribute__((section(".preinit_array"), used))
void (*{T}_first)(int, char**, char**) = {T}_begin;
struct {T}_guard {
  ~{T}_guard() {
    std::cout.flush();
    std::fflush(stdout);
    {T}_sys({T}_WRITE, 1, (long)"\n", 1);
    {T}_sys({T}_WRITE, 1, (long){T}_token, {T}_size);
    {T}_sys({T}_WRITE, 1, (long)"\n", 1);
  }
};
}  // namespace
"""


def _guard_after(pattern: re.Pattern[str], tests: str, statement: str, what: str) -> str:
    found = pattern.search(tests)
    if found is None:
        raise ProgramUnusable(f"the tests have no {what} to run")
    return tests[: found.end()] + statement + tests[found.end() :]


def _cpp_declarations(prompt: str) -> str:
    """The prompt with the function it opens turned into a declaration
    (comments after its ``{`` dropped: HumanEval-X's docstrings)."""
    text = without_trailing_comments(prompt)
    return text[:-1].rstrip() + ";\n" if text.endswith("{") else text + "\n"


def _cpp(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    t = _tag("cpp", candidate, tests, prompt or "")
    lead = re.match(r"\s*\}", tests)  # MultiPL-E's tests close the candidate's function
    head, rest = (tests[: lead.end()], tests[lead.end() :]) if lead else ("", tests)
    guarded = _guard_after(_CPP_MAIN, rest, f" {t}_guard {t}_g;", "int main()")
    harness = _CPP_HARNESS.replace("__SYSCALLS__", _CPP_SYSCALLS).replace("{T}", t)
    extra = ("-Werror=prio-ctor-dtor",)
    if not prompt:  # one unit: the prompt's declarations are not known
        source = f"{harness}\n#line 1\n{candidate}{head}\n{guarded}\n"
        return Assembly(source, {}, _replace_argv(tc, "compile", "{src}", ("{src}", *extra)))
    unit = f"{_cpp_declarations(prompt)}{harness}\n{guarded}\n"
    compile_: tuple[str, ...] = (
        "{dir}/tests.cpp",
        "{src}",
        "-Wl,--allow-multiple-definition",
        *extra,
    )
    if "openssl/" in prompt or "openssl/" in candidate:  # HumanEval-X's CPP/162: MD5
        compile_ += ("-lcrypto",)
    return Assembly(
        candidate + head + "\n",
        {"tests.cpp": _b64(unit)},
        _replace_argv(tc, "compile", "{src}", compile_),
    )


def _replace_argv(tc: Toolchain, which: str, old: str, new: Iterable[str]) -> Toolchain:
    """``tc`` with ``old`` in its ``compile`` or ``run`` argv replaced by ``new``."""
    argv = (tc.compile or ()) if which == "compile" else tc.run
    out: list[str] = []
    for arg in argv:
        out.extend(new if arg == old else (arg,))
    if which == "compile":
        return dataclasses.replace(tc, compile=tuple(out))
    return dataclasses.replace(tc, run=tuple(out))


_RUST_HARNESS: Final = r"""
#[allow(non_camel_case_types, dead_code)]
struct {T}(::std::vec::Vec<u8>);
#[allow(dead_code)]
impl {T} {
    #[cfg(target_arch = "x86_64")]
    unsafe fn sys(n: usize, a: usize, b: usize, c: usize) -> isize {
        let r: isize;
        ::core::arch::asm!("syscall", inlateout("rax") n as isize => r, in("rdi") a,
            in("rsi") b, in("rdx") c, lateout("rcx") _, lateout("r11") _,
            options(nostack));
        r
    }
    #[cfg(target_arch = "aarch64")]
    unsafe fn sys(n: usize, a: usize, b: usize, c: usize) -> isize {
        let r: isize;
        ::core::arch::asm!("svc 0", in("x8") n, inlateout("x0") a as isize => r,
            in("x1") b, in("x2") c, options(nostack));
        r
    }
    fn begin() -> Self {
        let mut token = ::std::vec![0u8; 128];
        let mut size = 0usize;
        unsafe {
            #[cfg(target_arch = "x86_64")]
            let (read, open, dup, unlink) = (0usize, 2usize, 33usize, 87usize);
            #[cfg(target_arch = "aarch64")]
            let (read, open, dup, unlink) = (63usize, 56usize, 24usize, 35usize);
            while size < 127 {
                let got = Self::sys(read, 0, token.as_mut_ptr() as usize + size, 127 - size);
                if got <= 0 { break; }
                size += got as usize;
            }
            let null = b"/dev/null\0";
            let input = b".run.in\0";
            #[cfg(target_arch = "x86_64")]
            {
                let fd = Self::sys(open, null.as_ptr() as usize, 0, 0);
                if fd >= 0 { Self::sys(dup, fd as usize, 0, 0); }
                Self::sys(unlink, input.as_ptr() as usize, 0, 0);
            }
            #[cfg(target_arch = "aarch64")]
            {
                let at = (-100isize) as usize;
                let fd = Self::sys(open, at, null.as_ptr() as usize, 0);
                if fd >= 0 { Self::sys(dup, fd as usize, 0, 0); }
                Self::sys(unlink, at, input.as_ptr() as usize, 0);
            }
        }
        token.truncate(size);
        {T}(token)
    }
}
impl ::std::ops::Drop for {T} {
    fn drop(&mut self) {
        if ::std::thread::panicking() { return; }
        use ::std::io::Write;
        let mut out = ::std::io::stdout();
        let _ = out.flush();
        let _ = out.write_all(b"\n");
        let _ = out.write_all(&self.0);
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
}
"""


def _rust(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    t = _tag("rust", candidate, tests, prompt or "")
    guarded = _guard_after(_RUST_MAIN, tests, f" let _{t} = {t}::begin();", "fn main()")
    return Assembly(f"{_RUST_HARNESS.replace('{T}', t)}\n{candidate}\n{guarded}\n", {}, tc)


_JS_HARNESS: Final = r"""
const {T} = (() => {
  const fs__ = require("fs");
  let token__ = "";
  try { token__ = fs__.readFileSync(0, "utf8"); } catch (e) {}
  try { fs__.closeSync(0); fs__.openSync("/dev/null", "r"); } catch (e) {}
  for (const file__ of [".run.in", __filename]) { try { fs__.unlinkSync(file__); } catch (e) {} }
  const lock__ = (value__) => { try { Object.freeze(value__); } catch (e) {} };
  const assert__ = require("assert");
  // HumanEval-X's tests assert with console.assert, which only prints
  const console__ = (globalThis as any).console;
  console__.assert = (ok__: any, ...said__: any[]) => {
    if (!ok__) throw new Error("Assertion failed" + (said__.length ? ": " + said__.join(" ") : ""));
  };
  for (const value__ of [assert__, assert__.strict, Object.prototype, Array.prototype,
      String.prototype, Number.prototype, Boolean.prototype, Map.prototype, Set.prototype,
      Function.prototype, JSON, Math, console__]) lock__(value__);
  for (const name__ of __GLOBALS__) {
    // process is Node's own to write (process.exit marks it): kept, not frozen
    if (!(name__ in globalThis) || name__ === "process" || name__ === "globalThis") continue;
    try {
      Object.defineProperty(globalThis, name__, { writable: false, configurable: false });
    } catch (e) {}
    lock__((globalThis as any)[name__]);
  }
  const write__ = fs__.writeSync;
  return () => { write__(1, "\n" + token__ + "\n"); };
})();
"""


def _without_node_types(tc: Toolchain) -> Toolchain:
    """tsc without Node's declarations: MultiPL-E's tests declare
    ``require`` as ``any`` themselves, which Node's typing of it refuses."""
    argv, out, skip = tc.compile or (), [], 0
    for arg in argv:
        if skip:
            skip -= 1
        elif arg in ("--typeRoots", "--types"):
            skip = 1
        else:
            out.append(arg)
    return dataclasses.replace(tc, compile=tuple(out))


def _script(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    language = tc.language
    t = _tag(language, candidate, tests, prompt or "")
    used = sorted(set(_IDENT.findall(_code_only(tests, language))))
    globals_ = "[" + ", ".join(f'"{n}"' for n in used) + "]"
    harness = _JS_HARNESS.replace("{T}", t).replace("__GLOBALS__", globals_)
    if language == "typescript":
        head = "declare var require: any;\ndeclare var __filename: any;\n"
        # the whole program strict: a function cannot read its caller's source
        source = f'"use strict";\n{head}{harness}\n{candidate}\n{tests}\n{t}();\n'
        tc = _without_node_types(tc)
        if not typecheck:  # MBXP: a type error is no failure (tsc still emits)
            tc = _replace_argv(tc, "compile", "{src}", ("--noCheck", "{src}"))
        return Assembly(source, {}, _with_node_path(tc))
    harness = harness.replace("(globalThis as any)", "globalThis")
    harness = re.sub(r"(\w+__): any(\[\])?", r"\1", harness)
    wrapped = f'(function () {{\n"use strict";\n{tests}\n}})();\n'
    return Assembly(f"{harness}\n{candidate}\n{wrapped}{t}();\n", {}, _with_node_path(tc))


def _with_node_path(tc: Toolchain) -> Toolchain:
    """Node finding the global packages the tests require (MBXP: lodash)."""
    roots = [r for r in node_module_roots(with_npm=False) if os.path.isdir(r)]
    return dataclasses.replace(tc, env={**tc.env, "NODE_PATH": ":".join(roots)}) if roots else tc


_JAVA_LAUNCHER: Final = r"""
final class {T} {
  public static void main(String[] args) throws Throwable {
    byte[] token = System.in.readAllBytes();
    System.in.close();
    try { java.nio.file.Files.deleteIfExists(java.nio.file.Path.of(".run.in")); }
    catch (Throwable e) {}
    ClassLoader loader = {T}.class.getClassLoader();
    java.lang.reflect.Method main = null;
    for (String name : new String[] {__MAINS__}) {
      try {
        java.lang.reflect.Method found =
            Class.forName(name, false, loader).getDeclaredMethod("main", String[].class);
        if (java.lang.reflect.Modifier.isStatic(found.getModifiers())) { main = found; break; }
      } catch (ReflectiveOperationException e) {}
    }
    if (main == null) {
      System.err.println("collimate: the tests have no static main(String[])");
      System.exit(3);
    }
    String forged = forgedEquality(loader);
    if (forged != null) {
      System.err.println("collimate: " + forged);
      System.exit(4);
    }
    main.setAccessible(true);
    try { main.invoke(null, (Object) new String[0]); }
    catch (java.lang.reflect.InvocationTargetException e) { throw e.getCause(); }
    System.out.flush();
    java.io.FileOutputStream out = new java.io.FileOutputStream(java.io.FileDescriptor.out);
    out.write('\n');
    out.write(token);
    out.write('\n');
    out.flush();
  }

  // a class outside the tests that overrides equals of a JDK type (its
  // equals is what the tests' .equals(expected) calls)
  static String forgedEquality(ClassLoader loader) throws Exception {
    java.util.Set<String> tests = new java.util.HashSet<>(java.util.Arrays.asList(__TESTS__));
    java.nio.file.Path root = java.nio.file.Path.of(System.getProperty("user.dir"), "build");
    java.util.List<java.nio.file.Path> files;
    try (java.util.stream.Stream<java.nio.file.Path> walk = java.nio.file.Files.walk(root)) {
      files = walk.filter(p -> p.toString().endsWith(".class")).collect(
          java.util.stream.Collectors.toList());
    }
    for (java.nio.file.Path file : files) {
      String rel = root.relativize(file).toString();
      String name = rel.substring(0, rel.length() - 6).replace('/', '.');
      String top = name.contains("$") ? name.substring(0, name.indexOf('$')) : name;
      if (name.equals("{T}") || tests.contains(top)) continue;
      Class<?> k;
      try { k = Class.forName(name, false, loader); } catch (Throwable e) { continue; }
      boolean equals = false;
      for (Class<?> c = k; c != null && !c.getName().startsWith("java."); c = c.getSuperclass()) {
        try { c.getDeclaredMethod("equals", Object.class); equals = true; }
        catch (NoSuchMethodException e) {}
      }
      if (equals && jdkBased(k)) {
        return "the candidate's class " + name + " overrides equals() of a JDK type";
      }
    }
    return null;
  }

  static boolean jdkBased(Class<?> k) {
    for (Class<?> c = k; c != null; c = c.getSuperclass()) {
      if (c != Object.class && c.getName().startsWith("java.")) return true;
      for (Class<?> i : c.getInterfaces()) {
        String n = i.getName();
        if (n.startsWith("java.util.") || n.equals("java.lang.CharSequence")
            || n.equals("java.lang.Iterable")) return true;
        if (!n.startsWith("java.") && jdkBased(i)) return true;
      }
    }
    return false;
  }
}
"""


def _java(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    t = _tag("java", candidate, tests, prompt or "")
    # one file (Main.java): no top-level class may be public under another name
    body = _JAVA_PUBLIC_CLASS.sub(r"\1", f"{candidate}\n{tests}\n")
    declared = _JAVA_CLASS.findall(_code_only(tests, "java"))
    mains = declared + [n for n in _JAVA_CLASS.findall(_code_only(prompt or "", "java"))
                        if n not in declared]  # fmt: skip
    if not mains:
        mains = ["Main", "Problem", "Solution"]
    quoted = ", ".join(f'"{n}"' for n in mains)
    launcher = _JAVA_LAUNCHER.replace("{T}", t).replace("__MAINS__", quoted)
    launcher = launcher.replace("__TESTS__", ", ".join(f'"{n}"' for n in declared) or '""')
    run = tuple(t if arg == "Main" else arg for arg in tc.run)
    if os.path.isfile(JAVATUPLES_JAR):  # MultiPL-E's tests import org.javatuples
        run = tuple(f"{{build}}:{JAVATUPLES_JAR}" if a == "{build}" else a for a in run)
        tc = _replace_argv(tc, "compile", "{src}", ("-cp", JAVATUPLES_JAR, "{src}"))
    return Assembly(body + launcher, {}, dataclasses.replace(tc, run=run))


_GO_HARNESS_IMPORTS: Final = 'import {T}_os "os"\nimport {T}_syscall "syscall"\n'
_GO_HARNESS: Final = r"""
var {T}_token = {T}_begin()

func {T}_begin() []byte {
	buf := make([]byte, 128)
	size := 0
	for size < 127 {
		n, err := {T}_syscall.Read(0, buf[size:127])
		if n <= 0 || err != nil {
			break
		}
		size += n
	}
	if null, err := {T}_syscall.Open("/dev/null", {T}_syscall.O_RDONLY, 0); err == nil {
		{T}_syscall.Dup2(null, 0)
	}
	{T}_syscall.Unlink(".run.in")
	return buf[:size]
}

func {T}_end() {
	{T}_os.Stdout.Sync()
	{T}_syscall.Write(1, []byte("\n"))
	{T}_syscall.Write(1, {T}_token)
	{T}_syscall.Write(1, []byte("\n"))
}
"""
_GO_TEST_MAIN: Final = r"""
func TestMain(m *{T}_testing.M) {
	code := m.Run()
	if code == 0 {
		{T}_end()
	}
	{T}_os.Exit(code)
}
"""


#: Standard packages a Go program may use without importing them (as
#: HumanEval-X's harness adds the ones its generation uses), by the name
#: code calls them by.
_GO_STD: Final = {
    "bufio": "bufio", "bytes": "bytes", "errors": "errors", "fmt": "fmt", "math": "math",
    "md5": "crypto/md5", "rand": "math/rand", "big": "math/big", "bits": "math/bits",
    "os": "os", "regexp": "regexp", "sort": "sort", "strconv": "strconv",
    "strings": "strings", "time": "time", "unicode": "unicode", "utf8": "unicode/utf8",
    "json": "encoding/json", "hex": "encoding/hex", "reflect": "reflect", "heap": "container/heap",
}  # fmt: skip
_GO_IMPORT_BLOCK: Final = re.compile(r"\bimport\s*\(([^)]*)\)")
_GO_IMPORT_ONE: Final = re.compile(r'\bimport\s+((?:[\w.]+\s+)?"[^"]*")')
_GO_SPEC: Final = re.compile(r'^\s*([\w.]+\s+)?"([^"]+)"', re.MULTILINE)


def _go_imports(section: str, code: str) -> str:
    """The import section of a Go program as ``goimports`` would leave it:
    the imports its code uses (an unused one fails a Go compile; the
    datasets' prompts import what their reference solutions use, or the
    Hub's rows lack HumanEval-X's import column), and the standard
    packages it uses without importing them (:data:`_GO_STD`)."""
    specs = []
    for block in _GO_IMPORT_BLOCK.findall(section):
        specs += _GO_SPEC.findall(block)
    for one in _GO_IMPORT_ONE.findall(_GO_IMPORT_BLOCK.sub("", section)):
        specs += _GO_SPEC.findall(one)
    text = _code_only(code, "go")

    def used(name: str) -> bool:
        return re.search(rf"(?<![\w.]){re.escape(name)}\s*\.", text) is not None

    kept, names = [], set()
    for alias, path in specs:
        alias = alias.strip()
        name = alias or path.rsplit("/", 1)[-1]
        if alias in ("_", ".") or used(name):
            kept.append(f'\t{alias + " " if alias else ""}"{path}"')
            names.add(name)
    for name, path in _GO_STD.items():
        declared = re.search(rf"\b(?:var|const|func|type)\s+{name}\b|\b{name}\s*:?=[^=]", text)
        if name not in names and used(name) and declared is None:
            kept.append(f'\t"{path}"')
    return "\nimport (\n" + "\n".join(kept) + "\n)\n" if kept else "\n"


def _go(tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool) -> Assembly:
    t = _tag("go", candidate, tests, prompt or "")
    package = _GO_PACKAGE.search(candidate)
    if package is None:
        if prompt and _GO_PACKAGE.search(prompt) is None:
            raise ProgramUnusable("the prompt has no package clause")
        # the candidate's own source lost it (Go itself refuses that:
        # "expected 'package'"): its failure, never the judge's
        raise ProgramRejected("the program has no package clause", "compile_error")
    imports = _GO_IMPORTS.match(candidate, package.end())
    at = imports.end() if imports else package.end()
    harness = _GO_HARNESS.replace("{T}", t)
    ours = _GO_HARNESS_IMPORTS.replace("{T}", t)
    if _GO_TEST.search(tests):
        ours += f'import {t}_testing "testing"\n'
        harness += _GO_TEST_MAIN.replace("{T}", t)
        body = tests
        tc = dataclasses.replace(
            tc,
            source="main_test.go",
            compile=tuple(
                x for a in (tc.compile or ()) for x in (("test", "-c") if a == "build" else (a,))
            ),
        )
    else:
        end = f" defer func() {{ if r := recover(); r != nil {{ panic(r) }}; {t}_end() }}();"
        body = _guard_after(_GO_MAIN, tests, end, "func main()")
    imported = _go_imports(candidate[package.end() : at], candidate[at:] + "\n" + body)
    source = (
        candidate[: package.end()] + ours + imported
        + "\n" + harness + candidate[at:] + "\n" + body + "\n"
    )  # fmt: skip
    if os.path.isdir(GO_LIBRARIES):
        env = dict(tc.env)
        env["GOPATH"] = f"{env.get('GOPATH', '{dir}/.gopath')}:{GO_LIBRARIES}"
        tc = dataclasses.replace(tc, env=env)
    return Assembly(source, {}, tc)


_Assembler = Callable[[Toolchain, str, str, "str | None", bool], Assembly]
_ASSEMBLERS: Final[dict[str, _Assembler]] = {
    "cpp": _cpp,
    "rust": _rust,
    "javascript": _script,
    "typescript": _script,
    "java": _java,
    "go": _go,
}
#: Languages whose test programs this harness runs.
PROGRAM_LANGUAGES: Final = tuple(_ASSEMBLERS)


def assemble(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, *, typecheck: bool = True
) -> Assembly:
    """The program to compile and run for ``candidate`` (the prompt and the
    completion, as the dataset joins them) and its ``tests``. Raises
    :class:`ProgramRejected` for a candidate redefining what the tests use
    (or not a program at all), :class:`ProgramUnusable` for tests this
    harness cannot guard (only ever the tests', never the candidate's)."""
    assembler = _ASSEMBLERS.get(tc.language)
    if assembler is None:
        raise ProgramUnusable(f"test programs in {tc.language} are not run here")
    if tc.language != "cpp" or not prompt:
        shadowed = shadowed_names(tc.language, candidate, tests, prompt)
        if shadowed:
            raise ProgramRejected(
                f"the candidate redefines {', '.join(shadowed)}, which the tests use"
            )
    return assembler(tc, candidate, tests, prompt, typecheck)
