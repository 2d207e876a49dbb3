"""``collimate demo | burst | rl | launch | fleet | top`` against a real
local backend: each view's final figures checked against the server's own
counters (``GET /v1/stats``), plain text without a terminal or with
``NO_COLOR``, Rich in a pseudo-terminal, and every sandbox deleted after
Ctrl-C."""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from collimate_rl import GatewayClient, connect
from collimate_rl.cli import main as collimate
from collimate_rl.local_backend import LocalCollimateBackend

PRO = "col_pro_cli-views-secret"
ANSI = "\x1b["


def unstyled(text: str) -> str:
    """``text`` without its terminal escape sequences."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[PRO]) as be:
        yield be


def stats(be: LocalCollimateBackend) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(be.base_url + "/v1/stats", timeout=10).json()
    return body


def delta(before: dict[str, Any], after: dict[str, Any], key: str) -> int:
    return int(after[key]) - int(before[key])


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = collimate(argv)
    out = capsys.readouterr().out
    return code, out


def ctrl_c_once(
    argv: list[str], ready: Callable[[], bool], never: str, env: dict[str, str] | None = None
) -> str:
    """``collimate ARGV`` in a process of its own, sent a Ctrl-C (SIGINT) as
    soon as ``ready()`` (which must come within 60 s: else ``never``): its
    output, once it exited 130."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "collimate_rl.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready():
            assert time.monotonic() < deadline, never
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    return out.decode()


