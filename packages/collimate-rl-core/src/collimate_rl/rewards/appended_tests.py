"""``ProgramReward``: the candidate's code followed by its dataset's test
program, run once: MultiPL-E, HumanEval-X and MBXP in C++, Java,
JavaScript, TypeScript, Rust and Go, and MultiPL-E's Bash, Perl, PHP, Lua,
Ruby, C#, D, R, Racket and Scala.

Those datasets judge ``prompt + completion + tests``: the prompt opens the
function (includes, a doc comment, the signature), the model writes its
body, the tests (a ``main`` with asserts, Go test functions) call it, and
the program passes when it exits 0. The server runs it so that only a
program whose tests ran to their end passes (an early ``exit(0)``, a forged
"OK" or a redefined ``assert`` scores 0.0; see the local backend's
``program_harness``), and reports ``accepted``, ``wrong_answer``,
``runtime_error`` (a failed assert among them), ``compile_error``,
``time_limit``, ``memory_limit`` or ``output_limit``.

What the candidate is: a completion continuing the prompt (a base model's
text, cut at the row's ``stop_tokens``), or a chat answer whose fenced
block holds the whole function (its signature is found, whatever the
spacing, and the prompt's text before the signature is kept).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from .contest import JudgedReward, check_limits, fenced_blocks, pick_block

__all__ = [
    "PROGRAM_LANGUAGES",
    "ProgramReward",
    "program_language",
    "without_trailing_comments",
]

#: The languages test programs run in, by the names the server knows.
PROGRAM_LANGUAGES: Final = (
    "cpp", "java", "javascript", "typescript", "rust", "go", "bash", "perl", "php", "lua", "ruby",
    "r", "racket",
    "scala",
)  # fmt: skip
#: The datasets' own names for them (MultiPL-E's ``language`` column holds
#: file extensions: ``rs``, ``go_test.go``; HumanEval-X's task ids ``CPP``,
#: ``JavaScript``).
_NAMES: Final = {
    "cpp": "cpp",
    "c++": "cpp",
    "java": "java",
    "js": "javascript",
    "javascript": "javascript",
    "node": "javascript",
    "nodejs": "javascript",
    "ts": "typescript",
    "typescript": "typescript",
    "rs": "rust",
    "rust": "rust",
    "go": "go",
    "golang": "go",
    "go_test.go": "go",
    # MultiPL-E's sh, pl and rb (its pl is Perl: it has no Prolog)
    "sh": "bash",
    "bash": "bash",
    "pl": "perl",
    "perl": "perl",
    "php": "php",
    "lua": "lua",
    "rb": "ruby",
    "ruby": "ruby",
    # MultiPL-E's cs and d
    "cs": "csharp",
    "csharp": "csharp",
    "c#": "csharp",
    "d": "d",
    # MultiPL-E's r and rkt
    "r": "r",
    "rkt": "racket",
    "racket": "racket",
    "scala": "scala",
}


def program_language(name: Any) -> str | None:
    """The language a dataset names (``rs``, ``go_test.go``, ``CPP``), as
    test programs run it, or None when they do not run in it."""
    return _NAMES.get(str(name).strip().lower()) if isinstance(name, str) else None


def without_trailing_comments(text: str) -> str:
    """``text`` without the comments that end it (a docstring-like ``/*
    ... */`` or ``//`` lines after a signature, as HumanEval-X's C++ prompts
    have), and without trailing blank space."""
    while True:
        text = text.rstrip()
        if text.endswith("*/") and text.rfind("/*") >= 0:
            text = text[: text.rfind("/*")]
            continue
        start = text.rfind("\n") + 1
        if text[start:].lstrip().startswith("//"):
            text = text[:start]
            continue
        return text


def _signature(prompt: str) -> str | None:
    """The prompt's last code line (the signature the model continues),
    comments after it skipped."""
    lines = [line.strip() for line in without_trailing_comments(prompt).splitlines()]
    lines = [line for line in lines if line]
    return lines[-1] if lines else None


def _spaced(text: str) -> re.Pattern[str]:
    """``text`` matched with any spacing between its characters."""
    chars = [re.escape(c) for c in text if not c.isspace()]
    return re.compile(r"\s*".join(chars))


class ProgramReward(JudgedReward):
    """The candidate's code, then ``tests``, compiled and run once by the
    server: 1.0 when the tests run to their end and the program exits 0,
    else 0.0 (see the module).

    ``language``: ``cpp``, ``java``, ``javascript``, ``typescript``,
    ``rust``, ``go``, ``bash``, ``perl``, ``php``, ``lua``, ``ruby``, ``r``,
    ``racket`` or ``scala`` (or a dataset's name for one: ``js``, ``rs``,
    ``go_test.go``, ``sh``, ``pl``, ``rb``, ``rkt``). ``prompt``: the code
    the completion continues (the C++ tests are compiled apart from the
    candidate, from the prompt's declarations). ``stop_tokens``: where a
    raw completion is cut, as the dataset's generation stops (MultiPL-E's
    ``stop_tokens``).
    ``time_limit``: CPU seconds of the run; ``typecheck``: TypeScript type
    errors fail the compile (MultiPL-E), or only syntax errors do (MBXP,
    whose reference solutions do not all type-check).
    """

    def __init__(
        self,
        tests: str,
        *,
        language: str,
        prompt: str | None = None,
        stop_tokens: Sequence[str] = (),
        time_limit: float = 10.0,
        memory_limit_mb: int = 1024,
        typecheck: bool = True,
    ) -> None:
        if not isinstance(tests, str) or not tests.strip():
            raise ValueError("ProgramReward needs the test program's source (tests)")
        found = program_language(language)
        if found is None:
            raise ValueError(
                f"test programs run in {list(PROGRAM_LANGUAGES)} "
                "(or js, ts, rs, go_test.go, sh, pl, rb, rkt), "
                f"not {language!r}"
            )
        if prompt is not None and not isinstance(prompt, str):
            raise ValueError("prompt must be the code the completion continues, or None")
        if isinstance(stop_tokens, str) or not all(isinstance(t, str) and t for t in stop_tokens):
            raise ValueError("stop_tokens must be a list of non-empty strings")
        check_limits(time_limit, memory_limit_mb)
        self.tests = tests
        self.language = found
        self.prompt = prompt or None
        self.stop_tokens = list(stop_tokens)
        self.time_limit = float(time_limit)
        self.memory_limit_mb = memory_limit_mb
        self.typecheck = bool(typecheck)

    def __repr__(self) -> str:
        return (
            f"ProgramReward(language={self.language!r}, {len(self.tests)} chars of tests, "
            f"time_limit={self.time_limit:g}, memory_limit_mb={self.memory_limit_mb})"
        )

    def problem(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "program": {"tests": self.tests, "prompt": self.prompt, "typecheck": self.typecheck},
            "time_limit": self.time_limit,
            "memory_limit_mb": self.memory_limit_mb,
        }

    def _cut(self, text: str) -> str:
        """A raw completion cut at the first stop token, as generation stops."""
        ends = [i for i in (text.find(t) for t in self.stop_tokens) if i >= 0]
        return text[: min(ends)] if ends else text

    def source_of(self, completion: str) -> str:
        """The source judged for ``completion``: the prompt and the body the
        model wrote, or the prompt's head and the whole function it wrote."""
        text, blocks = fenced_blocks(completion)
        code = pick_block(blocks, self.language)[1] if blocks else self._cut(text)
        if not self.prompt:
            return code
        signature = _signature(self.prompt)
        found = _spaced(signature.rstrip("{")).search(code) if signature else None
        if found is None:
            return self.prompt + code
        at = self.prompt.rfind(signature) if signature else -1
        head = self.prompt[: self.prompt.rfind("\n", 0, at) + 1] if at >= 0 else ""
        whole = code[found.start() :].rstrip()
        if re.match(r"\s*\}", self.tests) and whole.endswith("}"):
            whole = whole[:-1].rstrip()  # the tests close the function (MultiPL-E)
        return head + whole + "\n"
