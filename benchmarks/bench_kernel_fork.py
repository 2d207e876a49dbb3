"""Forking a live kernel (``Kernel.fork``): time and memory per fork (not a test).

Why: rollouts of one group can share a prefix a kernel computed once. A
kernel builds a 100 MB ``bytearray`` by a fixed computation (sha512 of
counters, joined), then forks ``--forks`` copies of itself, on a real local
backend (namespaced when the host allows it). Measured over ``--rounds``
rounds: ``build_s``, the building cell's own time; ``fork_s``,
``kernel.fork(n)`` from the SDK's call until every fork is confined and
listening; ``first_cell_s``, one cell on each fork in turn; and each
process's RSS, PSS and USS (``/proc/PID/smaps_rollup``), for the parent and
each fork, right after the fork and after each fork wrote one byte of the
object (a copy-on-write fault copies that page, not the 100 MB).

Target: the forks ready in less time than building the object once; a
fork's USS a small fraction of the object.

    hatch run bench:one benchmarks/bench_kernel_fork.py [--forks 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from _results import add_out_option, write_results

from collimate_rl import CollimateClient, Kernel, Sandbox
from collimate_rl.local_backend import LocalCollimateBackend

BUILD = (
    "import hashlib, os\n"
    "data = bytearray().join(hashlib.sha512(i.to_bytes(8, 'little')).digest()"
    " for i in range(1_562_500))\n"
    "len(data)"
)
TEMPLATE = {
    "id": "kernel-bench",
    "kind": "python",
    "limits": {"processes": 128, "memory": "4g", "cpu_seconds": 600},
}
# RSS, PSS and USS (kB) of each pid given, from its smaps_rollup
MEMORY = (
    "import json, sys\nout = {}\nfor pid in sys.argv[1:]:\n"
    "    fields = {}\n"
    "    for line in open(f'/proc/{pid}/smaps_rollup'):\n"
    "        parts = line.split()\n"
    "        if len(parts) >= 2 and parts[1].isdigit():\n"
    "            fields[parts[0].rstrip(':')] = int(parts[1])\n"
    "    out[pid] = [fields['Rss'], fields['Pss'],"
    " fields['Private_Clean'] + fields['Private_Dirty']]\n"
    "print(json.dumps(out))"
)
MIB = 1024.0


def memory(sandbox: Sandbox, pids: list[str]) -> list[list[float]]:
    """[RSS, PSS, USS] in MiB per pid."""
    script = "/tmp/.bench-memory.py"
    sandbox.upload_bytes(script, MEMORY.encode())
    out = sandbox.exec(command=f"python3 {script} {' '.join(pids)}")
    assert out.exit_code == 0, out
    table = json.loads(out.stdout)
    return [[kb / MIB for kb in table[pid]] for pid in pids]


def pid_of(sandbox: Sandbox, kernel: Kernel) -> str:
    out = sandbox.exec(command=f"cat {kernel.directory}/pid")
    assert out.exit_code == 0, out
    return out.stdout.strip()


def one_round(sandbox: Sandbox, forks: int) -> dict[str, Any]:
    with sandbox.kernel(timeout=300) as parent:
        built = parent.run(BUILD)
        assert built.ok and built.value == "100000000", built
        t0 = time.perf_counter()
        children = parent.fork(forks)
        fork_s = time.perf_counter() - t0
        try:
            t1 = time.perf_counter()
            for child in children:
                seen = child.run("len(data)")
                assert seen.ok and seen.value == "100000000", seen
            first_cell_s = time.perf_counter() - t1
            pids = [pid_of(sandbox, parent)] + [pid_of(sandbox, c) for c in children]
            after_fork = memory(sandbox, pids)
            for i, child in enumerate(children):
                wrote = child.run(f"data[0] = {i % 256}")
                assert wrote.ok, wrote
            after_write = memory(sandbox, pids)
        finally:
            for child in children:
                child.close()
    return {
        "build_s": built.duration_s,
        "fork_s": fork_s,
        "first_cell_s": first_cell_s,
        "isolation": children[0].isolation,
        "parent_mib": after_fork[0],
        "forks_mib_after_fork": after_fork[1:],
        "forks_mib_after_write": after_write[1:],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--forks", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    add_out_option(p)
    args = p.parse_args(argv)
    with (
        LocalCollimateBackend([TEMPLATE], use_plugins=False) as backend,
        CollimateClient(backend.base_url) as client,
        Sandbox("kernel-bench", client=client) as sandbox,
    ):
        isolation = backend.health()["isolation"]
        rounds = [one_round(sandbox, args.forks) for _ in range(args.rounds)]

    def median(key: str) -> float:
        return statistics.median(r[key] for r in rounds)

    def per_fork(key: str, column: int) -> float:
        return statistics.median(m[column] for r in rounds for m in r[key])

    build_s, fork_s, first_s = median("build_s"), median("fork_s"), median("first_cell_s")
    columns = ("RSS", "PSS", "USS")
    parent = [statistics.median(r["parent_mib"][c] for r in rounds) for c in range(3)]
    after_fork = [per_fork("forks_mib_after_fork", c) for c in range(3)]
    after_write = [per_fork("forks_mib_after_write", c) for c in range(3)]
    print(f"isolation: {isolation}; forks confined by: {rounds[0]['isolation']}")
    print(f"build the 100 MB object once: {build_s:.2f} s (median of {args.rounds})")
    print(
        f"fork {args.forks} kernels, all ready: {fork_s:.3f} s "
        f"({fork_s / build_s:.0%} of one build; target < 100%)"
    )
    print(f"then one cell on each fork in turn: {first_s:.3f} s")
    print("memory (MiB)         " + "  ".join(f"{c:>7}" for c in columns))
    print("parent kernel        " + "  ".join(f"{v:7.1f}" for v in parent))
    print("per fork, forked     " + "  ".join(f"{v:7.1f}" for v in after_fork))
    print("per fork, 1 B written" + "  ".join(f"{v:7.1f}" for v in after_write))
    figures = {
        "isolation": isolation,
        "fork_isolation": rounds[0]["isolation"],
        "forks": args.forks,
        "build_s": build_s,
        "fork_s": fork_s,
        "first_cell_s": first_s,
        "fork_over_build": fork_s / build_s,
        "target_met": fork_s < build_s,
        "parent_mib": dict(zip(columns, parent, strict=True)),
        "per_fork_mib_after_fork": dict(zip(columns, after_fork, strict=True)),
        "per_fork_mib_after_write": dict(zip(columns, after_write, strict=True)),
        "rounds": rounds,
    }
    charts: list[dict[str, object]] = [
        {
            "name": "time",
            "kind": "bar",
            "title": f"100 MB kernel state: build once vs fork {args.forks} (median)",
            "categories": ["seconds"],
            "series": [
                {"name": "build once", "values": [build_s]},
                {"name": f"fork {args.forks}, all ready", "values": [fork_s]},
            ],
            "y_label": "seconds, lower is better",
            "x_label": f"{args.rounds} rounds",
        },
        {
            "name": "memory",
            "kind": "bar",
            "title": "memory per process (MiB): shared copy-on-write",
            "categories": list(columns),
            "series": [
                {"name": "parent kernel", "values": parent},
                {"name": "each fork, forked", "values": after_fork},
                {"name": "each fork, 1 byte written", "values": after_write},
            ],
            "y_label": "MiB",
            "x_label": "from /proc/PID/smaps_rollup",
        },
    ]
    write_results(__file__, args, figures, charts)
    return 0 if fork_s < build_s else 1


if __name__ == "__main__":
    raise SystemExit(main())
