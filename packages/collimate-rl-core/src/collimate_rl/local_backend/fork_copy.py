"""A live fork's file system: children start from the parent's files as
they were at the fork, then diverge.

What is copied is the parent's private writable state: in a namespaced
clone its own in-memory root (every write to the root file system, its
``/tmp`` and working dir included) and ``/dev/shm``, but not the read-only
view of the host bound into it; in process mode its working dir. Running
processes are not copied: a child is a fresh machine with the parent's
disk, not its memory. The parent's processes are stopped for the copy
(like a VM snapshot pausing its vCPUs), so a file being written is not
seen half-way.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Sequence

from .engine.fork_clone import ForkClone
from .freeze import continue_tree, stop_tree

_HELPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_copy_helper.py")


class ForkCopyError(RuntimeError):
    """The parent's state could not be copied into a child."""


async def copy_state(parent: ForkClone, children: Sequence[ForkClone], *, frozen: bool) -> None:
    """Copy ``parent``'s writable state into every clone of ``children``.
    ``frozen``: the parent is suspended already (left stopped afterwards)."""
    if not children:
        return
    if not frozen:
        # (a standby forked meanwhile writes no file: no settling needed)
        await asyncio.to_thread(stop_tree, parent.pid, settle_s=0.0)
    try:
        if parent.mode == "ns":
            await _copy_namespaced(parent, children)
        else:
            await asyncio.to_thread(_copy_dirs, parent, children)
    finally:
        if not frozen:
            continue_tree(parent.pid)


def _copy_dirs(parent: ForkClone, children: Sequence[ForkClone]) -> None:
    if parent.host_dir is None:
        raise ForkCopyError("the parent clone has no working dir")
    for child in children:
        if child.host_dir is None:
            raise ForkCopyError("a child clone has no working dir")
        shutil.copytree(parent.host_dir, child.host_dir, symlinks=True, dirs_exist_ok=True)


async def _copy_namespaced(parent: ForkClone, children: Sequence[ForkClone]) -> None:
    spec = {
        "parent_pid": parent.pid,
        "parent_uid": parent.uid,
        "children": [[c.pid, c.uid] for c in children],
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        "-S",
        _HELPER,
        json.dumps(spec),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, err = await proc.communicate()
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if proc.returncode != 0:
        raise ForkCopyError(err.decode(errors="replace").strip() or f"exit {proc.returncode}")
