"""Settings: slime's ``args`` first, then ``COLLIMATE_*`` variables; every
bad value stops the call with a message naming where it came from."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from collimate_rl.seeds import DET_SEED
from collimate_rl.slime import SlimeConfig, resolve_config
from collimate_rl.slime.config import SETTINGS, Target


def args(**kw: Any) -> argparse.Namespace:
    return argparse.Namespace(**kw)


def test_defaults_without_settings() -> None:
    config = resolve_config(args(), environ={})
    assert config == SlimeConfig()
    assert (config.template, config.timeout_seconds, config.seed_mode) == (
        "dkr-python311",
        30,
        "crn",
    )
    assert (config.entry, config.concurrency, config.on_infra_error) == ("solve", None, "raise")
    assert config.target == Target() and config.reward_dict is False
    assert config.join_prompt is True


def test_every_setting_from_the_environment() -> None:
    env = {
        "COLLIMATE_TEMPLATE": "py",
        "COLLIMATE_BASE_URL": "http://127.0.0.1:9",
        "COLLIMATE_API_KEY": "col_demo_x",
        "COLLIMATE_TIMEOUT_SECONDS": "45",
        "COLLIMATE_SEED_MODE": "Deterministic",
        "COLLIMATE_BASE_SEED": "AB" * 32,
        "COLLIMATE_ENTRY": "main",
        "COLLIMATE_CONCURRENCY": "8",
        "COLLIMATE_ON_INFRA_ERROR": "remove",
        "COLLIMATE_REWARD_DICT": "yes",
        "COLLIMATE_JOIN_PROMPT": "off",
    }
    assert set(env) == {name.upper() for name in SETTINGS}
    config = resolve_config(args(), environ=env)
    assert config == SlimeConfig(
        template="py",
        target=Target(base_url="http://127.0.0.1:9", api_key="col_demo_x"),
        timeout_seconds=45,
        seed_mode="deterministic",
        base_seed="ab" * 32,
        entry="main",
        concurrency=8,
        on_infra_error="remove",
        reward_dict=True,
        join_prompt=False,
    )


def test_args_win_over_the_environment_and_none_falls_through() -> None:
    env = {"COLLIMATE_TEMPLATE": "from-env", "COLLIMATE_TIMEOUT_SECONDS": "7"}
    # YAML (slime's --custom-config-path) gives typed values.
    config = resolve_config(
        args(collimate_template="from-args", collimate_timeout_seconds=None), environ=env
    )
    assert (config.template, config.timeout_seconds) == ("from-args", 7)


def test_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLIMATE_CONCURRENCY", "3")
    assert resolve_config(args()).concurrency == 3


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "collimate_timeout_seconds",
            0,
            "args.collimate_timeout_seconds must be a whole number >= 1",
        ),
        ("collimate_timeout_seconds", "ten", "whole number"),
        ("collimate_timeout_seconds", True, "whole number"),
        ("collimate_concurrency", -1, "args.collimate_concurrency must be a whole number >= 1"),
        (
            "collimate_seed_mode",
            "random",
            "args.collimate_seed_mode must be one of vanilla, crn, deterministic",
        ),
        ("collimate_on_infra_error", "zero", "must be one of raise, remove"),
        ("collimate_reward_dict", "maybe", "args.collimate_reward_dict must be true or false"),
        ("collimate_join_prompt", "body", "args.collimate_join_prompt must be true or false"),
        ("collimate_base_seed", "1234", "collimate_base_seed must be 64 hex characters"),
        ("collimate_template", "  ", "args.collimate_template must be a non-empty string"),
        ("collimate_template", 3, "must be a non-empty string"),
        ("collimate_entry", "not a name", "collimate_entry must be a Python function name"),
        ("collimate_base_url", "127.0.0.1:8080", "must start with http://, https:// or unix:/"),
        ("collimate_base_url", "unix:relative.sock", "unix:/absolute/path"),
    ],
)
def test_bad_values_name_their_setting(name: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=_literal(message)):
        resolve_config(args(**{name: value}), environ={})


def test_a_bad_variable_is_named_as_a_variable() -> None:
    with pytest.raises(ValueError, match=_literal("$COLLIMATE_TIMEOUT_SECONDS must be a whole")):
        resolve_config(args(), environ={"COLLIMATE_TIMEOUT_SECONDS": "-5"})


def test_unix_socket_urls() -> None:
    for url in ("unix:/run/x.sock", "unix:///run/x.sock"):
        config = resolve_config(args(collimate_base_url=url), environ={})
        assert config.target == Target(unix_socket="/run/x.sock")
        assert config.target.connect_kwargs() == {"unix_socket": "/run/x.sock"}
    with pytest.raises(ValueError, match="gateway"):
        resolve_config(args(collimate_base_url="unix:/x", collimate_api_key="col_x"), environ={})


def test_base_seed_needs_a_seeded_mode() -> None:
    with pytest.raises(ValueError, match="vanilla"):
        resolve_config(
            args(collimate_seed_mode="vanilla", collimate_base_seed=DET_SEED), environ={}
        )


def test_reward_dict_follows_slimes_reward_key() -> None:
    # --reward-key set: a dict, unless turned off explicitly (then an error).
    assert resolve_config(args(reward_key="score"), environ={}).reward_dict is True
    assert resolve_config(args(reward_key=None), environ={}).reward_dict is False
    with pytest.raises(ValueError, match="slime would index a float"):
        resolve_config(args(reward_key="score", collimate_reward_dict=False), environ={})
    with pytest.raises(ValueError, match="launch with --reward-key score"):
        resolve_config(args(reward_key=None, collimate_reward_dict=True), environ={})
    with pytest.raises(ValueError, match="'accuracy' is not a key of the reward dict"):
        resolve_config(args(reward_key="accuracy"), environ={})
    # args without slime's reward_key attribute (a harness): as asked.
    assert resolve_config(args(collimate_reward_dict="1"), environ={}).reward_dict is True


def _literal(text: str) -> str:
    import re

    return re.escape(text)
