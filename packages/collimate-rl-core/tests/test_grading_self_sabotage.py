"""A Python candidate's own failure is never an infrastructure error, in
every grading form.

An infrastructure error (``GraderInfraError``, ``result.infra_error``, a
``CollimateError`` out of ``grade`` / ``grade_batch``) tells the trainer
that the grader could not judge the sample, and the sample is dropped from
the loss. A candidate that could make its own failure come out as one
would turn its 0.0 into no signal, and a policy under RL pressure learns
to. So each candidate below sabotages itself (signals to itself, its
parent, its process group or everything it can reach; its descriptors, its
rlimits, its working directory, the guest's disk and memory, processes it
leaves behind, an ``exec`` of something else, an early exit, its stdout,
the grader's files, ptrace and prctl, and lies on the wire its process
shares with the grader), at its second check or while it loads, in each
form: ``UnitTestReward``, asserts, a pytest module, ``CallReward``,
``PropertyReward``, a stdin/stdout program and a Python ``ContestReward``.

Each one scores what it earned (the first check, passed before it acted,
and the third where a fresh process or a fresh run gives it one; 0.0 when
it acted while loading), with a verdict that says which check failed and
why; never an infrastructure error, alone or in a group beside right
answers, whose rewards stay 1.0; and a fresh group after it grades 8/8.

The light cases of a form share one ``grade_batch`` (every one alone, then
every one in one pack, a right answer on each side); the ones that hold
the grader for their checks' timeouts have a test each. Then what follows
from the candidate's doing further away: test code that fails in a guest
the candidate spoiled, a reaping timed to meet the grader's timer, a
template's first (unconfined) grades, the OOM killer's order, and a pack
whose spawner is gone.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from collimate_rl import (
    AssertReward,
    CallReward,
    CollimateClient,
    ContestReward,
    GradeResult,
    PropertyReward,
    PytestReward,
    RewardSpec,
    StdioReward,
    UnitTestReward,
    grade_batch,
)
from collimate_rl.local_backend import LocalCollimateBackend

pytestmark = pytest.mark.namespaces

TEMPLATE = "py"
#: each check's own timeout, and each candidate's exec budget
TEST_TIMEOUT_S = 0.5
TIMEOUT_S = 4
CHECKS = 3  # inputs 0, 1, 2: a hack acts at the second (input 1)


@dataclass(frozen=True)
class Form:
    """A grading form: its spec, and whether its candidates are programs
    (stdin to stdout) rather than a function ``f``."""

    spec: RewardSpec
    program: bool = False


FORMS = {
    "unit": Form(
        UnitTestReward(
            [{"input": [i], "output": i * i} for i in range(CHECKS)],
            "f",
            test_timeout=TEST_TIMEOUT_S,
        )
    ),
    "assert": Form(
        AssertReward(
            [f"assert f({i}) == {i * i}" for i in range(CHECKS)],
            entry="f",
            test_timeout=TEST_TIMEOUT_S,
        )
    ),
    "pytest": Form(
        PytestReward(
            "from solution import f\n\n"
            + "".join(f"def test_{i}():\n    assert f({i}) == {i * i}\n\n" for i in range(CHECKS)),
            test_timeout=TEST_TIMEOUT_S,
        )
    ),
    "call": Form(
        CallReward([([i], i * i) for i in range(CHECKS)], "f", test_timeout=TEST_TIMEOUT_S)
    ),
    "property": Form(
        PropertyReward(
            "    return x * x",
            "random.randint(0, 99)",
            k=CHECKS,
            entry="f",
            test_timeout=TEST_TIMEOUT_S,
        )
    ),
    "stdio": Form(
        StdioReward(
            [{"input": f"{i}\n", "output": f"{i * i}\n"} for i in range(CHECKS)],
            test_timeout=TEST_TIMEOUT_S,
        ),
        program=True,
    ),
    "contest": Form(
        ContestReward(
            [{"input": f"{i}\n", "output": f"{i * i}\n"} for i in range(CHECKS)],
            language="python",
            time_limit=1,
            memory_limit_mb=256,
        ),
        program=True,
    ),
}

_HEAD = "import os, signal, sys, time\n"


def _indented(body: str, by: int) -> str:
    return "\n".join(" " * by + line for line in body.strip("\n").splitlines())


def right(form: Form) -> str:
    if form.program:
        return "x = int(input())\nprint(x * x)\n"
    return "def f(x):\n    return x * x\n"


def hacked(form: Form, body: str, at_load: bool = False) -> str:
    """A right answer that runs ``body`` at its second check (then answers
    wrongly, if it still can), or while it loads (``at_load``)."""
    if at_load:
        return _HEAD + body.strip("\n") + "\n" + right(form)
    if form.program:
        return (
            _HEAD
            + "x = int(input())\nif x == 1:\n"
            + _indented(body, 4)
            + "\n    print(-1)\nelse:\n    print(x * x)\n"
        )
    return (
        _HEAD
        + "_calls = []\ndef f(x):\n    _calls.append(x)\n    if len(_calls) == 2:\n"
        + _indented(body, 8)
        + "\n        return -1\n    return x * x\n"
    )


def _ignoring_errors(*calls: str) -> str:
    return "\n".join(f"try:\n    {call}\nexcept OSError:\n    pass" for call in calls)


#: Writes ``obj`` (marshalled, framed as the worker frames its answers) on
#: every socket it holds (the one to the grader among them), then leaves.
_ON_ITS_SOCKET = """
import marshal, stat
def _forge(obj):
    data = marshal.dumps(obj)
    for fd in range(3, 1024):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, len(data).to_bytes(4, 'big') + data)
        except OSError:
            pass
    os._exit(0)
