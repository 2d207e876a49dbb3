"""How one ``collimate_code`` environment is configured, and from where.

SkyRL hands an env two things: ``env_config`` (``environment.skyrl_gym.<env
class>`` of its config, which rejects keys it does not know, so a
third-party env usually gets an empty one) and ``extras`` (the dataset row
minus its prompt). So every setting is looked up, key by key, in:

1. ``env_config``: a dict, an OmegaConf ``DictConfig`` or any object with
   attributes;
2. ``extras["collimate"]``: a mapping carried by the dataset row (as
   ``datasets`` gives it: keys Arrow filled with ``None`` count as unset);
3. the environment: for the target, exactly as ``connect()`` reads it
   (``$COLLIMATE_SERVE_SOCKET``, ``$COLLIMATE_API_KEY``, ``$COLLIMATE_SERVE_URL``, ...),
   and ``$COLLIMATE_JOIN_PROMPT`` for ``join_prompt``;
4. the defaults below.

An unknown key, or a value of the wrong type, raises ``ValueError`` naming
the key and where it came from: a typo found at ``make()`` time, not as 256
silent zeros.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from collimate_rl import normalize_value
from collimate_rl.seeds import SEED_MODES, is_valid_seed

__all__ = [
    "DEFAULT_TEMPLATE",
    "JOIN_PROMPT_ENV",
    "KEYS",
    "KNOWN_TOOLS",
    "EnvSettings",
    "resolve_settings",
]

#: The python template grades run in when none is named.
DEFAULT_TEMPLATE: Final = "dkr-python311"

#: Every key a ``collimate_code`` env reads (from ``env_config`` or ``extras["collimate"]``).
KEYS: Final = (
    "base_url",
    "socket",
    "api_key",
    "template_id",
    "timeout_seconds",
    "seed_mode",
    "base_seed",
    "reuse_session",
    "on_infra_error",
    "max_turns",
    "join_prompt",
    "tools",
)

#: The environment variable ``join_prompt`` falls back to (``1``/``0``, ``true``/``false``, ...).
JOIN_PROMPT_ENV: Final = "COLLIMATE_JOIN_PROMPT"
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})

#: The tools ``tools: [...]`` may name (the ``python`` tool of :mod:`.tools`).
KNOWN_TOOLS: Final = ("python",)

#: ``on_infra_error`` values the env accepts (``skip`` has no meaning for one rollout).
ENV_INFRA_MODES: Final = ("raise", "zero")


@dataclass(frozen=True)
class EnvSettings:
    """The resolved settings of one env (plain values: it pickles)."""

    base_url: str | None = None
    socket: str | None = None
    api_key: str | None = None
    template_id: str = DEFAULT_TEMPLATE
    timeout_seconds: int = 30
    seed_mode: str = "crn"
    base_seed: str | None = None
    reuse_session: bool = False
    on_infra_error: str = "raise"
    max_turns: int | None = None  #: None: the generator's ``extras["max_turns"]``, else 1
    #: grade a HumanEval-style row's prompt + completion (the prompt's code
    #: defines the entry and the model continues it); False: the completion alone
    join_prompt: bool = True
    #: the tools the model may call between answers (:mod:`.tools`); empty:
    #: every completion is an answer, as before tools existed
    tools: tuple[str, ...] = ()

    def __repr__(self) -> str:  # never print a key
        shown = {k: getattr(self, k) for k in KEYS if k != "api_key"}
        shown["api_key"] = "***" if self.api_key else None
        return "EnvSettings(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"


def _as_mapping(source: Any, where: str) -> dict[str, Any]:
    """The keys of a dict, a ``DictConfig`` or an attribute object."""
    if source is None:
        return {}
    if isinstance(source, Mapping):
        # as `datasets` gives it: Arrow's None-filled keys unset, numpy values plain
        plain = normalize_value(source)
        return dict(plain) if isinstance(plain, Mapping) else {}
    to_container = getattr(type(source), "__module__", "").startswith("omegaconf")
    if to_container:  # a DictConfig without importing omegaconf ourselves
        from omegaconf import OmegaConf

        container = OmegaConf.to_container(source, resolve=True)
        if not isinstance(container, dict):
            raise ValueError(f"{where} must be a mapping, got a {type(source).__name__} list")
        return {str(k): v for k, v in container.items()}
    if hasattr(source, "__dict__"):
        return {k: v for k, v in vars(source).items() if not k.startswith("_")}
    raise ValueError(
        f"{where} must be a dict, an OmegaConf DictConfig or an object with attributes, "
        f"got {type(source).__name__}"
    )


def _check_keys(values: Mapping[str, Any], where: str) -> None:
    unknown = sorted(str(k) for k in values if k not in KEYS)
    if unknown:
        raise ValueError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; "
            f"known keys: {', '.join(KEYS)}"
        )


def _str_or_none(key: str, value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    raise ValueError(f"{where}.{key} must be a string, got {type(value).__name__}")


def _positive_int(key: str, value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}.{key} must be a positive integer, got {value!r}")
    return value


def _bool(key: str, value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"{where}.{key} must be true or false, got {value!r}")


def _choice(key: str, value: Any, where: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{where}.{key} must be one of {', '.join(choices)}; got {value!r}")
    return str(value)


def _tools(value: Any, where: str) -> tuple[str, ...]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{where}.tools must be a list of tool names, got {value!r}")
    unknown = [n for n in names if n not in KNOWN_TOOLS]
    if unknown:
        raise ValueError(
            f"{where}.tools: unknown tool(s) {', '.join(map(repr, unknown))}; "
            f"known tools: {', '.join(KNOWN_TOOLS)}"
        )
    return tuple(dict.fromkeys(names))


def _checked(key: str, value: Any, where: str) -> Any:
    if key in ("base_url", "socket", "api_key", "base_seed"):
        return _str_or_none(key, value, where)
    if key == "template_id":
        if not isinstance(value, str) or not value:
            raise ValueError(f"{where}.template_id must be a non-empty string, got {value!r}")
        return value
    if key in ("timeout_seconds", "max_turns"):
        return _positive_int(key, value, where)
    if key in ("reuse_session", "join_prompt"):
        return _bool(key, value, where)
    if key == "seed_mode":
        return _choice(key, value, where, SEED_MODES)
    if key == "on_infra_error":
        return _choice(key, value, where, ENV_INFRA_MODES)
    if key == "tools":
        return _tools(value, where)
    raise AssertionError(key)  # pragma: no cover - _check_keys ran first


def _join_prompt_from_environment() -> bool | None:
    raw = os.environ.get(JOIN_PROMPT_ENV)
    if raw is None or not raw.strip():
        return None
    text = raw.strip().lower()
    if text not in _TRUE | _FALSE:
        raise ValueError(f"${JOIN_PROMPT_ENV} must be true or false (1/0, yes/no), got {raw!r}")
    return text in _TRUE


def resolve_settings(env_config: Any, extras: Mapping[str, Any]) -> EnvSettings:
    """The settings of one env: ``env_config`` first, then ``extras["collimate"]``
    (key by key), then the defaults; the target falls back to the environment
    when neither names one (``connect()`` reads it when the client is made),
    and ``join_prompt`` to ``$COLLIMATE_JOIN_PROMPT``."""
    layers = [
        (_as_mapping(env_config, "env_config"), "env_config"),
        (_as_mapping(extras.get("collimate"), 'extras["collimate"]'), 'extras["collimate"]'),
    ]
    chosen: dict[str, Any] = {}
    for values, where in layers:
        _check_keys(values, where)
        for key, value in values.items():
            if key not in chosen and value is not None:
                chosen[key] = _checked(key, value, where)
    if "join_prompt" not in chosen:
        from_environment = _join_prompt_from_environment()
        if from_environment is not None:
            chosen["join_prompt"] = from_environment
    settings = EnvSettings(**chosen)
    deterministic = settings.seed_mode == "deterministic"
    if deterministic and settings.base_seed is not None and not is_valid_seed(settings.base_seed):
        raise ValueError(
            "base_seed must be 64 hex characters under seed_mode 'deterministic' "
            f"(it is the seed every rollout uses), got {settings.base_seed!r:.80}"
        )
    return settings
