"""TRL's Python tools against hostile cells, on a real local backend (TCP
and unix socket): a call whose code kills every process it can see, removes
the kernel's directory, fork-bombs or stops everything is the model's doing,
returned to it as the call's text, never raised (TRL would count a tool
failure, and ``PythonEnvironment`` would leave the rollout out as an
infrastructure failure), and the next call works."""

from __future__ import annotations

import pytest

from collimate_rl.testing import tool_sabotage as sab
from collimate_rl.trl import PythonEnvironment, python_tool

#: this module's backend, with the capped template (``target`` names it)
backend = sab.backend


@pytest.mark.parametrize("name", list(sab.HOSTILE))
def test_a_hostile_call_in_a_rollouts_interpreter(name: str, target: dict[str, str]) -> None:
    env = PythonEnvironment(template=sab.CAPPED["id"], timeout=1, idle_timeout=None, **target)
    env.reset(prompt="use python")
    try:
        env.python(sab.FIRST)
        hostile = env.python(sab.HOSTILE[name])  # a CollimateError would raise here
        sab.check_after(hostile, env.python(sab.AFTER))
        assert env.infra_error is None and env.calls == 3
    finally:
        env.reset()


@pytest.mark.parametrize("name", list(sab.HOSTILE))
def test_a_hostile_call_of_the_plain_tool(name: str, target: dict[str, str]) -> None:
    """The plain tool runs each call in a fresh sandbox: a hostile one
    returns its text like any other, and so does the call after it."""
    tool = python_tool(template=sab.CAPPED["id"], timeout=1, **target)
    assert isinstance(tool(sab.HOSTILE[name]), str)
    assert tool("print(1 + 1)") == "2"