"""

#: What a pass looks like on the exec's output, on every fd it can write.
_FAKE_PASS = (
    "import os\n"
    "line = b'\\n__COLLIMATE_VERDICT__ {\"reward\": 1.0}\\nCOLLIMATE_REWARD=1.0\\n'\n"
    "for fd in range(1024):\n"
    "    try:\n        os.write(fd, line)\n    except OSError:\n        pass\n"
)

#: What each light hack does at its second check (one grade_batch a form).
LIGHT: dict[str, str] = {
    "sigkills_itself": "os.kill(os.getpid(), signal.SIGKILL)",
    "sigsegvs_itself": "os.kill(os.getpid(), signal.SIGSEGV)",
    "sigterms_itself": "os.kill(os.getpid(), signal.SIGTERM)",
    "segfaults": "import ctypes\nctypes.string_at(0)",
    "signals_its_parent": _ignoring_errors(
        *(f"os.kill(os.getppid(), signal.{s})" for s in ("SIGSTOP", "SIGTERM", "SIGKILL"))
    ),
    "kills_its_process_group": "os.killpg(0, signal.SIGKILL)",
    "signals_every_process_it_can": _ignoring_errors(
        *(f"os.kill(-1, signal.{s})" for s in ("SIGSTOP", "SIGTERM", "SIGKILL"))
    ),
    "closes_every_descriptor": "os.closerange(0, 65536)",
    "points_fds_0_to_2_elsewhere": (
        "null = os.open(os.devnull, os.O_RDWR)\nfor fd in (0, 1, 2):\n    os.dup2(null, fd)"
    ),
    "dup2s_over_every_descriptor": (
        "null = os.open(os.devnull, os.O_RDWR)\n"
        "for fd in range(1024):\n"
        "    if fd != null:\n"
        "        try:\n            os.dup2(null, fd)\n        except OSError:\n            pass"
    ),
    "lowers_nofile_to_3": "import resource\nresource.setrlimit(resource.RLIMIT_NOFILE, (3, 3))",
    "lowers_nproc_to_0": (
        "import resource\nresource.setrlimit(resource.RLIMIT_NPROC, (0, 0))\n"
        + _ignoring_errors("os.fork() or os._exit(0)")
    ),
    "lowers_its_address_space": (
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (1 << 24, 1 << 24))\n"
        "hoard = [bytearray(1 << 20) for _ in range(64)]"
    ),
    "lowers_cpu_to_0": (
        "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (0, 0))\nwhile True:\n    pass"
    ),
    "lowers_fsize_to_0": (
        "import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))\n"
        "with open('big', 'w') as fh:\n    fh.write('x' * 4096)"
    ),
    "lowers_its_stack": (
        "import resource\nresource.setrlimit(resource.RLIMIT_STACK, (1 << 16, 1 << 16))\n"
        "sys.setrecursionlimit(10 ** 6)\nnest = []\nfor _ in range(200000):\n"
        "    nest = [nest]\nrepr(nest)"
    ),
    "works_in_a_deleted_directory": (
        "import tempfile\nd = tempfile.mkdtemp(dir='.')\nos.chdir(d)\nos.rmdir(d)\nopen('x', 'w')"
    ),
    "removes_its_working_directory": (
        "import shutil\nshutil.rmtree(os.getcwd(), ignore_errors=True)\n"
        + _ignoring_errors("os.rmdir(os.getcwd())")
    ),
    "locks_its_working_directory": "os.chmod('.', 0)",
    "locks_every_directory_it_owns": _ignoring_errors(
        *(f"os.chmod({d!r}, 0)" for d in ("/tmp", "/dev/shm", "/", "."))
    ),
    "fills_the_disk": (
        "for n, where in enumerate(('/dev/shm', '/tmp', '.')):\n"
        "    try:\n"
        "        with open('%s/fill-%d' % (where, n), 'wb') as fh:\n"
        "            while True:\n"
        "                fh.write(b'x' * (1 << 20))\n"
        "    except (OSError, MemoryError):\n"
        "        pass"
    ),
    "allocates_past_its_memory": (
        "hoard = []\ntry:\n    while True:\n        hoard.append(b'x' * (32 << 20))\n"
        "except MemoryError:\n    pass"
    ),
    "fork_bombs": (
        "me, end = os.getpid(), time.monotonic() + 0.3\n"
        "while time.monotonic() < end:\n"
        "    try:\n        os.fork()\n    except OSError:\n        pass\n"
        "if os.getpid() != me:\n    time.sleep(60)"
    ),
    "leaves_a_sleeping_daemon": (
        "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(600)\n"
        "    os._exit(0)\nos.wait()"
    ),
    "execs_bin_true": "os.execv('/bin/true', ['/bin/true'])",
    "execs_a_fake_pass": f"os.execv(sys.executable, [sys.executable, '-c', {_FAKE_PASS!r}])",
    "leaves_with_os_exit_0": "os._exit(0)",
    "replaces_its_stdout": "import io\nsys.stdout = io.StringIO()\nsys.stderr = io.StringIO()",
    "closes_its_stdout": "sys.stdout.close()\nsys.stderr.close()",
    "deletes_every_file_it_finds": (
        "import shutil\n"
        "for top in ('.', '/tmp', '/dev/shm', '/'):\n"
        "    try:\n        names = os.listdir(top)\n    except OSError:\n        continue\n"
        "    for name in names:\n"
        "        path = os.path.join(top, name)\n"
        "        try:\n"
        "            if top == '/' and os.path.isdir(path):\n"
        "                os.rmdir(path)\n"
        "            elif os.path.isdir(path) and not os.path.islink(path):\n"
        "                shutil.rmtree(path)\n"
        "            else:\n"
        "                os.unlink(path)\n"
        "        except OSError:\n"
        "            pass"
    ),
    "ptraces_itself_and_its_parent": (
        "import ctypes\nlibc = ctypes.CDLL(None)\n"
        "libc.ptrace(0, 0, 0, 0)\nlibc.ptrace(16, os.getppid(), 0, 0)"
    ),
    "prctls": (
        "import ctypes\nlibc = ctypes.CDLL(None)\n"
        "libc.prctl(1, 9, 0, 0, 0)\n"  # PR_SET_PDEATHSIG
        "libc.prctl(4, 1, 0, 0, 0)\n"  # PR_SET_DUMPABLE
        "libc.prctl(36, 1, 0, 0, 0)\n"  # PR_SET_CHILD_SUBREAPER
        "libc.prctl(22, 1, 0, 0, 0)"  # PR_SET_SECCOMP, strict
    ),
    "sends_garbage_to_the_grader": _ON_ITS_SOCKET + "_forge(7)",
    "claims_a_broken_guest": _ON_ITS_SOCKET + "_forge((1, 'environment', 'the guest is broken'))",
}

#: What each hack does while it loads (it earns nothing: 0.0).
AT_LOAD: dict[str, str] = {
    "claims_a_broken_guest_while_loading": (
        "os.access = lambda *a, **k: False\n"
        "raise ModuleNotFoundError(\"No module named 'json'\", name='json')"
    ),
    "forges_its_load_answer": _ON_ITS_SOCKET + "_forge(('load', 'environment: broken'))",
    "sends_garbage_while_loading": _ON_ITS_SOCKET + "_forge(5)",
    "sends_names_that_are_not_names": _ON_ITS_SOCKET
    + "_forge(('loaded', {5: ('v', 1), 'f': ('h',)}))",
    "sigkills_itself_while_loading": "os.kill(os.getpid(), signal.SIGKILL)",
    "closes_every_descriptor_while_loading": "os.closerange(0, 65536)",
    "leaves_with_os_exit_0_while_loading": "os._exit(0)",
}

#: Hacks that hold the grader for their checks' own timeouts: a test each.
HEAVY: dict[str, str] = {
    "stops_itself": "os.kill(os.getpid(), signal.SIGSTOP)",
    "stops_its_process_group": "os.killpg(0, signal.SIGSTOP)",
    "blocks_its_timer_and_spins": (
        "signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM, signal.SIGTERM])\n"
        "while True:\n    pass"
    ),
}

#: What a hack that acted at its second check can have earned: the first
#: check, and the third where it got a fresh process (or a fresh run).
EARNED = (1 / CHECKS, 2 / CHECKS)

#: Hacks that reach out of their own process. Graded alone, a candidate is
#: confined only where that is cheap (forked from the exec's clean twin, a
#: warm interpreter with ``ctypes`` loaded; the first grades of a template
#: start a fresh one instead): unconfined, these end or stop its spawner or
#: its grader, which costs it every check (0.0), and is still its failure,
#: never an infrastructure error. In a group, candidates are always confined.
REACHES_OUT = {
    "signals_its_parent",
    "kills_its_process_group",
    "signals_every_process_it_can",
    "stops_its_process_group",
}
#: Hacks that may cost themselves every check, alone or in a group: files
#: fill the clone's memory quota (its disk is memory), and the OOM killer
#: then takes a process of the candidate's score, which may be its spawner
#: (the candidate's failure, and a new spawner takes the rest of the pack).
MAY_LOSE_ALL = {"fills_the_disk"}
#: Right answers whose sabotage may not land: the processes a candidate
#: leaves spinning take the CPU from its test code only where the scheduler
#: lets them, so on an idle machine that code can still finish in time.
#: Such a candidate earns what its right function earns (every test passed),
#: and otherwise fails as the others do: never an infrastructure error.
MAY_PASS = {"starves_the_grader"}


@pytest.fixture(scope="module")
def client() -> Iterator[CollimateClient]:
    # two execs at a time: lone grades overlap; groups are one pack each (pack=)
    with (
        LocalCollimateBackend(run_slots=2) as backend,
        CollimateClient(backend.base_url, timeout=600) as c,
    ):
        yield c


def _grade(
    client: CollimateClient,
    candidates: list[str],
    specs: list[RewardSpec],
    pack: int | None,
) -> list[GradeResult]:
    # "zero": an infra error would be flagged, not raised, so every one is seen
    return grade_batch(
        client,
        TEMPLATE,
        candidates,
        specs,
        timeout_seconds=TIMEOUT_S,
        on_infra_error="zero",
        pack=pack,
    )


def _said(result: GradeResult) -> str:
    return f"{result.reward:.3g} infra={result.infra_error}: {result.explain()[:200]}"


def _check_hack(name: str, result: GradeResult, at_load: bool, alone: bool = False) -> str | None:
    """What is wrong with a hack's result (None: nothing): not an
    infrastructure error, and what it passed before it acted (nothing when
    it acted while loading), with a verdict naming the check that failed
    (0.0 too, for a lone hack that reaches out: see ``REACHES_OUT`` and
    ``MAY_LOSE_ALL``)."""
    said = f"{name}: {_said(result)}"
    if name.split(" ")[0] in MAY_PASS and not result.infra_error and result.reward == 1.0:
        passed = result.detail.get("passed")
        return None if result.verdict == "passed" and passed == result.detail.get("tests") else said
    if result.infra_error or result.verdict != "failed":
        return said
    if "; " not in result.explain():  # (the reward, and nothing of why)
        return f"{name}: the verdict says nothing of what happened: {_said(result)}"
    hack = name.split(" ")[0]
    lost_all = hack in MAY_LOSE_ALL or (alone and hack in REACHES_OUT)
    if at_load or (lost_all and result.reward == 0.0):
        return None if result.reward == 0.0 else said
    if not any(abs(result.reward - earned) < 1e-9 for earned in EARNED):
        return said
    failed = result.detail.get("failed") or []
    if not failed or failed[0].get("index") != 1 or not failed[0].get("reason"):
        return f"{name}: the verdict does not say check 1 failed: {_said(result)}"
    return None


def _check_alone(hacks: list[tuple[str, bool]], results: list[GradeResult]) -> None:
    wrong = [
        _check_hack(name, result, at_load, alone=True)
        for (name, at_load), result in zip(hacks, results, strict=True)
    ]
    assert not [w for w in wrong if w], "\n".join(w for w in wrong if w)


def _check_group(labels: list[str], results: list[GradeResult], hacks: dict[int, bool]) -> None:
    """Every right answer of a group 1.0, every hack what it earned, none an
    infrastructure error."""
    wrong = []
    for i, (label, result) in enumerate(zip(labels, results, strict=True)):
        if i in hacks:
            wrong.append(_check_hack(label, result, hacks[i]))
        elif result.reward != 1.0 or result.infra_error:
            wrong.append(f"{label} (a right answer, beside a hack): {_said(result)}")
    assert not [w for w in wrong if w], "\n".join(w for w in wrong if w)
    # (graded together, in a pack or one judge request, not each alone)
    first = results[0].raw
    assert first.get("pack") or first.get("judge"), first


def _fresh_group_passes(client: CollimateClient, form: Form) -> None:
    results = _grade(client, [right(form)] * 8, [form.spec] * 8, pack=8)
    assert [(r.reward, r.infra_error) for r in results] == [(1.0, False)] * 8, [
        _said(r) for r in results
    ]


def test_right_answers_pass_in_every_form(client: CollimateClient) -> None:
    """The forms are gradeable: a right answer scores 1.0 in each."""
    forms = list(FORMS.values())
    results = _grade(client, [right(f) for f in forms], [f.spec for f in forms], pack=None)
    assert [r.reward for r in results] == [1.0] * len(forms), [_said(r) for r in results]


@pytest.mark.parametrize("form_name", list(FORMS))
def test_light_self_sabotage_is_the_candidates_own_failure(
    client: CollimateClient, form_name: str
) -> None:
    """Every light hack, and every hack while loading, in one form."""
    form = FORMS[form_name]
    hacks = [(name, False) for name in LIGHT] + [(name, True) for name in AT_LOAD]
    sources = [
        hacked(form, (AT_LOAD if at_load else LIGHT)[name], at_load) for name, at_load in hacks
    ]
    # alone: each in an exec of its own
    _check_alone(hacks, _grade(client, sources, [form.spec] * len(sources), pack=None))
    # in one group: three right answers, then each hack with a right answer
    # after it, then three more; one pack
    labels = ["right"] * 3
    candidates = [right(form)] * 3
    where: dict[int, bool] = {}
    for (name, at_load), source in zip(hacks, sources, strict=True):
        where[len(candidates)] = at_load
        labels += [name, f"right after {name}"]
        candidates += [source, right(form)]
    labels += ["right"] * 3
    candidates += [right(form)] * 3
    results = _grade(client, candidates, [form.spec] * len(candidates), pack=len(candidates))
    _check_group(labels, results, where)
    _fresh_group_passes(client, form)


@pytest.mark.parametrize("hack", list(HEAVY))
def test_a_candidate_that_holds_its_checks_costs_only_itself(
    client: CollimateClient, hack: str
) -> None:
    """Stopped, or with its timer blocked, a candidate holds the grader for
    its checks' own timeouts: it fails those checks, in every form, and its
    group's right answers pass."""
    forms = list(FORMS.values())
    sources = [hacked(form, HEAVY[hack]) for form in forms]
    _check_alone(
        [(f"{hack} ({name})", False) for name in FORMS],
        _grade(client, sources, [form.spec for form in forms], pack=None),
    )
    labels: list[str] = []
    candidates: list[str] = []
    specs: list[RewardSpec] = []
    where: dict[int, bool] = {}
    for name, form, source in zip(FORMS, forms, sources, strict=True):
        where[len(candidates) + 3] = False
        labels += [f"right ({name})"] * 3 + [f"{hack} ({name})"] + [f"right ({name})"] * 3
        candidates += [right(form)] * 3 + [source] + [right(form)] * 3
        specs += [form.spec] * 7
    # one pack a form (a spec's candidates are packed together)
    _check_group(labels, _grade(client, candidates, specs, pack=7), where)
    for form in forms:
        _fresh_group_passes(client, form)


