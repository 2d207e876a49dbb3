"""The one-command demo runs end to end on the embedded local backend."""

from __future__ import annotations

import pytest

from collimate_rl import demo


def test_demo_grades_the_group_on_the_embedded_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main([]) == 0
    out = capsys.readouterr().out
    assert "embedded local backend" in out
    assert f"{len(demo.GROUP)} grades in" in out
    # Three completions are right (one only after extract_code) and one is partly
    # right, so the mean lies in [3/8, 4/8]
    # whatever the CRN draw; the rest are failed tasks, never infra errors.
    assert "group mean reward" in out
    mean = float(out.split("group mean reward")[1].split()[0])
    assert 3 / 8 <= mean <= 4 / 8
    assert "infra_error" not in out
