"""What Scala and Kotlin scripts need beyond their toolchains' commands.

* **Scala** runs the program's first ``object``, found as SandboxFusion
  finds it (its ``find_scala_classname``: the first ``object Name``; none,
  or a class ``extends`` met first, and the program does not compile:
  "Object name not found."). :func:`with_main_class` names it in the run
  command.
* **Kotlin scripts** (``main.kts``) compile to a class whose constructor is
  the script's body (``Main(args)``: the script's statements, in order).
  A launcher compiled with it (:data:`KOTLIN_LAUNCHER`, written beside the
  source by :func:`compile_files`) calls it, so a compiled script runs on
  plain ``java`` with the Kotlin standard library, compiled once (the
  compile cache) instead of at every run as ``kotlinc -script`` would.
* Both compilers start faster from a class-data-sharing archive made by
  compiling :data:`ARCHIVE_SAMPLES` once (see :mod:`.jvm_archive`).
"""

from __future__ import annotations

import base64
import dataclasses
import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .toolchains import Toolchain

__all__ = [
    "ARCHIVE_SAMPLES",
    "KOTLIN_LAUNCHER",
    "KOTLIN_LAUNCHER_CLASS",
    "NO_OBJECT",
    "compile_files",
    "scala_object",
    "with_main_class",
]

#: SandboxFusion's pattern (its minor runners' ``find_scala_classname``), kept as it is:
#: the first match's object name, empty when ``extends ... {`` came first.
_SCALA_OBJECT: Final = re.compile(r"object\s+(\w+)(\s*)|(\s+extends\s+\w+\s*){", re.DOTALL | re.M)
#: What SandboxFusion answers a Scala program without one.
NO_OBJECT: Final = "Object name not found."
#: The class that starts a compiled Kotlin script, and its source's name.
KOTLIN_LAUNCHER_CLASS: Final = "CollimateKotlinLaunch"
KOTLIN_LAUNCHER: Final = "CollimateKotlinLaunch.kt"
#: ``main.kts`` compiles to the class ``Main``.
_KOTLIN_LAUNCHER_SOURCE: Final = (
    f"object {KOTLIN_LAUNCHER_CLASS} {{\n"
    "    @JvmStatic fun main(args: Array<String>) { Main(args) }\n"
    "}\n"
)


def scala_object(source: str) -> str | None:
    """The object a Scala program runs (SandboxFusion's rule), or None."""
    found = _SCALA_OBJECT.findall(source)
    return found[0][0] or None if found else None


def with_main_class(tc: Toolchain, source: str) -> Toolchain | None:
    """``tc`` running ``source``'s main class: a Scala program's first
    object (None when it has none); any other language's as it is."""
    if tc.language != "scala":
        return tc
    name = scala_object(source)
    if name is None:
        return None
    return dataclasses.replace(tc, run=(*tc.run[:-1], name))


def compile_files(tc: Toolchain) -> dict[str, str]:
    """Files (name -> base64) a compile in ``tc`` needs beside the source:
    the Kotlin script launcher."""
    if tc.language != "kotlin":
        return {}
    return {KOTLIN_LAUNCHER: base64.b64encode(_KOTLIN_LAUNCHER_SOURCE.encode()).decode()}


#: What each compiler's archive is made from: the classes a typical small
#: program needs loaded (collections, strings, numbers, reading stdin).
ARCHIVE_SAMPLES: Final = {
    "scala": {
        "main.scala": "import scala.collection.mutable\n"
        "object Main {\n"
        "  case class P(a: Long, b: Long)\n"
        "  def main(args: Array[String]): Unit = {\n"
        '    val xs = scala.io.StdIn.readLine().split(" ").map(_.toLong).toList\n'
        "    val m = mutable.HashMap[String, Long]()\n"
        "    for ((x, i) <- xs.zipWithIndex) m(i.toString) = x\n"
        "    val p = P(xs.sum, xs.max)\n"
        '    assert(p.a >= 0, "negative")\n'
        '    println(f"${p.a}%d ${m.values.toSeq.sorted.mkString(",")} ${math.sqrt(2.0)}%.3f")\n'
        "  }\n"
        "}\n",
    },
    "kotlin": {
        "main.kts": "data class P(val a: Long, val b: Long)\n"
        "fun total(xs: List<Long>): Long = xs.sum()\n"
        'val xs = (readLine() ?: "1 2").trim().split(" ").map { it.toLong() }\n'
        "val m = mutableMapOf<String, Long>()\n"
        "xs.forEachIndexed { i, x -> m[i.toString()] = x }\n"
        "val p = P(total(xs), xs.max() ?: 0L)\n"
        'if (p.a < 0) throw Exception("negative")\n'
        'println("${p.a} ${m.values.sorted().joinToString(",")} ${Math.sqrt(2.0)}")\n',
        KOTLIN_LAUNCHER: _KOTLIN_LAUNCHER_SOURCE,
    },
}
