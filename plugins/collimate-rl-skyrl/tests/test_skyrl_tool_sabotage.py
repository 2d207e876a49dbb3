"""The ``python`` tool of ``collimate_code`` against hostile cells, driven
by skyrl-gym's own ``step`` / ``execute_tool``, on a real local backend (TCP
and unix socket): a call whose code kills every process it can see, removes
the kernel's directory, fork-bombs or stops everything is the model's doing,
shown to it as the call's output, never an infrastructure failure (which
would end the episode and leave the sample out), and the next call works."""

from __future__ import annotations

from typing import Any

import pytest

from collimate_rl.testing import tool_sabotage as sab

#: this module's backend, with the capped template (``target`` names it)
backend = sab.backend


def call(code: str) -> str:
    """A completion that calls the tool, as skyrl-gym's envs read one."""
    return f"Let me check.\n<tool><python>{code}</python></tool>"


@pytest.mark.parametrize("name", list(sab.HOSTILE))
def test_a_hostile_call_is_the_models_and_the_next_call_works(
    name: str, rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    config = {"tools": ["python"], "template_id": sab.CAPPED["id"], "timeout_seconds": 1, **target}
    env = skyrl_gym_module.make(
        "collimate_code", env_config=config, extras=rows.extras(rows.mbpp(1), max_turns=8)
    )
    try:
        env.step(call(sab.FIRST))
        hostile = env.step(call(sab.HOSTILE[name]))  # a CollimateError would raise here
        assert (hostile["done"], hostile["metadata"]["infra_error"]) == (False, False), hostile
        after = env.step(call(sab.AFTER))
        sab.check_after(hostile["observations"][0]["content"], after["observations"][0]["content"])
        assert after["metadata"]["infra_error"] is False
        assert env.get_metrics()["infra_error"] == 0.0
    finally:
        env.close()
