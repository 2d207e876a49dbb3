"""Per-rollout egress policies (docs/wire.md §4), checked before they are sent.

A networked template gives each fork its own network namespace, so a policy
is chosen per sandbox: ``Sandbox(template, egress=...)``. The server enforces
it; this module only makes a malformed policy fail here, naming the field,
instead of as a 400 after a round trip, and spells the wire's shorthands out:

* ``{"allow": [...]}`` is an ``allowlist``;
* ``{"deny": [...]}`` and ``{"preset": ...}`` are a ``denylist``;
* ``{}`` (nothing set) is ``open``, the server's default.

``none`` and ``allowlist`` fail closed. Presets are named by the server;
:data:`RL_LEAKAGE` is the one for RL training: it blocks the places a policy
could look an answer up (code hosts, Q&A sites, dataset hubs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .wire import EGRESS_MODES, egress_mode_of

__all__ = ["EGRESS_MODES", "EGRESS_PRESETS", "RL_LEAKAGE", "egress_policy"]


#: Presets known to this client and what they are for. The server owns the
#: lists; an unknown preset name is still sent (a newer server may know it).
EGRESS_PRESETS: Final[Mapping[str, str]] = {
    "rl-leakage": "deny the usual answer sources (code hosts, Q&A sites, dataset hubs)",
}

#: The policy that blocks answer sources for an RL rollout.
RL_LEAKAGE: Final[Mapping[str, Any]] = {"preset": "rl-leakage"}

_KEYS = frozenset({"mode", "allow", "deny", "preset"})


def _names(policy: Mapping[str, Any], key: str) -> list[str]:
    value = policy[key]
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError(f"egress.{key} must be a list of domains or CIDRs, got {value!r:.80}")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"egress.{key} entries must be non-empty strings, got {item!r:.80}")
    return [item.strip() for item in value]


def egress_policy(policy: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``policy`` checked and with its mode explicit, ready for the wire.

    ``None`` stays ``None`` (the template's default applies). Raises
    :class:`ValueError` naming the offending field: an unknown key, a bad
    mode, a list that is not a list of strings, or lists that contradict
    the mode (``allow`` under ``denylist``, anything under ``open``/``none``).
    """
    if policy is None:
        return None
    if not isinstance(policy, Mapping):
        raise ValueError(f"egress must be a mapping like {{'mode': 'none'}}, got {policy!r:.80}")
    unknown = sorted(set(policy) - _KEYS)
    if unknown:
        raise ValueError(f"egress has unknown key(s) {unknown}; expected some of {sorted(_KEYS)}")
    mode = egress_mode_of(policy)
    out: dict[str, Any] = {"mode": mode}
    if "allow" in policy:
        if mode != "allowlist":
            raise ValueError(f"egress.allow only goes with mode 'allowlist', not {mode!r}")
        out["allow"] = _names(policy, "allow")
    if "deny" in policy:
        if mode != "denylist":
            raise ValueError(f"egress.deny only goes with mode 'denylist', not {mode!r}")
        out["deny"] = _names(policy, "deny")
    if "preset" in policy:
        preset = policy["preset"]
        if mode != "denylist":
            raise ValueError(f"egress.preset only goes with mode 'denylist', not {mode!r}")
        if not isinstance(preset, str) or not preset.strip():
            raise ValueError(
                f"egress.preset must be a preset name like 'rl-leakage', got {preset!r}"
            )
        out["preset"] = preset.strip()
    return out
