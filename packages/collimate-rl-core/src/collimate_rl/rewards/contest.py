"""``ContestReward``: a program in C++, Java, JavaScript, TypeScript, Rust,
Go, Bash, Perl, PHP, Lua, Ruby, C#, D, R, Racket, Verilog, SQL, Scala, Kotlin
(a script) (or Python)
judged like a contest, by the server.

Unlike the Python graders, nothing of this reward runs as an exec program:
``grade`` sends the candidates of a group, with their problem's tests, to
the backend's ``/v1/judge``, which compiles each distinct program once (its
compile cache), runs each test in a fresh process with only that test's
input, and compares the outputs itself, outside every sandbox: a candidate
never has the expected outputs, a checker or a sibling within reach.

``tests`` are ``{"input", "output"}`` objects or ``(input, output)``
pairs (strings). ``language`` is the candidates' (``cpp``, ``java``,
``javascript``, ``typescript``, ``rust``, ``go``, ``python``, ``bash``,
``perl``, ``php``, ``lua``, ``ruby``, ``csharp``, ``d``, ``r``, ``racket``,
``verilog``, ``sql``, ``scala``, ``kotlin``), or ``auto``:
each candidate in the language its fenced block names (```` ```cpp ````),
else the one its code gives away (CodeContests' problems take any).
``time_limit`` is CPU seconds per test (a busy machine
does not turn a pass into a time limit), ``memory_limit_mb`` the memory a
run really uses, ``compare`` how outputs compare (``tokens``: the same
words, as most contest checkers do; ``lines``: line by line, trailing
spaces ignored, as open-r1; ``exact``; ``float`` with ``float_tol``).
``checker``: ``{"source", "language", "protocol"}`` for problems with many
right answers (``protocol`` ``testlib``: ``checker input output answer``,
exit 0 accepted; ``openr1``: ``checker input answer output``, prints 1 or
100 when accepted). ``scoring``: ``fraction`` of tests accepted, or ``all``.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .spec import SCORINGS, Outcome, RewardSpec

__all__ = [
    "COMPARES",
    "ContestReward",
    "JudgedReward",
    "check_limits",
    "fenced_blocks",
    "fenced_code",
    "pick_block",
    "sniff_language",
]

#: How outputs compare (see the module's docstring).
COMPARES: Final = ("tokens", "lines", "exact", "float")
_PROTOCOLS: Final = ("testlib", "openr1")
#: A fence's tag -> the judge's name of its language.
_TAGS: Final = {
    "cpp": "cpp", "c++": "cpp", "cc": "cpp", "cxx": "cpp", "java": "java",
    "javascript": "javascript", "js": "javascript", "node": "javascript",
    "nodejs": "javascript", "typescript": "typescript", "ts": "typescript",
    "rust": "rust", "rs": "rust", "go": "go", "golang": "go", "python": "python",
    "python3": "python", "py": "python", "py3": "python", "bash": "bash", "sh": "bash",
    "shell": "bash", "perl": "perl", "php": "php", "lua": "lua", "ruby": "ruby", "rb": "ruby",
    "csharp": "csharp", "cs": "csharp", "c#": "csharp", "d": "d",
    "r": "r", "racket": "racket", "rkt": "racket", "verilog": "verilog", "systemverilog": "verilog",
    "sv": "verilog", "sql": "sql", "sqlite": "sql",
    "scala": "scala", "kotlin": "kotlin", "kt": "kotlin", "kts": "kotlin",
}  # fmt: skip
#: A problem as ``/v1/judge`` takes it: these attributes of the reward.
_PROBLEM_FIELDS: Final = (
    "language", "tests", "time_limit", "memory_limit_mb",
    "compare", "float_tol", "checker", "scoring",
)  # fmt: skip
_THINK: Final = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE: Final = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)"
    r"(?:^[ \t]*(?P=fence)[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE,
)
#: What gives a program's language away when its fence has no tag.
_SNIFFS: Final = (
    (re.compile(r"^\s*#\s*include\b", re.M), "cpp"),
    (re.compile(r"\bpublic\s+static\s+void\s+main\s*\("), "java"),
    (re.compile(r"^\s*package\s+main\b", re.M), "go"),
    (re.compile(r"\bfn\s+main\s*\("), "rust"),
    (re.compile(r"\b(?:console\.log|require\s*\(|process\.stdin)"), "javascript"),
)


def sniff_language(code: str) -> str:
    """The language an untagged program is written in, by what gives it
    away (``#include``, ``public static void main``, ``package main``,
    ``fn main``, Node's ``console.log``); Python otherwise."""
    return next((language for found, language in _SNIFFS if found.search(code)), "python")


def fenced_blocks(completion: str) -> tuple[str, list[tuple[str | None, str]]]:
    """A completion without its ``<think>`` reasoning, and its non-empty
    fenced blocks, each with its language (None when its tag names none)."""
    text = _THINK.sub("", completion)
    blocks = [
        (_TAGS.get(m.group("info").strip().lower().split(" ")[0]), m.group("body"))
        for m in _FENCE.finditer(text)
        if m.group("body").strip()
    ]
    return text, blocks


def pick_block(
    blocks: list[tuple[str | None, str]], language: str | None
) -> tuple[str | None, str]:
    """The last block tagged ``language`` (any known language when None),
    else the first untagged one, else the first."""
    tagged = [b for b in blocks if b[0] is not None and (language is None or b[0] == language)]
    untagged = [b for b in blocks if b[0] is None]
    return (tagged[-1:] or untagged[:1] or blocks[:1])[0]


def fenced_code(completion: str, language: str | None) -> tuple[str, str | None]:
    """The code a completion holds and its fence's language (None when
    untagged or unfenced): reasoning in ``<think>`` dropped, the block
    :func:`pick_block` picks, else the whole text."""
    text, blocks = fenced_blocks(completion)
    if not blocks:
        return text.strip(), None
    tag, body = pick_block(blocks, language)
    return body.strip("\n").rstrip() + "\n", tag


def _test(test: Any, i: int) -> dict[str, str]:
    if isinstance(test, Mapping):
        inp, out = test.get("input", ""), test.get("output")
    elif isinstance(test, (list, tuple)) and len(test) == 2:
        inp, out = test
    else:
        raise ValueError(f"test #{i} must be {{'input', 'output'}} or an (input, output) pair")
    if not isinstance(inp, str) or not isinstance(out, str):
        raise ValueError(f"test #{i}: input and output must be strings")
    return {"input": inp, "output": out}


def check_limits(time_limit: Any, memory_limit_mb: Any) -> None:
    """ValueError unless ``time_limit`` is in (0, 60] CPU seconds and
    ``memory_limit_mb`` an integer in (0, 4096] (what the judge takes)."""
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)):
        raise ValueError("time_limit must be a number of CPU seconds")
    if not 0 < time_limit <= 60:
        raise ValueError(f"time_limit must be in (0, 60] CPU seconds, got {time_limit!r}")
    if isinstance(memory_limit_mb, bool) or not isinstance(memory_limit_mb, int):
        raise ValueError("memory_limit_mb must be an integer")
    if not 0 < memory_limit_mb <= 4096:
        raise ValueError(f"memory_limit_mb must be in (0, 4096], got {memory_limit_mb!r}")


