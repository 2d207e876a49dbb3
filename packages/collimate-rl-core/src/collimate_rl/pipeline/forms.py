"""The smallest program form each target accepts.

A grade ships the grader runtime in one of three forms (see
:mod:`collimate_rl.rewards.program`): in full, as bytecode, or not at all
when the template preloads it. Each verdict says how the guest loaded the
runtime; the next exec to that target ships no more than it needs. A guest
that cannot use the form it got asks for the full one, and the exec is
sent again in full, once.
"""

from __future__ import annotations

import threading
from typing import Any

from ..rewards.program import FORM_FOR_HOW, RuntimeForm
from .result import GradeResult
from .targets import endpoint_of

__all__ = ["FormCache", "runtime_forms"]


class FormCache:
    """The smallest form each target accepted; targets are (endpoint,
    template or session). Shared by threads and event loops; bounded."""

    _LIMIT = 4096

    def __init__(self) -> None:
        self._forms: dict[tuple[str, str], RuntimeForm] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(client: Any, template_id: str, session_id: str | None) -> tuple[str, str]:
        target = f"session:{session_id}" if session_id is not None else f"template:{template_id}"
        return endpoint_of(client), target

    def get(self, key: tuple[str, str]) -> RuntimeForm:
        return self._forms.get(key, "full")

    def learn(self, key: tuple[str, str], result: GradeResult) -> None:
        how = result.detail.get("runtime") if not result.infra_error else None
        form = FORM_FOR_HOW.get(how) if isinstance(how, str) else None
        with self._lock:
            if form is None or form == "full":
                self._forms.pop(key, None)
                return
            if len(self._forms) >= self._LIMIT:
                self._forms.clear()
            self._forms[key] = form

    def remember(self, key: tuple[str, str], form: RuntimeForm) -> None:
        with self._lock:
            self._forms[key] = form

    def forget(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._forms.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._forms.clear()


#: Process-wide: what each target accepted. ``runtime_forms.clear()`` resets.
runtime_forms = FormCache()