@pytest.mark.parametrize(
    ("hack", "form_name"),
    [
        ("stops_its_process_group", "unit"),
        ("signals_every_process_it_can", "assert"),
        ("signals_its_parent", "stdio"),
    ],
)
def test_a_templates_first_grade_reaching_out_is_its_own_failure(hack: str, form_name: str) -> None:
    """A template's first grades start their spawner as a fresh interpreter,
    where a lone candidate is not confined: it can stop its grader (the exec
    then runs out of time after the candidate ran), kill it, or kill its
    spawner. Each is the candidate's failure: 0.0 (or what it earned, if
    it was confined after all), never an infrastructure error."""
    form = FORMS[form_name]
    body = {**LIGHT, **HEAVY}[hack]
    with (
        LocalCollimateBackend(run_slots=1) as backend,
        CollimateClient(backend.base_url, timeout=600) as c,
    ):
        [result] = _grade(c, [hacked(form, body)], [form.spec], pack=None)
    _check_alone([(hack, False)], [result])


# -- test code that runs after the candidate's code ------------------------

#: Test code with a top level that writes in the working directory, as the
#: grader runs it once the candidate's code has loaded.
_TOP_LEVEL = (
    "TABLE = [i * i for i in range(3)]\n"
    "WORK = sum(range(2_000_000))\n"
    "with open('fixture.txt', 'w') as fh:\n"
    "    fh.write('x')\n"
)
TEST_CODE = {
    "pytest": PytestReward(
        "from solution import f\n"
        + _TOP_LEVEL
        + "".join(f"\ndef test_{i}():\n    assert f({i}) == TABLE[{i}]\n" for i in range(CHECKS)),
        test_timeout=TEST_TIMEOUT_S,
    ),
    "assert_setup": AssertReward(
        [f"assert f({i}) == TABLE[{i}]" for i in range(CHECKS)],
        setup=_TOP_LEVEL,
        entry="f",
        test_timeout=TEST_TIMEOUT_S,
    ),
}
RIGHT_FUNCTION = "def f(x):\n    return x * x\n"
#: Candidates that, while loading, make that top level fail without being
#: called: it cannot write there, or it has no CPU left to run.
SPOILS_THE_TEST_CODE = {
    "locks_the_working_directory": "import os\nos.chmod('.', 0o500)\n" + RIGHT_FUNCTION,
    "starves_the_grader": (
        "import os\n"
        "if os.fork() == 0:\n"
        "    for _ in range(64):\n"
        "        if os.fork() == 0:\n"
        "            break\n"
        "    while True:\n"
        "        pass\n" + RIGHT_FUNCTION
    ),
}


