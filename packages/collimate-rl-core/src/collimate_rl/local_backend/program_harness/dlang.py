"""D: MultiPL-E's ``unittest`` blocks run by a launcher module that holds
the token, in a module of their own.

MultiPL-E runs ``prompt + completion + tests`` with ``rdmd -unittest
-main``: druntime runs every ``unittest`` block before ``main`` and exits
1 at the first failing ``assert``. Here three modules are compiled
together (``-unittest``, asserts on, unoptimized as rdmd's default):

* the candidate's (``main.d``, or the module it declares);
* the tests', importing it, the prompt's imports and the candidate's
  plain ones (``import std.x;``, never a renamed or selective one, which
  would put a name of the candidate's choosing in the tests' scope), with
  their ``void main()`` renamed. In a module of their own no declaration
  of the candidate shadows what the tests call: a ``tuple`` of its own
  beside ``std.typecons``' is an ambiguity, D's guard against hijacking,
  and so a compile error;
* the launcher's (named after the key), first on the command line: a
  function in the program's preinit array (run before any initializer or
  module constructor of the candidate) reads the token with raw system
  calls, puts ``/dev/null`` on fd 0 and deletes the file it came from; its ``main`` calls
  each ``unittest`` of the candidate's module and the tests' by
  ``__traits(getUnitTests)`` (compiled in, so nothing done to druntime's
  ModuleInfo or unit-test hooks at run time skips one), then the tests'
  ``main``, then writes the token. druntime's own run of the unittests
  before ``main`` is turned off.

What D's linkage would let a candidate replace below the language (a
C-linkage or ``pragma(mangle)`` function named as druntime's
``_d_assert`` or libc's ``memcmp`` binds every caller in the program to
it; a string ``mixin`` hides any declaration from a reading of the
source; ``ldc.attributes`` places code in the program's initializers) is
refused: a candidate using ``extern(C)``, ``extern(C++)``,
``pragma(mangle)``, ``pragma(crt_constructor)``, a string ``mixin`` or LDC's
attributes is judged wrong without running, and so is one naming its
module as a library's (``module std.typecons;`` would stand in for Phobos'
in the tests' imports).
"""

from __future__ import annotations

import re
from typing import Final

from ..toolchains import Toolchain
from .common import Assembly, ProgramRejected, b64, tag
from .names import code_only

__all__ = ["assemble_d"]

_D_MAIN: Final = re.compile(r"\bvoid\s+main\s*\(\s*\)")
_D_MODULE: Final = re.compile(r"^\s*module\s+([\w.]+)\s*;")
_D_IMPORT: Final = re.compile(r"\bimport\s+[^;{}()]+;")
_D_PLAIN_IMPORT: Final = re.compile(r"\bimport\s+[\w.]+(?:\s*,\s*[\w.]+)*\s*;")
#: What could replace a symbol the tests call or run code of the candidate
#: before the launcher's (see the module).
_D_REFUSED: Final = re.compile(
    r"\bextern\s*\(\s*(?:C\+\+|C|System|Windows|Objective-C)\s*[,)]"
    r"|\bpragma\s*\(\s*(?:mangle|crt_constructor|crt_destructor)\b"
    r"|\bmixin\s*\(|\bldc\s*\.\s*(?:attributes|llvmasm)\b"
)

