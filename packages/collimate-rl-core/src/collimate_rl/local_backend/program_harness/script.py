"""JavaScript and TypeScript: strict-mode tests, the globals and prototypes
they use frozen, the token printed by the program's last statement."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Final

from ..toolchains import Toolchain, node_module_roots
from .common import Assembly, replace_argv, tag
from .names import IDENT, code_only

__all__ = ["assemble_script"]

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


def assemble_script(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    language = tc.language
    t = tag(language, candidate, tests, prompt or "")
    used = sorted(set(IDENT.findall(code_only(tests, language))))
    globals_ = "[" + ", ".join(f'"{n}"' for n in used) + "]"
    harness = _JS_HARNESS.replace("{T}", t).replace("__GLOBALS__", globals_)
    if language == "typescript":
        head = "declare var require: any;\ndeclare var __filename: any;\n"
        # the whole program strict: a function cannot read its caller's source
        source = f'"use strict";\n{head}{harness}\n{candidate}\n{tests}\n{t}();\n'
        tc = _without_node_types(tc)
        if not typecheck:  # MBXP: a type error is no failure (tsc still emits)
            tc = replace_argv(tc, "compile", "{src}", ("--noCheck", "{src}"))
        return Assembly(source, {}, _with_node_path(tc))
    harness = harness.replace("(globalThis as any)", "globalThis")
    harness = re.sub(r"(\w+__): any(\[\])?", r"\1", harness)
    wrapped = f'(function () {{\n"use strict";\n{tests}\n}})();\n'
    return Assembly(f"{harness}\n{candidate}\n{wrapped}{t}();\n", {}, _with_node_path(tc))


def _with_node_path(tc: Toolchain) -> Toolchain:
    """Node finding the global packages the tests require (MBXP: lodash)."""
    roots = [r for r in node_module_roots(with_npm=False) if os.path.isdir(r)]
    return dataclasses.replace(tc, env={**tc.env, "NODE_PATH": ":".join(roots)}) if roots else tc
