"""The clean twin of a python exec (``guest/zygote/twin.py``), on the real backend.

A standby exec child forks its twin before any job exists, so the twin
never held a job's code or files; a grade uses it as the clean process its
candidates fork from. Standbys fork one once an exec of the template asked
for it (``COLLIMATE_CLEAN_TWIN_WANTED``): a server of plain one-shots never
pays for it. Shown here: when there is a twin and when not; the job can
make it run a program; nothing of the job (its code, its files) is in its
memory; it dies with its exec, used or not; a grade's candidates run
under it, in the worker the template's zygote loaded.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from collimate_rl import CollimateClient, UnitTestReward, grade
from collimate_rl.grading import runtime_forms
from collimate_rl.local_backend import LocalCollimateBackend

TEMPLATE = "py"

# run in the exec: send the twin a program (kind ``s``) and print what it answers
ASK_TWIN = """
import os, _socket
fd, _, pid = os.environ["COLLIMATE_CLEAN_TWIN"].partition(":")
s = _socket.socket(fileno=int(fd))
program = PROGRAM.encode()
s.sendall((len(program) + 1).to_bytes(4, "big") + b"s" + program)
chunks = []
while True:
    chunk = s.recv(1 << 16)
    if not chunk:
        break
    chunks.append(chunk)
print(pid, b"".join(chunks).decode())
"""

# run in the twin: scan every readable mapping of its own memory for a token
SCAN = """
import os, re
needle = re.compile(bytes.fromhex(NEEDLE_HEX))
found = 0
with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb', 0) as mem:
    for line in maps:
        span, perms = line.split()[:2]
        if 'r' not in perms:
            continue
        start, end = (int(p, 16) for p in span.split('-'))
        if end - start > 1 << 28:  # (reserved, never written: nothing to find)
            continue
        try:
            mem.seek(start)
            found += len(needle.findall(mem.read(end - start)))
        except (OSError, ValueError, OverflowError, MemoryError):
            pass
