"""What a clone that never comes to be gives back (``ForkEngine._spawn``),
in both isolation modes: a fork the zygote refuses, a cgroup that cannot be
made, a clone that does not come up. Its uid goes back to the pool (once),
its cgroup is removed, its host working dir deleted, and the engine
holds no fd more than before (a free net namespace it took is not kept);
the error is the one that stopped it."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from collimate_rl.local_backend.engine import ForkEngine, TemplateSpec
from collimate_rl.local_backend.engine.fork_clone import CloneDied, ForkClone
from collimate_rl.local_backend.engine.zygote_process import ZygoteError, ZygoteProcess
from collimate_rl.testing.engine import run_with_engine

PY = TemplateSpec(id="py", kind="python")
MODES = ["process", pytest.param("namespaces", marks=pytest.mark.namespaces)]


def open_fds(engine: ForkEngine) -> set[int]:
    """The process's fds, but the free net namespaces the engine keeps (a
    clone with a net namespace of its own takes one, kept or not)."""
    return {int(fd) for fd in os.listdir("/proc/self/fd")} - set(engine._netns_free)


class Ledger:
    """Records what the engine gives back (uids, cgroups), passing it on."""

    def __init__(self, engine: ForkEngine, monkeypatch: pytest.MonkeyPatch) -> None:
        self.uids: list[int] = []
        self.quotas: list[str] = []
        self.made: list[str] = []
        self.taken: list[int] = []
        self._wrap(monkeypatch, engine._uids, "take", lambda r, *a: self.taken.append(r))
        self._wrap(monkeypatch, engine._uids, "give_back", lambda r, uid: self.uids.append(uid))
        self._wrap(monkeypatch, engine.quotas, "make", lambda r, *a: self.made.append(r[0]))
        self._wrap(monkeypatch, engine.quotas, "remove", lambda r, name: self.quotas.append(name))

    @staticmethod
    def _wrap(
        monkeypatch: pytest.MonkeyPatch, obj: Any, name: str, note: Callable[..., None]
    ) -> None:
        real = getattr(obj, name)

        def wrapped(*args: Any) -> Any:
            result = real(*args)
            note(result, *args)
            return result

        monkeypatch.setattr(obj, name, wrapped)

    def held_nothing_more(self, engine: ForkEngine) -> None:
        assert sorted(self.uids) == sorted(self.taken)  # each uid back, once
        assert sorted(self.quotas) == sorted(q for q in self.made if q)
        assert not engine._live
        clone_dirs = [d for d in os.listdir(engine.state_dir) if d.startswith("clone-")]
        assert clone_dirs == []


@pytest.mark.parametrize("mode", MODES)
def test_a_fork_the_zygote_refuses(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(self: ZygoteProcess, *args: Any) -> int:
        raise ZygoteError("refused")

    async def body(engine: ForkEngine) -> None:
        ledger = Ledger(engine, monkeypatch)
        before = open_fds(engine)
        monkeypatch.setattr(ZygoteProcess, "spawn", refuse)
        with pytest.raises(ZygoteError, match="refused"):
            await engine.open_clone(PY, egress=None)
        assert open_fds(engine) == before
        assert len(ledger.taken) == (1 if mode == "namespaces" else 0)
        ledger.held_nothing_more(engine)

    run_with_engine(mode, [PY], body)


@pytest.mark.namespaces
def test_a_cgroup_that_cannot_be_made(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_room(*args: Any) -> tuple[str, list[str]]:
        raise OSError(28, "No space left on device")

    async def body(engine: ForkEngine) -> None:
        ledger = Ledger(engine, monkeypatch)
        monkeypatch.setattr(engine.quotas, "make", no_room)
        before = open_fds(engine)
        with pytest.raises(CloneDied, match=r"cannot make the clone's cgroup: .*No space left"):
            await engine.open_clone(PY, egress=None)
        assert open_fds(engine) == before
        assert len(ledger.taken) == 1
        ledger.held_nothing_more(engine)

    run_with_engine("namespaces", [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_a_clone_that_does_not_come_up(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async def never(self: ForkClone, timeout: float) -> None:
        raise CloneDied("the clone did not come up")

    async def body(engine: ForkEngine) -> None:
        ledger = Ledger(engine, monkeypatch)
        before = open_fds(engine)
        monkeypatch.setattr(ForkClone, "wait_ready", never)
        with pytest.raises(CloneDied, match="did not come up"):
            await engine.open_clone(PY, egress=None)
        assert open_fds(engine) == before
        assert len(ledger.taken) == (1 if mode == "namespaces" else 0)
        ledger.held_nothing_more(engine)
        monkeypatch.undo()
        # and the engine goes on: the next clone comes up
        clone = await engine.open_clone(PY, egress=None)
        await clone.close()

    run_with_engine(mode, [PY], body)
