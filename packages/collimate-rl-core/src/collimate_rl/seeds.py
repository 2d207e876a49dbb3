"""Common-random-numbers (CRN) seed helpers.

Every exec carries a 64-hex-char seed for the guest's randomness (python
templates seed ``random`` from it), and the backend echoes the seed it used,
so any rollout can be replayed. How seeds are chosen across a GRPO group is a
variance-reduction decision, made explicit here:

* ``"vanilla"``: ``None`` per rollout, so each one draws fresh entropy;
* ``"crn"``: one seed shared by the whole group, so environment noise is
  identical for every candidate and cancels in the group-relative advantage;
* ``"deterministic"``: the fixed :data:`DET_SEED` everywhere (a control arm
  with no environment noise at all).

:func:`seed_from_key` derives a stable seed from any key (a prompt id, a
dataset row), identical to the earlier release's derivation so seeds recorded
with it still replay.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Final, Literal, TypeGuard

from .wire import SEED_RE

__all__ = [
    "DET_SEED",
    "SEED_MODES",
    "SeedMode",
    "check_seed",
    "fresh_seed",
    "group_seeds",
    "is_valid_seed",
    "seed_from_key",
]

#: The seed of the ``"deterministic"`` arm (the earlier release's value).
DET_SEED: Final = "deadbeef" * 8

SeedMode = Literal["vanilla", "crn", "deterministic"]
SEED_MODES: Final[tuple[str, ...]] = ("vanilla", "crn", "deterministic")


def fresh_seed() -> str:
    """32 bytes from the OS CSPRNG, as 64 lowercase hex chars."""
    return secrets.token_hex(32)


def is_valid_seed(seed: object) -> TypeGuard[str]:
    """True for exactly 64 hex chars (either case): what the wire accepts."""
    return isinstance(seed, str) and SEED_RE.fullmatch(seed) is not None


def check_seed(seed: str | None) -> None:
    """Raise ``ValueError`` unless ``seed`` is ``None`` or a valid seed (what
    a sandbox and a gateway session check before an exec is sent)."""
    if seed is not None and not is_valid_seed(seed):
        raise ValueError(f"seed must be 64 hex chars or None, got {seed!r:.80}")


def seed_from_key(key: str, salt: str = "") -> str:
    """A stable seed for ``key``: ``sha256(salt + NUL + key)``.

    The NUL separator keeps ``("ab", "c")`` and ``("a", "bc")`` apart. Use a
    salt per run or per epoch to get new, still reproducible, draws.
    """
    return hashlib.sha256(f"{salt}\0{key}".encode()).hexdigest()


def group_seeds(n: int, mode: str = "crn", base_seed: str | None = None) -> list[str | None]:
    """Seeds for a group of ``n`` rollouts (see the module docstring for modes).

    ``base_seed`` pins the shared seed of ``"crn"`` (default: one fresh seed
    per call); ``"vanilla"`` returns ``None`` entries so the backend draws
    and echoes a fresh seed per rollout.
    """
    if mode not in SEED_MODES:
        raise ValueError(f"mode must be one of {SEED_MODES}, got {mode!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if base_seed is not None and not is_valid_seed(base_seed):
        raise ValueError("base_seed must be 64 hex chars")
    if mode == "vanilla":
        return [None] * n
    if mode == "deterministic":
        return [DET_SEED] * n
    shared = base_seed if base_seed is not None else fresh_seed()
    return [shared] * n
