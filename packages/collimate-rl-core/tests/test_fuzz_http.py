"""Fuzzing the real local backend's HTTP server (hypothesis): arbitrary
bytes, and requests with arbitrary methods, paths, headers and JSON bodies.
Every one is answered below 500 (or the connection is closed), and the
server keeps serving. Bodies go to a session that does not exist, so the
whole exec parser runs and nothing is ever executed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collimate_rl import CollimateClient
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.hostile import probe, request

FUZZ = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    b = LocalCollimateBackend(run_slots=1)
    b.config.max_body_bytes = 1 << 16
    with b:
        yield b
        # after every example: still healthy, still serving
        with CollimateClient(b.base_url) as c:
            assert c.exec_once("py", code="print(6 * 7)")["stdout"].strip() == "42"


def contained(status: int | None) -> bool:
    return status is None or status < 500


@FUZZ
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_get_a_5xx(backend: LocalCollimateBackend, raw: bytes) -> None:
    assert contained(probe("127.0.0.1", backend.port or 0, raw + b"\r\n\r\n", timeout_s=30))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_FIELDS = ["command", "commands", "code", "files", "timeout_seconds", "seed", "egress", "id", "x"]
bodies = st.dictionaries(st.sampled_from(_FIELDS), json_values, max_size=5)
paths = st.sampled_from(
    ["/v1/health", "/v1/sessions", "/v1/sessions/sess_nope", "/v1/sessions/sess_nope/exec",
     "/v1/admin/drain/x", "/", "/v1/exec/x"]
) | st.text(alphabet="/abcv1.%?&=", max_size=30).map(lambda p: "/" + p)  # fmt: skip


@FUZZ
@given(
    st.sampled_from(["GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"]),
    paths,
    bodies | json_values,
    st.dictionaries(
        st.from_regex(r"X-[A-Za-z]{1,8}", fullmatch=True),
        st.from_regex(r"[ -~]{0,40}", fullmatch=True),
        max_size=3,
    ),
)
def test_arbitrary_requests_never_get_a_5xx(
    backend: LocalCollimateBackend,
    method: str,
    path: str,
    body: Any,
    headers: dict[str, str],
) -> None:
    if path.startswith("/v1/exec") or (path == "/v1/sessions" and method == "POST"):
        path = "/v1/sessions/sess_nope/exec"  # never start real work from random input
    if path.startswith("/v1/admin"):
        path = "/v1/admin/nope"
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    raw = request(method, path, json.dumps(body).encode(), extra=extra)
    assert contained(probe("127.0.0.1", backend.port or 0, raw, timeout_s=30))