os.write(3, b'found %d' % found)
"""


# what the SDK's grader does to ask for twins (see guest/zygote/twin.py)
WANT = "import os\nos.pwrite(int(os.environ['COLLIMATE_CLEAN_TWIN_WANTED']), b'\\x01', 0)\n"


@pytest.fixture(scope="module")
def client() -> Iterator[CollimateClient]:
    with LocalCollimateBackend() as backend, CollimateClient(backend.base_url) as c:
        yield c


@pytest.fixture
def session(client: CollimateClient) -> Iterator[str]:
    """A clone whose next execs have a twin: its first exec asked for one."""
    sid = str(client.create_session(TEMPLATE)["session_id"])
    try:
        assert client.session_exec(sid, code=WANT)["exit_code"] == 0
        yield sid
    finally:
        client.delete_session(sid)


def _run(client: CollimateClient, sid: str, code: str, **kw: Any) -> str:
    out = client.session_exec(sid, code=code, **kw)
    assert out["exit_code"] == 0, out["stdout"]
    return str(out["stdout"]).strip()


def _ask(
    client: CollimateClient,
    sid: str,
    program: str,
    files: list[dict[str, str]] | None = None,
    prelude: str = "",
) -> str:
    code = WANT + prelude + ASK_TWIN.replace("PROGRAM", repr(program))
    return _run(client, sid, code, files=files or [])


def test_no_twin_until_an_exec_asks_then_every_exec_has_one() -> None:
    """A server that only runs plain execs forks no twin; once an exec
    asked for one, every later exec of the template has one."""
    with LocalCollimateBackend() as backend, CollimateClient(backend.base_url) as own:
        sid = str(own.create_session(TEMPLATE)["session_id"])
        probe = "import os\nprint(os.environ.get('COLLIMATE_CLEAN_TWIN'))"
        assert _run(own, sid, probe) == "None"
        assert _run(own, sid, probe) == "None"
        _run(own, sid, WANT)
        assert _run(own, sid, probe) != "None"
        assert _run(own, sid, probe) != "None"  # (it stays: the next grade will ask again)


def test_the_twin_runs_the_program_it_is_sent(client: CollimateClient, session: str) -> None:
    program = "import os\nos.write(3, b'hello from %d' % os.getpid())"
    pid, answer = _ask(client, session, program).split(" ", 1)
    assert answer == f"hello from {pid}"


def test_nothing_of_the_job_is_in_the_twin(client: CollimateClient, session: str) -> None:
    """The token is in the job's code and memory and in a file it delivers;
    in the twin's whole memory it is found once: the scan's own needle."""
    token = "TWIN-" + secrets.token_hex(12)
    program = SCAN.replace("NEEDLE_HEX", repr(token.encode().hex()))
    files = [{"path": "/tmp/secret.txt", "content": f"expected = {token!r}\n" * 50}]
    prelude = f"kept = {token!r} * 3  # (in the job's code and memory)\n"
    reply = _ask(client, session, program, files, prelude)
    assert reply.split(" ", 1)[1] == "found 1"
    # the same scan finds a token the twin was sent (the scan works)
    reply = _ask(client, session, f"marker = {token!r}\n" + program)
    assert int(reply.split(" ")[2]) >= 2, reply


def test_the_twin_dies_with_its_exec_used_or_not(client: CollimateClient, session: str) -> None:
    """A second exec of the same clone soon sees its own twin only: the last
    one's is gone, none piles up. The exec kills its twin just after it
    reported its end (the answer first), so the next exec may still glimpse
    the last twin dying for a moment: the listing waits a little for it."""
    listing = (
        "import os, time\n"
        "def names():\n"
        "    found = []\n"
        "    for p in (p for p in os.listdir('/proc') if p.isdigit()):\n"
        "        try:\n"
        "            found.append(open(f'/proc/{p}/comm').read().strip())\n"
        "        except OSError:\n"
        "            pass  # (gone between the listing and the read)\n"
        "    return sorted(found)\n"
        "deadline = time.monotonic() + 5\n"
        "while names().count('collimate-twin') > 1 and time.monotonic() < deadline:\n"
        "    time.sleep(0.02)\n"
        "print(os.environ['COLLIMATE_CLEAN_TWIN'].partition(':')[2], names())\n"
    )
    for _ in range(3):
        twin, names = _run(client, session, WANT + listing).split(" ", 1)
        assert names.count("collimate-twin") == 1, names
        assert twin.isdigit()


def test_a_grade_runs_its_candidate_under_the_twin(client: CollimateClient, session: str) -> None:
    """The candidate's parent is the twin (the spawner), not a fresh
    interpreter: its command line is the exec's, never ``python -c``."""
    spec = UnitTestReward([{"input": [], "output": "collimate-twin"}], entry="parent")
    candidate = (
        "import os\ndef parent():\n    return open(f'/proc/{os.getppid()}/comm').read().strip()\n"
    )
    runtime_forms.clear()
    assert grade(client, TEMPLATE, candidate, spec, session_id=session).reward == 1.0


def test_the_templates_zygote_loaded_and_warmed_the_worker(
    client: CollimateClient, session: str
) -> None:
    """The built-in template preloads the grader runtime, and its zygote
    calls the runtime's ``__collimate_warm__``: the worker a candidate runs
    in was loaded there once (a pack's spawner does not load it again)."""
    spec = UnitTestReward([{"input": [], "output": [True, "__collimate_preload__"]}], entry="ready")
    candidate = (
        "import sys\n"
        "def ready():\n"
        "    runtime = sys.modules.get('collimate_rl.rewards.guest_runtime')\n"
        "    worker = getattr(runtime, '_WORKER_READY', None)\n"
        "    return [worker is not None, (worker or {}).get('__name__')]\n"
    )
    runtime_forms.clear()
    assert grade(client, TEMPLATE, candidate, spec, session_id=session).reward == 1.0
