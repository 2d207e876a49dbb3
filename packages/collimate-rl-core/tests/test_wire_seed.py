"""A seed is exactly 64 hex digits: the client check and the server agree."""

from __future__ import annotations

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.wire import SEED_RE


@pytest.mark.parametrize("seed", ["ab" * 32 + "\n", "ab" * 31, "zz" * 32, " " + "ab" * 32])
def test_seed_pattern_rejects_near_misses(seed: str) -> None:
    assert SEED_RE.match(seed) is None


def test_server_refuses_a_seed_with_a_trailing_newline() -> None:
    with LocalCollimateBackend(isolation="process") as backend:
        answer = httpx.post(
            backend.base_url + "/v1/exec",
            json={"template_id": "sh", "command": "true", "seed": "ab" * 32 + "\n"},
        )
    assert answer.status_code == 400
    assert answer.json()["error_code"] == "invalid_seed"