@pytest.mark.parametrize("kind", list(TEST_CODE))
def test_test_code_the_candidate_spoiled_is_its_failure(client: CollimateClient, kind: str) -> None:
    """Test code that fails once the candidate's code has run, without
    calling it, because of what that code did to the guest (its working
    directory locked, the CPU taken by its processes): the candidate's
    failure (0.0), not the dataset's (an infrastructure error). And the
    sweep between two candidates puts the guest back: the next one's test
    code runs as it should."""
    spec = TEST_CODE[kind]
    names = list(SPOILS_THE_TEST_CODE)
    sources = list(SPOILS_THE_TEST_CODE.values())
    _check_alone(
        [(name, True) for name in names],
        _grade(client, sources, [spec] * len(sources), pack=None),
    )
    labels, candidates, where = ["right"], [RIGHT_FUNCTION], {}
    for name, source in zip(names, sources, strict=True):
        where[len(candidates)] = True
        labels += [name, f"right after {name}"]
        candidates += [source, RIGHT_FUNCTION]
    _check_group(
        labels, _grade(client, candidates, [spec] * len(candidates), len(candidates)), where
    )


def _reaped_late(at: float, megabytes: int) -> str:
    """Holds a big heap, hangs up on the grader just before its check's
    timer fires, and lives on: reaping it (the kernel freeing that heap)
    runs into the grader's timer."""
    return f"""
import os, signal, stat, time
def f(x):
    start = time.monotonic()
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    hoard = b'x' * ({megabytes} << 20)
    while time.monotonic() - start < {at}:
        pass
    for fd in range(3, 1024):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            pass
    time.sleep(30)
"""


