"""Go: the token read by a package variable's initializer and printed by a
``TestMain`` or a deferred call of ``main``; the imports put as
``goimports`` would."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Final

from ..go_cache import GO_LIBRARIES
from ..toolchains import Toolchain
from .common import Assembly, ProgramRejected, ProgramUnusable, guard_after, tag
from .names import code_only

__all__ = ["assemble_go"]

_GO_MAIN: Final = re.compile(r"\bfunc\s+main\s*\(\s*\)\s*\{")
_GO_TEST: Final = re.compile(r"\bfunc\s+Test\w*\s*\(\s*\w+\s+\*\s*testing\.T\s*\)")
_GO_PACKAGE: Final = re.compile(r"^\s*package\s+\w+[^\n]*\n", re.MULTILINE)
_GO_IMPORTS: Final = re.compile(
    r'(?:\s*import\s*(?:\([^)]*\)|[\w.]*\s*"[^"]*")\s*;?)+', re.MULTILINE
)

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
    text = code_only(code, "go")

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


def assemble_go(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    t = tag("go", candidate, tests, prompt or "")
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
        body = guard_after(_GO_MAIN, tests, end, "func main()")
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