_D_LAUNCHER: Final = r"""module {T};
import ldc.attributes : section;
import ldc.llvmasm : __asm;
static import core.runtime;
static import {T}_tests;
static import {T}_candidate = __CANDIDATE__;

private __gshared ubyte[128] {T}_token;
private __gshared long {T}_size;

version (X86_64) {
  private long {T}_sys(long n, long a, long b, long c) {
    return __asm!long("syscall", "={rax},{rax},{rdi},{rsi},{rdx},~{rcx},~{r11},~{memory}",
                      n, a, b, c);
  }
  private enum long {T}_READ = 0, {T}_WRITE = 1, {T}_DUP = 33;
  private long {T}_open(const(char)* path) { return {T}_sys(2, cast(long) path, 0, 0); }
  private long {T}_unlink(const(char)* path) { return {T}_sys(87, cast(long) path, 0, 0); }
} else version (AArch64) {
  private long {T}_sys(long n, long a, long b, long c) {
    return __asm!long("svc 0", "={x0},{x8},{x0},{x1},{x2},~{memory}", n, a, b, c);
  }
  private enum long {T}_READ = 63, {T}_WRITE = 64, {T}_DUP = 24;
  private long {T}_open(const(char)* path) { return {T}_sys(56, -100, cast(long) path, 0); }
  private long {T}_unlink(const(char)* path) { return {T}_sys(35, -100, cast(long) path, 0); }
} else {
  static assert(0, "the program harness knows x86_64 and aarch64");
}

extern (C) private void {T}_begin(int, char**, char**) {
  long got;
  while ({T}_size < 127 && (got = {T}_sys({T}_READ, 0, cast(long)({T}_token.ptr + {T}_size),
                                          127 - {T}_size)) > 0)
    {T}_size += got;
  long nul = {T}_open("/dev/null".ptr);
  if (nul >= 0) {T}_sys({T}_DUP, nul, 0, 0);
  {T}_unlink(".run.in".ptr);
}

@section(".preinit_array")
extern (C) __gshared void function(int, char**, char**) {T}_first = &{T}_begin;

shared static this() {
  // the unittests are run by main below, not by druntime before it
  core.runtime.Runtime.extendedModuleUnitTester = function core.runtime.UnitTestResult() {
    return core.runtime.UnitTestResult(0, 0, true, false);
  };
}

int main() {
  static import std.stdio;
  static foreach (test; __traits(getUnitTests, {T}_candidate)) test();
  static foreach (test; __traits(getUnitTests, {T}_tests)) test();
  __TESTS_MAIN__
  std.stdio.stdout.flush();
  {T}_sys({T}_WRITE, 1, cast(long) "\n".ptr, 1);
  {T}_sys({T}_WRITE, 1, cast(long) {T}_token.ptr, {T}_size);
  {T}_sys({T}_WRITE, 1, cast(long) "\n".ptr, 1);
  return 0;
}
"""


def assemble_d(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    t = tag("d", candidate, tests, prompt or "")
    code = code_only(candidate, "d")
    refused = _D_REFUSED.search(code)
    if refused is not None:
        raise ProgramRejected(
            f"the candidate uses {refused.group().rstrip('(,) ')!r}, which could replace what "
            "the tests call below the language (see the program harness)"
        )
    declared = _D_MODULE.match(code)
    module = declared.group(1) if declared else tc.source.removesuffix(".d")
    if "." in module or module == "object":
        # a module named as a library's (std.typecons, druntime's object)
        # would stand in for it in the tests' imports
        raise ProgramRejected(f"the candidate names its module {module!r}, a library's name")
    imports = [m.group() for m in _D_IMPORT.finditer(code_only(prompt or "", "d"))]
    imports += [m.group() for m in _D_PLAIN_IMPORT.finditer(code)]
    tests_main = ""
    if _D_MAIN.search(tests):
        tests = _D_MAIN.sub(f"void {t}_main()", tests, count=1)
        tests_main = f"{t}_tests.{t}_main();"
    header = f"module {t}_tests;\nimport {module};\n" + "\n".join(dict.fromkeys(imports))
    launcher = _D_LAUNCHER.replace("__CANDIDATE__", module).replace("__TESTS_MAIN__", tests_main)
    ldc2 = (tc.compile or ("ldc2",))[0]
    compile_ = (ldc2, "-unittest", "-of={build}/main", f"{{dir}}/{t}.d",
                f"{{dir}}/{t}_tests.d", "{src}")  # fmt: skip
    return Assembly(
        candidate,
        {
            f"{t}.d": b64(launcher.replace("{T}", t)),
            f"{t}_tests.d": b64(f"{header}\n#line 1\n{tests}\n"),
        },
        Toolchain(tc.language, tc.compiler, tc.source, tc.run, compile_, tc.env),
    )
