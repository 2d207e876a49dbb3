"""What every language's assembly shares: the result (:class:`Assembly`),
how a candidate is refused, the end-of-tests token and the secret names of
the harness (see :mod:`collimate_rl.local_backend.program_harness`)."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ..toolchains import Toolchain

__all__ = [
    "Assembly",
    "ProgramRejected",
    "ProgramUnusable",
    "b64",
    "guard_after",
    "new_token",
    "replace_argv",
    "run_passed",
    "tag",
]

#: The key the harness's names are derived from (fresh at every server start).
_KEY: Final = os.urandom(32)


class ProgramRejected(Exception):
    """The candidate is judged wrong without running (it redefines a name
    its tests use, or is not a program its language compiles); the message
    says why, ``verdict`` how it is judged."""

    def __init__(self, message: str, verdict: str = "wrong_answer") -> None:
        super().__init__(message)
        self.verdict = verdict


class ProgramUnusable(Exception):
    """The tests are not a test program this harness can run (no ``main``
    to guard): the request's fault, not the candidate's."""


@dataclass(frozen=True)
class Assembly:
    """What to compile and run for one candidate."""

    source: str
    files: dict[str, str]  # name -> base64, written beside the source
    toolchain: Toolchain


def new_token() -> str:
    """A run's end-of-tests token (its stdin)."""
    return os.urandom(16).hex()


def run_passed(stdout: bytes, token: str) -> tuple[bool, bytes]:
    """Whether the output ends with ``token`` on a line of its own, and the
    output without it (what is shown of the run)."""
    body = stdout.rstrip(b"\n")
    mark = token.encode()
    if body == mark or body.endswith(b"\n" + mark):
        return True, body[: -len(mark)].rstrip(b"\n") + b"\n"
    return False, stdout


def tag(*parts: str) -> str:
    digest = hmac.new(_KEY, "\0".join(parts).encode("utf-8", "surrogatepass"), hashlib.sha256)
    return "Collimate" + digest.hexdigest()[:20]


def b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8", "surrogatepass")).decode()


def guard_after(pattern: re.Pattern[str], tests: str, statement: str, what: str) -> str:
    found = pattern.search(tests)
    if found is None:
        raise ProgramUnusable(f"the tests have no {what} to run")
    return tests[: found.end()] + statement + tests[found.end() :]


def replace_argv(tc: Toolchain, which: str, old: str, new: Iterable[str]) -> Toolchain:
    """``tc`` with ``old`` in its ``compile`` or ``run`` argv replaced by ``new``."""
    argv = (tc.compile or ()) if which == "compile" else tc.run
    out: list[str] = []
    for arg in argv:
        out.extend(new if arg == old else (arg,))
    if which == "compile":
        return dataclasses.replace(tc, compile=tuple(out))
    return dataclasses.replace(tc, run=tuple(out))
