"""The settings of ``compute_score``: keyword arguments first (verl passes
``reward.custom_reward_function.reward_kwargs`` to every call), then the
environment, then the defaults.

verl also passes keywords of its own (``reward_router_address``,
``reward_model_tokenizer``, ``sandbox_fusion_url``, ...): every keyword that
is not one of :data:`OPTION_NAMES` is left alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["ENV_ON_INFRA_ERROR", "OPTION_NAMES", "ScoreOptions", "options_from"]

OnInfraError = Literal["raise", "zero"]
SeedMode = Literal["crn", "vanilla", "deterministic"]

#: ``zero`` turns an infrastructure failure into a flagged 0.0 for every
#: call that does not say otherwise (the default, ``raise``, raises it).
ENV_ON_INFRA_ERROR: Final = "COLLIMATE_VERL_ON_INFRA_ERROR"
#: The template graded in, when no ``template`` keyword names one.
ENV_TEMPLATE: Final = "COLLIMATE_VERL_TEMPLATE"

OPTION_NAMES: Final = frozenset(
    {
        "base_url",
        "unix_socket",
        "api_key",
        "template",
        "timeout_seconds",
        "on_infra_error",
        "seed_mode",
        "entry",
        "join_prompt",
    }
)


@dataclass(frozen=True)
class ScoreOptions:
    """Where and how one ``compute_score`` call grades."""

    base_url: str | None = None
    unix_socket: str | None = None
    api_key: str | None = None
    template: str = "dkr-python311"
    timeout_seconds: int = 30
    on_infra_error: OnInfraError = "raise"
    seed_mode: SeedMode = "crn"
    entry: str | None = None
    #: a HumanEval-style prompt's code (``extra_info["prompt"]``, else a
    #: ``prompt`` the ground truth carries) goes in front of the response
    join_prompt: bool = True

    @property
    def target(self) -> tuple[str | None, str | None, str | None]:
        """What picks the client (``None`` everywhere: the environment, as
        :func:`collimate_rl.connect` reads it)."""
        return (self.base_url, self.unix_socket, self.api_key)


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> Any:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def _text(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string; got {value!r}")
    return value


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false; got {value!r}")
    return value


def options_from(kwargs: Mapping[str, Any]) -> ScoreOptions:
    """The options named in ``kwargs`` (others ignored), checked."""
    on_infra = kwargs.get("on_infra_error") or os.environ.get(ENV_ON_INFRA_ERROR) or "raise"
    timeout = kwargs.get("timeout_seconds", 30)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0:
        raise ValueError(f"timeout_seconds must be a positive integer; got {timeout!r}")
    return ScoreOptions(
        base_url=_text("base_url", kwargs.get("base_url")),
        unix_socket=_text("unix_socket", kwargs.get("unix_socket")),
        api_key=_text("api_key", kwargs.get("api_key")),
        template=_text("template", kwargs.get("template"))
        or os.environ.get(ENV_TEMPLATE)
        or "dkr-python311",
        timeout_seconds=timeout,
        on_infra_error=_choice(
            f"on_infra_error (or ${ENV_ON_INFRA_ERROR})", on_infra, ("raise", "zero")
        ),
        seed_mode=_choice(
            "seed_mode", kwargs.get("seed_mode", "crn"), ("crn", "vanilla", "deterministic")
        ),
        entry=_text("entry", kwargs.get("entry")),
        join_prompt=_flag("join_prompt", kwargs.get("join_prompt", True)),
    )
