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

One module per language (:mod:`.cpp`, :mod:`.rust`, :mod:`.java`,
:mod:`.script` for JavaScript and TypeScript, :mod:`.go`, :mod:`.interpreted`
for Bash, Perl, PHP, Lua and Ruby, :mod:`.csharp`, :mod:`.dlang` for D, :mod:`.r_racket`
for R and Racket, which check the names themselves, :mod:`.scala`); what they share
(the token, the harness's names, :class:`Assembly`) is in :mod:`.common`, the
check of names a candidate redefines in :mod:`.names`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ..toolchains import Toolchain
from .common import Assembly, ProgramRejected, ProgramUnusable, new_token, run_passed
from .cpp import assemble_cpp
from .csharp import assemble_csharp
from .dlang import assemble_d
from .go import assemble_go
from .interpreted import assemble_interpreted, failed_by_output
from .java import JAVATUPLES_JAR, assemble_java
from .names import shadowed_names
from .r_racket import assemble_r_racket
from .rust import assemble_rust
from .scala import assemble_scala
from .script import assemble_script

__all__ = [
    "JAVATUPLES_JAR",
    "PROGRAM_LANGUAGES",
    "Assembly",
    "ProgramRejected",
    "ProgramUnusable",
    "assemble",
    "failed_by_output",
    "new_token",
    "run_passed",
    "shadowed_names",
]

_Assembler = Callable[[Toolchain, str, str, "str | None", bool], Assembly]
_ASSEMBLERS: Final[dict[str, _Assembler]] = {
    "cpp": assemble_cpp,
    "rust": assemble_rust,
    "javascript": assemble_script,
    "typescript": assemble_script,
    "java": assemble_java,
    "go": assemble_go,
    "bash": assemble_interpreted,
    "perl": assemble_interpreted,
    "php": assemble_interpreted,
    "lua": assemble_interpreted,
    "ruby": assemble_interpreted,
    "csharp": assemble_csharp,
    "d": assemble_d,
    "r": assemble_r_racket,
    "racket": assemble_r_racket,
    "scala": assemble_scala,
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
