"""C++: the tests compiled as a translation unit of their own (from the
prompt's declarations), the token read before the program's first
initializer and printed by a guard destroyed at the end of ``main``."""

from __future__ import annotations

import re
from typing import Final

from ...rewards.appended_tests import without_trailing_comments
from ..toolchains import Toolchain
from .common import Assembly, b64, guard_after, replace_argv, tag

__all__ = ["assemble_cpp"]

_CPP_MAIN: Final = re.compile(r"\bint\s+main\s*\([^)]*\)\s*\{")

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


def _cpp_declarations(prompt: str) -> str:
    """The prompt with the function it opens turned into a declaration
    (comments after its ``{`` dropped: HumanEval-X's docstrings)."""
    text = without_trailing_comments(prompt)
    return text[:-1].rstrip() + ";\n" if text.endswith("{") else text + "\n"


def assemble_cpp(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    t = tag("cpp", candidate, tests, prompt or "")
    lead = re.match(r"\s*\}", tests)  # MultiPL-E's tests close the candidate's function
    head, rest = (tests[: lead.end()], tests[lead.end() :]) if lead else ("", tests)
    guarded = guard_after(_CPP_MAIN, rest, f" {t}_guard {t}_g;", "int main()")
    harness = _CPP_HARNESS.replace("__SYSCALLS__", _CPP_SYSCALLS).replace("{T}", t)
    extra = ("-Werror=prio-ctor-dtor",)
    if not prompt:  # one unit: the prompt's declarations are not known
        source = f"{harness}\n#line 1\n{candidate}{head}\n{guarded}\n"
        return Assembly(source, {}, replace_argv(tc, "compile", "{src}", ("{src}", *extra)))
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
        {"tests.cpp": b64(unit)},
        replace_argv(tc, "compile", "{src}", compile_),
    )
