"""``/run_code``'s C# as SandboxFusion runs it, on Mono.

SandboxFusion's ``csharp`` is ``dotnet run`` of a fresh ``dotnet new
console`` project: the Debug configuration (``DEBUG`` and ``TRACE``
defined), the project's implicit usings (``System``, ``System.IO``,
``System.Linq`` ... need no ``using``: its own test prints with
``Console`` unimported), and .NET's rule that a failed ``Debug.Assert``
ends the process ("Process terminated. Assertion failed.", exit 134).

Mono differs on each, so a ``/run_code`` program is built here as
:func:`sandbox_fusion_program` says: the implicit usings put before its
code (after what must come first: ``#define``, ``extern alias``), with a
``#line`` so the compiler's messages keep the program's own line numbers;
``-define:DEBUG;TRACE`` unoptimized, as a Debug build is; and a trace
listener compiled in and named by the program's configuration file
(main.exe.config, which Mono reads beside the program) that ends the
process as .NET does (Mono's
own would print nothing and go on). ``System.Net.Http`` is the one
implicit using left out: Debian's Mono runtime does not ship it, and no
sandboxed run has a network.

What stays different: mcs compiles C# 7, not the C# 12 of a current .NET
SDK (no top-level statements, file-scoped namespaces, records or global
usings), and the base class library is Mono's.
"""

from __future__ import annotations

import base64
import dataclasses
import re
from typing import Final

from .toolchains import Toolchain

__all__ = ["sandbox_fusion_program"]

#: ``dotnet new console``'s implicit usings (but System.Net.Http, see above).
IMPLICIT_USINGS: Final = (
    "System", "System.Collections.Generic", "System.IO", "System.Linq",
    "System.Threading", "System.Threading.Tasks",
)  # fmt: skip
#: What may precede a C# file's first token: blank space, comments, and the
#: directives that must come before any using (``#define``, ``extern alias``).
_LEAD: Final = re.compile(
    r"(?:\s+|//[^\n]*|/\*.*?\*/|#[ \t]*(?:define|undef)\b[^\n]*|extern\s+alias\s+\w+\s*;)*",
    re.DOTALL,
)
_USING: Final = re.compile(r"(?m)^\s*using\s+([\w.]+)\s*;")
#: The listener's class (a program naming a class so is refused by mcs: a
#: duplicate definition, which no program here does).
_LISTENER: Final = "CollimateSandboxFusionAssert"
_LISTENER_SOURCE: Final = r"""
public sealed class {L} : System.Diagnostics.TraceListener {
  public override void Write(string message) {}
  public override void WriteLine(string message) {}
  public override void Fail(string message, string detail) {
    System.Console.Out.Flush();
    System.IO.TextWriter err = System.Console.Error;
    err.WriteLine("Process terminated. Assertion failed.");
    if (!string.IsNullOrEmpty(message)) err.WriteLine(message);
    if (!string.IsNullOrEmpty(detail)) err.WriteLine(detail);
    err.WriteLine(new System.Diagnostics.StackTrace(2, true));
    err.Flush();
    System.Environment.Exit(134);
  }
}
""".replace("{L}", _LISTENER)
_CONFIG: Final = f"""<?xml version="1.0" encoding="utf-8"?>
<configuration>
  <system.diagnostics>
    <trace>
      <listeners>
        <clear/>
        <add name="collimate" type="{_LISTENER}, main"/>
      </listeners>
    </trace>
  </system.diagnostics>
</configuration>
"""
#: The contest judge's flags a Debug build does not have.
_RELEASE_FLAGS: Final = ("-optimize+", "-define:ONLINE_JUDGE")


def with_implicit_usings(code: str) -> str:
    """``code`` with the implicit usings it lacks before its first token,
    its lines numbered as they were."""
    end = _LEAD.match(code).end()  # type: ignore[union-attr]  # (matches the empty string)
    start = code.rfind("\n", 0, end) + 1
    if not code[start:end].strip():
        end = start  # at the start of its line
    line = code.count("\n", 0, end) + 1
    has = set(_USING.findall(code))
    usings = " ".join(f"using {name};" for name in IMPLICIT_USINGS if name not in has)
    if not usings:
        return code
    gap = "\n" if end and code[end - 1] != "\n" else ""
    return f"{code[:end]}{gap}{usings}\n#line {line}\n{code[end:]}"


def sandbox_fusion_program(
    tc: Toolchain, code: str, files: dict[str, str]
) -> tuple[Toolchain, str, dict[str, str]]:
    """The toolchain, source and compile files for ``/run_code``'s C#
    ``code`` (``files``: the request's, which the run gets too)."""
    flags = [a for a in (tc.compile or ()) if a not in _RELEASE_FLAGS]
    at = flags.index("{src}")
    flags[at:at] = ["-define:DEBUG;TRACE"]
    flags.append(f"{{dir}}/{_LISTENER}.cs")
    built = dataclasses.replace(tc, compile=tuple(flags))
    ours = {
        f"{_LISTENER}.cs": base64.b64encode(_LISTENER_SOURCE.encode()).decode(),
        "build/main.exe.config": base64.b64encode(_CONFIG.encode()).decode(),
    }
    return built, with_implicit_usings(code), {**files, **ours}