class JudgedReward(RewardSpec):
    """A reward the server judges (``POST /v1/judge``): each candidate's
    program with its :meth:`problem`, outcomes read by :meth:`judged`."""

    interpreter = "judge"

    def build(self, candidate_path: str) -> str:
        raise TypeError(
            f"{type(self).__name__} is judged by the server (POST /v1/judge), not built "
            "into an exec program: grade it with grade() / grade_batch()"
        )

    @abc.abstractmethod
    def problem(self) -> dict[str, Any]:
        """This reward's problem, as ``/v1/judge`` takes it."""

    def source_of(self, completion: str) -> str:
        """The source judged for ``completion`` (the candidate's code)."""
        return completion

    def judged_candidate(self, completion: str) -> dict[str, str]:
        """``completion`` as a candidate of ``/v1/judge`` (its source, and
        its language when it is the candidate's own)."""
        return {"source": self.source_of(completion)}

    def judged(self, entry: Mapping[str, Any]) -> Outcome:
        """The outcome of one candidate as ``/v1/judge`` answered it."""
        if "infra_error" in entry:
            return Outcome(0.0, "infra_error", infra_message=str(entry["infra_error"]))
        reward = float(entry["reward"])
        tests = entry.get("tests") or []
        failed = [
            {"index": i, "reason": t.get("verdict"), "message": str(t.get("stderr") or "")[:300]}
            for i, t in enumerate(tests)
            if t.get("verdict") != "accepted"
        ]
        detail: dict[str, Any] = {
            "passed": int(entry.get("passed", 0)),
            "total": int(entry.get("total", len(tests))),
            "failed_indices": [f["index"] for f in failed],
            "failed": failed[:5],
            "verdicts": [t.get("verdict") for t in tests],
            "judge_verdict": entry.get("verdict"),
        }
        compiled = entry.get("compile") or {}
        if compiled.get("verdict") not in (None, "ok"):
            detail["load_error"] = f"compile_error: {str(compiled.get('output', ''))[-500:]}"
        return Outcome(reward, "passed" if reward >= 1.0 else "failed", detail)


