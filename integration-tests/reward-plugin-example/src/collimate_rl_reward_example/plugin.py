"""The ``expected_stdout`` reward kind, contributed through collimate-rl's
``collimate_rl_reward_kinds`` hook.

It is written against the earlier release's two-method ``RewardSpec``
contract (``build`` + ``parse``) to show that a plugin needs nothing else:
the grader reports on a ``COLLIMATE_REWARD=`` line, which the default
``parse`` finds even when noise follows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collimate_rl import RewardSpec
from collimate_rl.plugins import PluginAnnouncement, RewardFactory, hookimpl

from . import __version__

KIND = "expected_stdout"


class ExpectedStdoutReward(RewardSpec):
    """1.0 when the candidate script prints exactly ``expected``, else 0.0."""

    def __init__(self, expected: str) -> None:
        self.expected = expected

    def build(self, candidate_path: str) -> str:
        return (
            "import io, sys\n"
            "buf = io.StringIO()\n"
            "real, sys.stdout = sys.stdout, buf\n"
            "try:\n"
            f"    exec(compile(open({candidate_path!r}).read(), 'candidate', 'exec'),"
            " {'__name__': '__main__'})\n"
            "except BaseException:\n"
            "    pass\n"
            "sys.stdout = real\n"
            f"same = buf.getvalue() == {self.expected!r}\n"
            "print('COLLIMATE_REWARD=%s' % (1.0 if same else 0.0))\n"
        )


def expected_stdout(ground_truth: Any, entry: str) -> RewardSpec:
    if not isinstance(ground_truth, Mapping) or not isinstance(ground_truth.get("stdout"), str):
        raise ValueError("expected_stdout ground truth needs a 'stdout' string")
    return ExpectedStdoutReward(ground_truth["stdout"])


@hookimpl
def collimate_rl_reward_kinds() -> Mapping[str, RewardFactory]:
    return {KIND: expected_stdout}


@hookimpl
def collimate_rl_announce() -> PluginAnnouncement:
    return PluginAnnouncement(
        name="collimate-rl-reward-example",
        version=__version__,
        detail=f"reward kind {KIND!r}",
    )