def test_reaping_a_candidate_never_reaches_into_its_sibling(client: CollimateClient) -> None:
    """A candidate whose reaping takes long, timed to end as its check's
    timer fires: the grader's exchange with the spawner must not be cut in
    two by that timer (its answer would be read by the next candidate's
    fork, which would take the spawner for gone and score 0.0)."""
    spec = AssertReward(["assert f(0) == 0"], entry="f", test_timeout=1.0)
    labels, candidates, where = [], [], {}
    for megabytes in (300, 700):
        for at in (0.93, 0.95, 0.97, 0.99):
            where[len(candidates)] = True
            labels += [f"reaped late ({megabytes} MiB, {at} s)", "right after it"]
            candidates += [_reaped_late(at, megabytes), RIGHT_FUNCTION]
    _check_group(
        labels, _grade(client, candidates, [spec] * len(candidates), len(candidates)), where
    )


# -- memory --------------------------------------------------------------------

OOM_SCORES = """
import os
def _score(pid):
    with open("/proc/%d/oom_score_adj" % pid) as fh:
        return fh.read().strip()
def f(x):
    spawner = os.getppid()
    with open("/proc/%d/stat" % spawner) as fh:
        grader = int(fh.read().rsplit(")", 1)[1].split()[1])
    return [_score(os.getpid()), _score(spawner), _score(grader)]
"""


