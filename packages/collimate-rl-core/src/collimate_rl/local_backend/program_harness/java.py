"""Java: a launcher that reads the token, calls the tests' ``main`` and
prints it, refusing a candidate's class that overrides ``equals`` of a JDK
type."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Final

from ..toolchains import Toolchain
from .common import Assembly, replace_argv, tag
from .names import code_only

__all__ = ["JAVATUPLES_JAR", "assemble_java"]

#: Libraries of the datasets' tests, where Debian puts them.
JAVATUPLES_JAR: Final = "/usr/share/java/javatuples.jar"

_JAVA_PUBLIC_CLASS: Final = re.compile(
    r"^public\s+((?:final\s+|abstract\s+)*(?:class|interface|enum|record)\s)", re.M
)
_JAVA_CLASS: Final = re.compile(r"\b(?:class|interface|enum|record)\s+([A-Za-z_]\w*)")

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


def assemble_java(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    t = tag("java", candidate, tests, prompt or "")
    # one file (Main.java): no top-level class may be public under another name
    body = _JAVA_PUBLIC_CLASS.sub(r"\1", f"{candidate}\n{tests}\n")
    declared = _JAVA_CLASS.findall(code_only(tests, "java"))
    mains = declared + [n for n in _JAVA_CLASS.findall(code_only(prompt or "", "java"))
                        if n not in declared]  # fmt: skip
    if not mains:
        mains = ["Main", "Problem", "Solution"]
    quoted = ", ".join(f'"{n}"' for n in mains)
    launcher = _JAVA_LAUNCHER.replace("{T}", t).replace("__MAINS__", quoted)
    launcher = launcher.replace("__TESTS__", ", ".join(f'"{n}"' for n in declared) or '""')
    run = tuple(t if arg == "Main" else arg for arg in tc.run)
    if os.path.isfile(JAVATUPLES_JAR):  # MultiPL-E's tests import org.javatuples
        run = tuple(f"{{build}}:{JAVATUPLES_JAR}" if a == "{build}" else a for a in run)
        tc = replace_argv(tc, "compile", "{src}", ("-cp", JAVATUPLES_JAR, "{src}"))
    return Assembly(body + launcher, {}, dataclasses.replace(tc, run=run))
