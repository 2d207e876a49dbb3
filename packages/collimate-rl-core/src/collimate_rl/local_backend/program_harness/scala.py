"""Scala (MultiPL-E's ``scala``): a launcher object that reads the token,
calls the tests' ``main`` and prints it.

MultiPL-E's Scala prompt opens ``object Problem`` and the function; its
tests close the function and add ``def main(args: Array[String])`` of
``assert(...)`` calls to the same object, then close it. SandboxFusion
runs ``scala Problem`` (the first object) and passes a run that exits 0.

Here the program is ``prompt + completion + tests`` followed by a launcher
object with a secret name, which the run starts instead: it reads the
token and closes stdin (deleting the file it came from) before any of the
candidate's code runs (a Scala object's body runs when it is first used,
and nothing the candidate writes runs earlier), calls the tests' ``main``
(of the objects the tests declare, else the prompt's, through the static
method the compiler gives an object's ``main``), and prints the token on
the real stdout once it returned. An ``assert`` that fails throws out of
``main``: no token, the run fails as it does under SandboxFusion.

What the tests call is guarded by the names check of :mod:`.names`: the
candidate may not declare, anywhere, a name the tests use (``assert``,
``List``, ``main``: a ``main`` of its own in ``Problem`` would be the one
called once the candidate moved the tests' into another object), nor bind
one by an import (``import Console.{println => assert}``), nor define
``equals`` (what ``==`` and the tests' calls of ``equals`` call on a value of a
class the candidate wrote); Unicode escapes are read as scalac reads them.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Final

from ..toolchains import Toolchain
from .common import Assembly, tag
from .names import code_only

__all__ = ["assemble_scala"]

_SCALA_OBJECT: Final = re.compile(r"\bobject\s+([A-Za-z_]\w*)")

_LAUNCHER: Final = r"""
object {T} {
  def main(args: Array[String]): Unit = {
    val token = System.in.readAllBytes()
    System.in.close()
    try { java.nio.file.Files.deleteIfExists(java.nio.file.Paths.get(".run.in")) }
    catch { case _: Throwable => }
    val loader = getClass.getClassLoader
    var main: java.lang.reflect.Method = null
    for (name <- Array[String](__MAINS__) if main == null) {
      try {
        val found = Class.forName(name, false, loader)
          .getDeclaredMethod("main", classOf[Array[String]])
        if (java.lang.reflect.Modifier.isStatic(found.getModifiers)) main = found
      } catch { case _: ReflectiveOperationException => }
    }
    if (main == null) {
      System.err.println("collimate: the tests have no main(args: Array[String]) in an object")
      System.exit(3)
    }
    main.setAccessible(true)
    try { main.invoke(null, Array[String]()) }
    catch { case e: java.lang.reflect.InvocationTargetException => throw e.getCause }
    Console.flush()
    System.out.flush()
    val out = new java.io.FileOutputStream(java.io.FileDescriptor.out)
    out.write('\n')
    out.write(token)
    out.write('\n')
    out.flush()
  }
}
"""


def assemble_scala(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    t = tag("scala", candidate, tests, prompt or "")
    declared = _SCALA_OBJECT.findall(code_only(tests, "scala"))
    mains = declared + [n for n in _SCALA_OBJECT.findall(code_only(prompt or "", "scala"))
                        if n not in declared]  # fmt: skip
    if not mains:
        mains = ["Main", "Problem", "Solution"]
    launcher = _LAUNCHER.replace("{T}", t).replace("__MAINS__", ", ".join(f'"{n}"' for n in mains))
    run = (*tc.run[:-1], t)
    return Assembly(f"{candidate}\n{tests}\n{launcher}", {}, dataclasses.replace(tc, run=run))