def run_in_pty(argv: list[str], *, no_color: bool = False) -> tuple[int, str]:
    """``python -m collimate_rl.cli argv`` with a pseudo-terminal as its
    stdout; the exit code and everything it wrote."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    if no_color:
        env["NO_COLOR"] = "1"
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 160, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "collimate_rl.cli", *argv],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                break
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return code, b"".join(chunks).decode("utf-8", errors="replace")


# -- the counters route --------------------------------------------------


def test_stats_counts_outcomes_latencies_and_pool_hits(backend: LocalCollimateBackend) -> None:
    before = stats(backend)
    with connect(backend.base_url) as client:
        client.exec_once("dkr-python311", command="true")
        client.exec_once("dkr-python311", command="exit 3")
        client.exec_once("dkr-python311", code="while True: pass", timeout_seconds=1)
    after = stats(backend)
    assert delta(before, after, "execs_run") == 3
    got = {k: after["verdicts"][k] - before["verdicts"][k] for k in ("ok", "nonzero", "timeout")}
    assert got == {"ok": 1, "nonzero": 1, "timeout": 1}
    assert after["exec_ms"]["samples"] == before["exec_ms"]["samples"] + 3
    assert 0 < after["exec_ms"]["p50"] <= after["exec_ms"]["p99"]
    forks = lambda s: s["clones"]["pool_hits"] + s["clones"]["pool_misses"]  # noqa: E731
    assert forks(after) - forks(before) == 3
    assert after["clones"]["busy"] == 0 and after["running"] == 0
    # the gateway wire serves the same counters (a Bearer request is the gateway's)
    gw = httpx.get(
        backend.base_url + "/v1/stats", headers={"Authorization": f"Bearer {PRO}"}, timeout=10
    )
    assert gw.status_code == 200 and gw.json()["execs_run"] == after["execs_run"]
    wrong = httpx.get(
        backend.base_url + "/v1/stats", headers={"Authorization": "Bearer col_pro_nope"}, timeout=10
    )
    assert wrong.status_code == 401


# -- burst ------------------------------------------------------------------


def test_burst_figures_match_the_server_counters(
    backend: LocalCollimateBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    before = stats(backend)
    code, out = run_cli(["burst", "-n", "5", "-c", "2", "--url", backend.base_url], capsys)
    after = stats(backend)
    assert code == 0, out
    assert "5/5 done, 0 failed, 0 live" in out
    assert "execs: 5 answered, 5 exited 0" in out
    assert delta(before, after, "execs_run") == 5
    assert delta(before, after, "sessions_created") == 5
    assert delta(before, after, "sessions_ended") == 5
    assert after["sessions"] == before["sessions"]
    # the histogram accounts for every lifecycle
    counts = [int(m) for m in re.findall(r"ms\s+(\d+)", out.split("lifecycle histogram:")[1])]
    assert sum(counts) == 5
    assert ANSI not in out  # not a terminal: plain lines


def test_burst_draws_with_rich_in_a_terminal_and_plain_with_no_color(
    backend: LocalCollimateBackend,
) -> None:
    before = stats(backend)
    code, out = run_in_pty(["burst", "-n", "3", "-c", "3", "--url", backend.base_url])
    assert code == 0, out
    assert ANSI in out and "3/3 done" in unstyled(out)
    code, out = run_in_pty(
        ["burst", "-n", "3", "-c", "3", "--url", backend.base_url], no_color=True
    )
    assert code == 0, out
    assert ANSI not in out and "3/3 done" in out
    assert delta(before, stats(backend), "execs_run") == 6


def test_ctrl_c_deletes_every_sandbox_created(backend: LocalCollimateBackend) -> None:
    before = stats(backend)
    out = ctrl_c_once(
        ["burst", "-n", "100000", "-c", "4", "--exec-cmd", "sleep 0.2", "--url", backend.base_url],
        lambda: stats(backend)["sessions_created"] - before["sessions_created"] >= 8,
        "the burst never got going",
        env={**os.environ, "NO_COLOR": "1"},
    )
    after = stats(backend)
    created = delta(before, after, "sessions_created")
    assert created >= 8 and delta(before, after, "sessions_ended") == created
    assert after["sessions"] == before["sessions"]
    assert "0 live" in out


# -- launch -----------------------------------------------------------------


def test_launch_brings_up_n_and_deletes_them(
    backend: LocalCollimateBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    before = stats(backend)
    code, out = run_cli(
        ["launch", "-n", "6", "-c", "3", "--hold", "0", "--url", backend.base_url], capsys
    )
    after = stats(backend)
    assert code == 0, out
    assert "6/6 sandboxes up, 0 failed" in out and "deleted: 6" in out
    assert delta(before, after, "sessions_created") == 6
    assert delta(before, after, "sessions_ended") == 6
    assert delta(before, after, "execs_run") == 0  # create-only
    assert ANSI not in out


# -- rl ---------------------------------------------------------------------


def test_rl_grades_real_rewards_from_a_data_file(
    backend: LocalCollimateBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truth = [{"input": [2], "output": 4}, {"input": [3], "output": 6}]
    rows = [
        {"id": 1, "completion": "```python\ndef solve(x):\n    return 2 * x\n```"},
        {"id": 2, "completion": "```python\ndef solve(x):\n    return x + 1\n```"},
    ]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({**r, "ground_truth": truth}) + "\n" for r in rows))
    before = stats(backend)
    code, out = run_cli(
        ["rl", "--data", str(data), "--steps", "2", "--batch", "2", "--url", backend.base_url],
        capsys,
    )
    after = stats(backend)
    assert code == 0, out
    assert "step 2/2, 4 rollouts graded" in out and "mean reward 0.500" in out
    assert out.count("R 0.500") == 2  # each step: one right, one wrong
    assert "verdicts: failed 2, passed 2" in out
    execs = int(re.search(r"server: \+(\d+) execs for 4 rollouts", out).group(1))  # type: ignore[union-attr]
    assert execs == delta(before, after, "execs_run") >= 1


def test_rl_on_the_embedded_backend_with_the_built_in_sample(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = run_cli(["rl", "--steps", "1", "--batch", "8"], capsys)
    assert code == 0, out
    assert "embedded local backend" in out and "8 rollouts graded" in out
    mean = float(out.split("mean reward")[-1].split()[0])
    assert 3 / 8 <= mean <= 4 / 8  # as the demo: three right, one partly


# -- top --------------------------------------------------------------------


def test_top_shows_the_servers_counters(
    backend: LocalCollimateBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    with connect(backend.base_url) as client:
        client.exec_once("dkr-python311", command="exit 4")
    code, out = run_cli(
        ["top", "--count", "2", "--interval", "0.1", "--url", backend.base_url], capsys
    )
    now = stats(backend)
    assert code == 0, out
    v = now["verdicts"]
    assert f"verdicts: {v['ok']} ok, {v['nonzero']} nonzero exit, {v['timeout']} timeout" in out
    assert f", {now['execs_run']} execs, " in out
    assert f"p50 {now['exec_ms']['p50']:.1f}  p99 {now['exec_ms']['p99']:.1f}" in out
    assert "during the watch: +0 execs" in out
    assert ANSI not in out


# -- fleet and demo (the gateway wire) --------------------------------------


def test_fleet_shows_the_tenants_pools(
    backend: LocalCollimateBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as gw:
        made = gw.create_template(name="views-fleet", image="python:3.11", width=2)
        tid = str(made["id"])
        try:
            code, out = run_cli(
                [
                    "fleet",
                    "--watch",
                    "--until-converged",
                    "--interval",
                    "0.1",
                    "--url",
                    backend.base_url,
                    "--api-key",
                    PRO,
                ],
                capsys,
            )
            body = gw.get_template(tid)
        finally:
            gw.delete_template(tid)
    assert code == 0, out
    assert body["converge_state"] == "converged"
    spares = int(body["warm"]) + int(body["frozen"])
    assert f"{tid}  Live  {spares}/{body['declared']}" in out
    assert "converged" in out.splitlines()[-1 - len(body["per_node"]) - 1]


def test_demo_bakes_grades_and_deletes_its_template(
    backend: LocalCollimateBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    before = stats(backend)
    code, out = run_cli(
        [
            "demo",
            "--rounds",
            "1",
            "--width",
            "2",
            "--name",
            "views-demo",
            "--url",
            backend.base_url,
            "--api-key",
            PRO,
        ],
        capsys,
    )
    assert code == 0, out
    assert "Live, pool 2/2" in out and "1 rounds of 8 completions" in out
    mean = float(out.split("group mean reward")[1].split()[0])
    assert 3 / 8 <= mean <= 4 / 8
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as gw:
        assert not [t for t in gw.list_templates() if t.get("name") == "views-demo"]
    after = stats(backend)
    execs = delta(before, after, "execs_run")
    # on the gateway every exec has a sandbox of its own, deleted after it
    assert execs >= 1 and delta(before, after, "sessions_created") == execs
    assert after["sessions"] == before["sessions"]
    # the round's grades: the server's latency samples grew by its execs
    assert after["exec_ms"]["samples"] == min(2048, before["exec_ms"]["samples"] + execs)


# -- every view's Rich frames, in a terminal ----------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["launch", "-n", "3", "-c", "3", "--hold", "0"], "3 / 3"),
        (["rl", "--steps", "1", "--batch", "8"], "8 rollouts graded"),
        (["top", "--count", "2", "--interval", "0.1"], "during the watch: +0 execs"),
        (["demo", "--rounds", "1", "--width", "2", "--name", "views-pty-demo"], "1 rounds of 8"),
        (["fleet"], "fleet: "),
    ],
    ids=["launch", "rl", "top", "demo", "fleet"],
)
def test_each_view_draws_its_final_frame_with_rich(
    backend: LocalCollimateBackend, argv: list[str], expected: str
) -> None:
    target = ["--url", backend.base_url]
    if argv[0] in ("demo", "fleet"):
        target += ["--api-key", PRO]
    code, out = run_in_pty([*argv, *target])
    assert code == 0, out
    assert ANSI in out
    assert expected in unstyled(out)
    assert "Traceback" not in out


def test_ctrl_c_while_launch_holds_deletes_them_all(backend: LocalCollimateBackend) -> None:
    before = stats(backend)
    out = ctrl_c_once(
        ["launch", "-n", "6", "-c", "3", "--hold", "120", "--url", backend.base_url],
        lambda: stats(backend)["sessions"] - before["sessions"] >= 6,
        "the launch never brought them up",
    )
    after = stats(backend)
    assert delta(before, after, "sessions_created") == 6
    assert delta(before, after, "sessions_ended") == 6
    assert after["sessions"] == before["sessions"]
    assert "deleted: 6" in out


def test_demo_leaves_a_template_the_tenant_already_had(
    backend: LocalCollimateBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as gw:
        tid = str(gw.create_template(name="views-mine", image="python:3.11", width=2)["id"])
        try:
            code, out = run_cli(
                [
                    "demo",
                    "--rounds",
                    "1",
                    "--width",
                    "2",
                    "--name",
                    "views-mine",
                    "--url",
                    backend.base_url,
                    "--api-key",
                    PRO,
                ],
                capsys,
            )
            assert code == 0, out
            assert f"graded in {tid}" in out
            assert gw.get_template(tid)["phase"] == "Live"  # still there
        finally:
            gw.delete_template(tid)


# -- the figures and the Rich-or-plain rule ------------------------------------


def test_percentiles_are_observed_values_and_the_histogram_counts_every_sample() -> None:
    from collimate_rl.views.figures import histogram, percentiles

    values = [float(v) for v in range(1, 101)]
    assert percentiles(values, (50.0, 99.0, 100.0)) == {50.0: 50.0, 99.0: 99.0, 100.0: 100.0}
    assert percentiles([7.0], (1.0, 50.0)) == {1.0: 7.0, 50.0: 7.0}
    rows = histogram([1.0, 1.5, 2.0, 9.0, 10.0], buckets=3)
    assert [c for _, _, c in rows] == [3, 0, 2]
    assert sum(c for _, _, c in histogram(values, 7)) == 100
    assert histogram([4.0, 4.0]) == [(4.0, 4.0, 2)]


class _Tty:
    def isatty(self) -> bool:
        return True


def test_rich_only_on_a_terminal_without_no_color_or_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    from collimate_rl._terminal import wants_rich

    monkeypatch.delenv("NO_COLOR", raising=False)
    tty: Any = _Tty()
    assert wants_rich(tty)
    assert not wants_rich(tty, plain=True)
    assert not wants_rich(io.StringIO())  # not a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wants_rich(tty)


@pytest.mark.parametrize("no_color", [False, True])
def test_doctor_in_a_terminal_reports_each_language_as_the_host_has_it(no_color: bool) -> None:
    """``collimate doctor`` driven in a pseudo-terminal: plain lines (it has
    no colours to drop), one per language, each ``ok`` exactly when the
    host's toolchain is found, and its last line the count of what is off."""
    from collimate_rl.local_backend.toolchains import MissingToolchain, find_toolchains

    code, out = run_in_pty(["doctor"], no_color=no_color)
    assert code == 0, out
    assert ANSI not in out
    lines = [line.strip() for line in out.splitlines()]
    for name, toolchain in find_toolchains().items():
        line = next(x for x in lines if x[4:].startswith(f"language {name}"))
        assert line.startswith("ok  ") == (not isinstance(toolchain, MissingToolchain)), line
    assert re.fullmatch(r"\d+ ok, \d+ missing or limited", lines[-1]), lines[-1]
