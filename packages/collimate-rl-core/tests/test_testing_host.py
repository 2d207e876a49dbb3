"""A namespace test skips only on a host that truly lacks namespaces."""

from __future__ import annotations

import pytest

from collimate_rl.testing import host


def test_process_mode_failures_are_never_skipped() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        host.skip_unless_host_lacks_namespaces(RuntimeError("boom"), mode="process")


def test_engine_failure_on_a_capable_host_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "namespaces_missing_reason", lambda: None)
    with pytest.raises(RuntimeError, match="warm interpreter died"):
        host.skip_unless_host_lacks_namespaces(RuntimeError("the warm interpreter died"))


def test_a_host_without_namespaces_skips_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "namespaces_missing_reason", lambda: "not root")
    with pytest.raises(pytest.skip.Exception, match="not root"):
        host.skip_unless_host_lacks_namespaces(RuntimeError("no"))
