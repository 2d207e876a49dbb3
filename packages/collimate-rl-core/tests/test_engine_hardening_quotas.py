"""Per-clone quotas (``engine.quotas``): which mechanism is chosen, and what
it writes.

The real cgroups are exercised against the real server in
``test_engine_hardening_hostile.py`` (a clone's own limits, the memory
quota killing a bomb of many processes). This host has cgroup v1
controllers only, so the cgroup v2 path is checked here on a directory laid
out as a delegated cgroup2 tree: which files it writes, in which order of
delegation, and that it removes what it made. It proves the bookkeeping,
not the kernel's behaviour.
"""

from __future__ import annotations

import os
from pathlib import Path

from collimate_rl.local_backend.engine.api import Limits
from collimate_rl.local_backend.engine.quotas import Quotas, _try_v1, _try_v2


def test_cgroup_v2_delegation_and_limits_on_a_cgroup2_shaped_tree(tmp_path: Path) -> None:
    own = tmp_path / "service.slice"
    own.mkdir()
    (own / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (own / "cgroup.subtree_control").write_text("")
    stale = own / "collimate-999999999-1"
    (stale / "clone-1").mkdir(parents=True)  # left by a server that died
    mounts = [(str(tmp_path), "cgroup2", {"rw"})]
    quotas, why = _try_v2(mounts, {"": "/service.slice"}, True)
    assert quotas is not None, why
    assert quotas.mechanism == "cgroup2" and quotas.cpu
    assert not stale.exists()
    assert (own / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    base = Path(quotas.roots["all"])
    assert base.parent == own and base.name.startswith(f"collimate-{os.getpid()}-")
    assert (base / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    name, procs = quotas.make(Limits(memory_bytes=1 << 28, max_processes=10), 0.5)
    clone = base / name
    assert procs == [str(clone / "cgroup.procs")]
    assert (clone / "memory.max").read_text() == str(1 << 28)
    assert (clone / "memory.swap.max").read_text() == "0"
    assert (clone / "pids.max").read_text() == "14"
    assert (clone / "cpu.max").read_text() == "50000 100000"
    described = quotas.describe()
    assert described["mechanism"] == "cgroup2" and "limits.cpus" in str(described["cpu"])
    for leaf in clone.iterdir():  # (a real cgroup's files vanish with it)
        leaf.unlink()
    (base / "cgroup.subtree_control").unlink()
    quotas.close()
    assert not clone.exists() and not base.exists()


def test_cgroup_v2_without_the_controllers_is_declined_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("hugetlb\n")
    quotas, why = _try_v2([(str(tmp_path), "cgroup2", set())], {"": "/"}, False)
    assert quotas is None and "['memory', 'pids'] not available" in why
    quotas, why = _try_v1([(str(tmp_path), "cgroup2", set())], {"": "/"}, False)
    assert quotas is None and "no memory and pids hierarchies" in why


def test_the_probe_here_says_what_is_in_force() -> None:
    quotas = Quotas.probe()
    try:
        if os.geteuid() != 0:
            assert quotas.mechanism == "rlimits" and quotas.reason == "not running as root"
        elif quotas.mechanism == "rlimits":
            assert quotas.reason  # why not cgroups, said in health
            assert quotas.describe()["why_not_cgroups"] == quotas.reason
        else:
            assert quotas.roots and all(os.path.isdir(r) for r in quotas.roots.values())
            assert not quotas.cpu  # no template asked for CPU bandwidth
    finally:
        quotas.close()
    assert all(not os.path.exists(r) for r in quotas.roots.values())