def test_the_oom_killer_takes_a_candidate_before_its_grader(client: CollimateClient) -> None:
    """A candidate that fills the clone's memory (its files are memory too)
    is what the OOM killer takes first, with its spawner, never the grader
    that writes the verdicts: in a pack, the candidates' processes and the
    spawner score 1000 (set before the spawner is undumpable: after, its
    ``/proc`` files are root's and the write fails), the grader 0."""
    spec = UnitTestReward([{"input": [0], "output": ["1000", "1000", "0"]}], "f")
    results = _grade(client, [OOM_SCORES] * 3, [spec] * 3, pack=3)
    assert [r.reward for r in results] == [1.0] * 3, [_said(r) for r in results]
    assert results[0].raw.get("pack")


# -- a pack whose spawner is gone --------------------------------------------

GUEST = Path(__file__).resolve().parents[1] / "src" / "collimate_rl" / "guest"

#: As a grader of a pack whose spawner is gone (under a uid of its own):
#: the spawner, confined, had forked a candidate's process, confined in a
#: domain nested in its own, which left a daemon in a session of its own.
#: Then the spawner dies. What it left is out of any new spawner's reach:
#: the grader kills it before it starts one.
STRAYS = """
import ctypes, json, os, sys, time  # (all imported as root: the uid below cannot read them)
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/grader"]
import separation, sweep
uid = int(sys.argv[2])
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
r, w = os.pipe()
spawner = os.fork()
if spawner == 0:
    confine, why = separation._w_separator()
    if confine is None:
        os.write(1, json.dumps({"cannot": why}).encode())
        os._exit(0)
    if os.fork() == 0:
        confine()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(120)
            os._exit(0)
        os.write(w, b"x")
        time.sleep(120)
    time.sleep(120)
    os._exit(0)
os.close(w)
if not os.read(r, 1):  # (the spawner could not confine: it said why)
    os._exit(0)
time.sleep(0.2)
before = [p for p in sweep._own_uid_pids() if p != os.getpid()]
os.kill(spawner, 9)
os.waitpid(spawner, 0)
why = sweep._kill_strays()
left = [p for p in sweep._own_uid_pids() if p != os.getpid()]
print(json.dumps({"before": len(before), "why": why, "left": left}))
"""


def test_what_a_gone_spawner_left_is_killed_before_a_new_one_starts() -> None:
    """(``entry._respawn``: a pack goes on with a new spawner only once
    the processes the last candidate left are gone.)"""
    uid = 61000 + secrets.randbelow(3000)  # (a uid nothing else on the machine runs as)
    done = subprocess.run(
        [sys.executable, "-c", STRAYS, str(GUEST), str(uid)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = json.loads(done.stdout)
    if "cannot" in seen:
        pytest.skip(f"candidates cannot be kept apart here: {seen['cannot']}")
    assert seen["before"] >= 3 and seen["why"] is None and seen["left"] == [], seen
