"""One-shot exec latency and CPU cost of the local backend's engine (not a test).

Why: what an exec costs apart from HTTP and the server, per isolation mode.

Runs N sequential one-shot python execs (open a clone, run ``print(1)``,
release it, as the server does, or ``--teardown close``) straight against the
engine, in each isolation mode, and prints p50 / p99 latency (up to the
exec's result: the server answers before the teardown) plus CPU per exec
(teardown included). CPU is measured machine-wide from /proc/stat
(every process and kernel thread, so namespace teardown in kernel workers is
counted too) unless it can put itself in a cpuacct cgroup (root, cgroup v1),
which then counts exactly this process tree.

    python benchmarks/bench_engine_oneshot.py [--n 300] [--modes process,namespaces]
        [--concurrency 1] [--teardown release|close]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from _results import add_out_option, write_results
from _sides import machine_busy_seconds

from collimate_rl.local_backend.engine import ExecJob, TemplateSpec, make_engine

CGROUP = f"/sys/fs/cgroup/cpuacct/collimate-bench-{os.getpid()}"


def join_cpu_cgroup() -> bool:
    """Account CPU of this process tree only (cgroup v1 cpuacct), when we can."""
    try:
        os.makedirs(CGROUP, exist_ok=True)
        with open(os.path.join(CGROUP, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
        return True
    except OSError:
        return False


def leave_cpu_cgroup() -> None:
    try:
        with open("/sys/fs/cgroup/cpuacct/cgroup.procs", "w") as fh:
            fh.write(str(os.getpid()))
    except OSError:
        return
    for _ in range(50):  # the last clones may still be exiting
        try:
            os.rmdir(CGROUP)
            return
        except OSError:
            time.sleep(0.1)


def busy_seconds() -> float:
    if os.path.isdir(CGROUP):
        with open(os.path.join(CGROUP, "cpuacct.usage")) as fh:
            return int(fh.read()) / 1e9
    return machine_busy_seconds()


async def run_mode(
    mode: str, n: int, concurrency: int, pool: int, teardown: str
) -> dict[str, object]:
    engine = make_engine(mode, pool_size=pool)  # type: ignore[arg-type]
    template = TemplateSpec(id="py", kind="python")
    await engine.start([template])
    await asyncio.sleep(0.5)  # let the pools fill
    lat: list[float] = []
    fork: list[float] = []

    async def one(i: int) -> None:
        t0 = time.perf_counter()
        clone = await engine.open_clone(template, egress=None)
        try:
            out = await clone.run(ExecJob("code", "print(1)", f"{i:064x}", 10.0))
            lat.append((time.perf_counter() - t0) * 1000)
        finally:
            await (clone.release() if teardown == "release" else clone.close())
        fork.append(out.fork_time_ms)
        assert out.output == b"1\n", out

    sem = asyncio.Semaphore(concurrency)

    async def guarded(i: int) -> None:
        async with sem:
            await one(i)

    for i in range(20):  # warm-up
        await one(i)
    lat.clear()
    fork.clear()
    cpu0, wall0, self0 = busy_seconds(), time.perf_counter(), time.process_time()
    await asyncio.gather(*(guarded(i) for i in range(n)))
    cpu1, wall1, self1 = busy_seconds(), time.perf_counter(), time.process_time()
    await engine.close()
    lat.sort()
    row: dict[str, object] = {
        "isolation": engine.isolation,
        "p50_ms": statistics.median(lat),
        "p99_ms": lat[int(len(lat) * 0.99) - 1],
        "fork_p50_ms": statistics.median(fork),
        "cpu_per_exec_ms": (cpu1 - cpu0) / n * 1000,
        "engine_process_cpu_per_exec_ms": (self1 - self0) / n * 1000,
        "execs_per_s": n / (wall1 - wall0),
    }
    print(
        f"{engine.isolation:10s} c={concurrency} pool={pool} {teardown} n={n}: "
        f"p50 {row['p50_ms']:.2f} ms  p99 {row['p99_ms']:.2f} ms  "
        f"fork p50 {row['fork_p50_ms']:.2f} ms  "
        f"CPU/exec {row['cpu_per_exec_ms']:.2f} ms "
        f"(engine process {row['engine_process_cpu_per_exec_ms']:.2f} ms)  "
        f"throughput {row['execs_per_s']:.0f}/s"
    )
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--modes", default="process,namespaces")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--pool", type=int, default=2)
    ap.add_argument("--teardown", choices=("release", "close"), default="release")
    add_out_option(ap)
    args = ap.parse_args()
    scoped = join_cpu_cgroup()
    accounting = "this process tree (cpuacct cgroup)" if scoped else "machine-wide"
    print("CPU accounting:", accounting)
    modes: dict[str, object] = {}
    try:
        for mode in args.modes.split(","):
            modes[mode] = asyncio.run(
                run_mode(mode, args.n, args.concurrency, args.pool, args.teardown)
            )
    finally:
        if scoped:
            leave_cpu_cgroup()
    write_results(__file__, args, {"cpu_accounting": accounting, "modes": modes}, [])


if __name__ == "__main__":
    main()
