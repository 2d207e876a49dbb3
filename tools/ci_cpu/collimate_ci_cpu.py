"""CPU seconds by test file, for CI's summary: where a run's CPU goes.

CI is CPU-bound (both cores busy through every phase), so its length is the
CPU its tests burn, and most of that is not the test process's own: servers,
sandboxes, compilers, the processes a candidate forks. Those are counted
here by a cpuacct cgroup (v1) per pytest process: the process moves itself
into one when pytest starts, everything it starts afterwards is born in
it, and at each test's end the cgroup's usage since the last is added to
the test's file. At the end it writes ``<dir>/<pid>.json``: its lane (the
hatch environment and xdist worker), the files' seconds and its total.

Loaded by ``.ci/run`` only (``-p collimate_ci_cpu`` with this folder on
``PYTHONPATH``, and ``COLLIMATE_CI_CPU_DIR``); where the cgroup cannot be
made (no cgroup v1 cpuacct, not root) it does nothing.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import Any

_CPUACCT = "/sys/fs/cgroup/cpuacct"
_state: dict[str, Any] = {}
_seconds: defaultdict[str, float] = defaultdict(float)


def _usage() -> float:
    with open(os.path.join(_state["cgroup"], "cpuacct.usage")) as fh:
        return int(fh.read()) / 1e9


def _own_cpuacct_path() -> str:
    """This process's cpuacct cgroup, as /proc/self/cgroup names it."""
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if "cpuacct" in controllers.split(","):
                return path
    raise OSError("no cpuacct cgroup")


def pytest_configure(config: Any) -> None:
    out = os.environ.get("COLLIMATE_CI_CPU_DIR")
    if not out:
        return
    cgroup = os.path.join(_CPUACCT, f"collimate-ci-{os.getpid()}")
    try:
        home = os.path.join(_CPUACCT, _own_cpuacct_path().lstrip("/"))
        os.makedirs(cgroup, exist_ok=True)
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
    except OSError:
        return
    lane = os.environ.get("HATCH_ENV_ACTIVE", "?")
    _state.update(
        cgroup=cgroup, home=home, out=out, lane=lane, worker=os.environ.get("PYTEST_XDIST_WORKER")
    )
    _state["last"] = _usage()


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    if "cgroup" not in _state:
        return
    now = _usage()
    _seconds[nodeid.split("::")[0]] += now - _state["last"]
    _state["last"] = now


def pytest_unconfigure(config: Any) -> None:
    if "cgroup" not in _state:
        return
    report = {
        "lane": _state["lane"],
        "worker": _state["worker"],
        "total": _usage(),
        "files": dict(_seconds),
    }
    with open(os.path.join(_state["out"], f"{os.getpid()}.json"), "w") as fh:
        json.dump(report, fh)
    # back where it was, and the cgroup gone (unless something it started
    # lives on in it: then the run's end removes it)
    try:
        with open(os.path.join(_state["home"], "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
        os.rmdir(_state["cgroup"])
    except OSError:
        pass
