"""Unprivileged uids for namespaced clones, one per live clone.

A uid of its own per clone is what makes RLIMIT_NPROC a per-clone process
limit (the kernel counts processes per real uid), and means no clone can
signal or ptrace another's processes even if it could see them. The base is
randomised per engine so two servers on one host rarely share a uid.
"""

from __future__ import annotations

import random
from collections import deque

UID_BASE = 1_000_000
UID_SPAN = 10_000


class UidPool:
    """Hands out never-used uids first, then the longest-free one: whatever
    the kernel keeps per uid after its processes are gone (a user keyring,
    say) is as old as possible when the uid comes back."""

    def __init__(self) -> None:
        self._base = UID_BASE + random.randrange(0, 1000) * UID_SPAN
        self._free: deque[int] = deque()
        self._next = 0

    def take(self) -> int:
        if self._next < UID_SPAN:
            self._next += 1
            return self._base + self._next - 1
        if self._free:
            return self._free.popleft()
        raise RuntimeError("out of clone uids")

    def give_back(self, uid: int) -> None:
        self._free.append(uid)