class ContestReward(JudgedReward):
    """A program judged like a contest on ``tests`` (see the module)."""

    def __init__(
        self,
        tests: Sequence[Mapping[str, str] | Sequence[str]],
        *,
        language: str = "cpp",
        time_limit: float = 2.0,
        memory_limit_mb: int = 256,
        compare: str = "tokens",
        float_tol: float = 1e-6,
        checker: Mapping[str, str] | None = None,
        scoring: str = "fraction",
    ) -> None:
        if isinstance(tests, (str, bytes)) or not tests:
            raise ValueError("ContestReward needs a non-empty list of tests")
        if not isinstance(language, str) or not language.strip():
            raise ValueError("language must name the candidates' language, e.g. 'cpp', or 'auto'")
        check_limits(time_limit, memory_limit_mb)
        if compare not in COMPARES:
            raise ValueError(f"compare must be one of {list(COMPARES)}, got {compare!r}")
        if scoring not in SCORINGS:
            raise ValueError(f"scoring must be one of {list(SCORINGS)}, got {scoring!r}")
        if checker is not None:
            if not isinstance(checker, Mapping) or not isinstance(checker.get("source"), str):
                raise ValueError("checker must be {'source', 'language', 'protocol'}")
            if checker.get("protocol", "testlib") not in _PROTOCOLS:
                raise ValueError(f"checker protocol must be one of {list(_PROTOCOLS)}")
        self.tests = [_test(t, i) for i, t in enumerate(tests)]
        self.language = language.strip()
        self.time_limit = float(time_limit)
        self.memory_limit_mb = memory_limit_mb
        self.compare = compare
        self.float_tol = float(float_tol)
        self.checker = dict(checker) if checker is not None else None
        self.scoring = scoring

    def __repr__(self) -> str:
        return (
            f"ContestReward({len(self.tests)} tests, language={self.language!r}, "
            f"time_limit={self.time_limit:g}, memory_limit_mb={self.memory_limit_mb}, "
            f"compare={self.compare!r}{', checker' if self.checker else ''})"
        )

    def source_of(self, completion: str) -> str:
        """The program a completion holds: its fenced block in this
        language (see :func:`fenced_code`), or the whole text."""
        return self.judged_candidate(completion)["source"]

    def judged_candidate(self, completion: str) -> dict[str, str]:
        """With ``language="auto"``, each candidate is judged in the
        language its fence names, else the one its code gives away."""
        auto = self.language == "auto"
        code, tag = fenced_code(completion, None if auto else _TAGS.get(self.language.lower()))
        if not auto:
            return {"source": code}
        return {"source": code, "language": tag or sniff_language(code)}

    def problem(self) -> dict[str, Any]:
        """This reward's problem, as ``/v1/judge`` takes it."""
        return {name: getattr(self, name) for name in _PROBLEM_FIELDS}
