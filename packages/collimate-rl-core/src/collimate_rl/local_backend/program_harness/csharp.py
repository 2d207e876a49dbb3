"""C#: a launcher class that reads the token, calls the tests' ``Main``
and prints it; the tests' ``Debug.Assert`` made the launcher's own.

MultiPL-E compiles ``prompt + completion + tests`` with ``csc /d:DEBUG
-r:System.Numerics.dll``, runs it with ``mono`` and fails it when the
output shows a failed ``Debug.Assert`` (Mono's goes on after one) or an
unhandled exception. Here the program is compiled with ``-define:DEBUG``
(unoptimized, as csc's default) and ``-main:`` the launcher, whose
``Main``:

* reads the token from stdin before any code of the candidate runs (the
  tests' class, the candidate's too, is first touched by the call of the
  tests' ``Main`` below, so its static constructor runs after), keeps it
  in a local (out of reach of reflection), puts ``/dev/null`` on fd 0 and
  deletes the file it came from;
* refuses a candidate's class that derives from a type of the base class
  library and overrides ``Equals`` (what the tests' ``.Equals(expected)``
  would call on a ``List<long>`` subclass returned for a ``List<long>``);
* makes a failed ``Debug.Assert`` of the candidate's own end the run (as
  MultiPL-E fails it), then calls the tests' ``Main``; the tests'
  ``Debug.Assert(...)`` calls are the launcher's ``Assert`` (rewritten in
  the tests' text): a candidate clearing ``Debug.Listeners`` silences only
  its own asserts;
* prints the token once ``Main`` has returned: an exception, an
  ``Environment.Exit`` or a failed assert never gets there.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Final

from ..toolchains import Toolchain
from .common import Assembly, ProgramRejected, ProgramUnusable, tag
from .names import code_only

__all__ = ["assemble_csharp"]

_CS_MAIN: Final = re.compile(r"\bstatic\s+(?:void|int)\s+Main\s*\(")
_CS_ASSERT: Final = re.compile(r"(?<![\w.])Debug\s*\.\s*Assert\s*\(")
_CS_CLASS: Final = re.compile(r"\b(?:class|struct)\s+([A-Za-z_]\w*)")
#: The contest judge's flags MultiPL-E's compile does not have.
_JUDGE_FLAGS: Final = ("-optimize+", "-define:ONLINE_JUDGE")

_CS_LAUNCHER: Final = r"""
static class {T} {
  [System.Runtime.InteropServices.DllImport("libc", EntryPoint = "open")]
  static extern int Open(string path, int flags);
  [System.Runtime.InteropServices.DllImport("libc", EntryPoint = "dup2")]
  static extern int Dup2(int from, int to);

  sealed class Fatal : System.Diagnostics.TraceListener {
    public override void Write(string message) {}
    public override void WriteLine(string message) {}
    public override void Fail(string message, string detail) { Stop(message); }
  }

  public static void Assert(bool condition) { if (!condition) Stop(null); }
  public static void Assert(bool condition, string message) { if (!condition) Stop(message); }

  static void Stop(string message) {
    System.Console.Out.Flush();
    System.Console.Error.WriteLine("Assertion failed" + (message == null ? "" : ": " + message));
    System.Console.Error.WriteLine(new System.Diagnostics.StackTrace(2, true));
    System.Console.Error.Flush();
    System.Environment.Exit(1);
  }

  static string Forged() {
    System.Reflection.Assembly own = typeof({T}).Assembly;
    foreach (System.Type t in own.GetTypes()) {
      bool library = false;
      for (System.Type b = t.BaseType; b != null && !library; b = b.BaseType)
        library = b != typeof(object) && b != typeof(System.ValueType) && b.Assembly != own;
      if (!library) continue;
      System.Reflection.MethodInfo equals = t.GetMethod("Equals",
          System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.Instance,
          null, new System.Type[] { typeof(object) }, null);
      if (equals != null && equals.DeclaringType.Assembly == own)
        return "the candidate's class " + t.FullName + " overrides Equals of a library type";
    }
    return null;
  }

  static int Main(string[] args) {
    byte[] token = new byte[128];
    int size = 0, got;
    System.IO.Stream input = System.Console.OpenStandardInput();
    while (size < 127 && (got = input.Read(token, size, 127 - size)) > 0) size += got;
    int nul = Open("/dev/null", 0);
    if (nul >= 0) Dup2(nul, 0);
    try { System.IO.File.Delete(".run.in"); } catch (System.Exception) {}
    System.Reflection.MethodInfo main = null;
    System.Reflection.BindingFlags flags = System.Reflection.BindingFlags.Static
        | System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.NonPublic;
    foreach (string name in new string[] { __MAINS__ }) {
      System.Type k = typeof({T}).Assembly.GetType(name, false);
      if (k == null) continue;
      main = k.GetMethod("Main", flags, null, new System.Type[] { typeof(string[]) }, null)
          ?? k.GetMethod("Main", flags, null, System.Type.EmptyTypes, null);
      if (main != null) break;
    }
    if (main == null) {
      System.Console.Error.WriteLine("collimate: the tests have no static Main");
      return 3;
    }
    string forged = Forged();
    if (forged != null) {
      System.Console.Error.WriteLine("collimate: " + forged);
      return 4;
    }
    System.Diagnostics.Debug.Listeners.Clear();
    System.Diagnostics.Debug.Listeners.Add(new Fatal());
    try {
      main.Invoke(null, main.GetParameters().Length == 1 ? new object[] { new string[0] } : null);
    } catch (System.Reflection.TargetInvocationException e) {
      System.Runtime.ExceptionServices.ExceptionDispatchInfo.Capture(e.InnerException).Throw();
    }
    System.Console.Out.Flush();
    System.IO.Stream output = System.Console.OpenStandardOutput();
    output.WriteByte(10);
    output.Write(token, 0, size);
    output.WriteByte(10);
    output.Flush();
    return 0;
  }
}
"""


def assemble_csharp(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    t = tag("csharp", candidate, tests, prompt or "")
    if _CS_MAIN.search(code_only(tests, "csharp")) is None:
        raise ProgramUnusable("the tests have no static Main to run")
    if _CS_MAIN.search(code_only(candidate, "csharp")) is not None:
        # with the tests' Main, two entry points: csc's CS0017, as in
        # MultiPL-E's compile (the launcher's -main: would hide it)
        raise ProgramRejected(
            "the program has more than one entry point (a Main of the candidate's and the "
            "tests'): error CS0017",
            "compile_error",
        )
    declared = _CS_CLASS.findall(code_only(tests, "csharp"))
    mains = declared + [n for n in _CS_CLASS.findall(code_only(prompt or "", "csharp"))
                        if n not in declared]  # fmt: skip
    mains = mains or ["Problem", "Program", "Solution"]
    launcher = _CS_LAUNCHER.replace("{T}", t)
    launcher = launcher.replace("__MAINS__", ", ".join(f'"{n}"' for n in mains))
    body = _CS_ASSERT.sub(f"{t}.Assert(", tests)
    flags = [a for a in (tc.compile or ()) if a not in _JUDGE_FLAGS]
    at = flags.index("{src}")
    flags[at:at] = ["-define:DEBUG", f"-main:{t}"]
    return Assembly(
        # (a newline between: a candidate ending in a // comment must not
        # swallow the tests' first line)
        f"{candidate}\n{body}\n{launcher}", {}, dataclasses.replace(tc, compile=tuple(flags))
    )
