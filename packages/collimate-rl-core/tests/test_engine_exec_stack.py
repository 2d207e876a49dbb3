"""What an exec's code inherits of the exec child's Python call stack
(``guest/zygote/exec_child.py``): its code runs straight from ``exec_child``, and
so does the clean twin's program, from ``start_clean_twin``. Each frame
between them would be one level of recursion less for the code (and for
a grader's candidates, forked from the twin), so the exec child's steps
stay beside these calls, never above them."""

from __future__ import annotations

import functools

import pytest

from collimate_rl.local_backend.engine import ExecJob, ForkEngine, TemplateSpec
from collimate_rl.testing.engine import run_with_engine

PY = TemplateSpec(id="py", kind="python")
MODES = ["process", pytest.param("namespaces", marks=pytest.mark.namespaces)]

run = functools.partial(run_with_engine, pool_size=1)

STACK = """
import sys
def stack():
    f, names = sys._getframe(1), []
    while f is not None:
        names.append(f.f_code.co_name)
        f = f.f_back
    return names
"""
WANT = "import os\nos.pwrite(int(os.environ['COLLIMATE_CLEAN_TWIN_WANTED']), b'\\x01', 0)\n"
# the twin runs STACK + this and answers on its fd 3
IN_TWIN = STACK + "import os\nos.write(3, ' '.join(stack()).encode())\n"
ASK_TWIN = f"""
import os, _socket
fd = int(os.environ["COLLIMATE_CLEAN_TWIN"].partition(":")[0])
s = _socket.socket(fileno=fd)
program = {IN_TWIN!r}.encode()
s.sendall((len(program) + 1).to_bytes(4, "big") + b"s" + program)
chunks = []
while True:
    chunk = s.recv(1 << 16)
    if not chunk:
        break
    chunks.append(chunk)
print(b"".join(chunks).decode())
"""


def job(source: str) -> ExecJob:
    return ExecJob("code", source, "ab" * 32, 20.0, ())  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_code_and_the_twin_run_right_under_the_exec_child(mode: str) -> None:
    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        try:
            code = await clone.run(job(STACK + "print(' '.join(stack()))"))
            asked = await clone.run(job(WANT))
            twin = await clone.run(job(ASK_TWIN))
        finally:
            await clone.close()
        assert code.exit_code == 0 and asked.exit_code == 0 and twin.exit_code == 0
        assert code.output.decode().split()[:3] == ["<module>", "run_python", "exec_child"]
        assert twin.output.decode().split()[:4] == [
            "<module>",
            "_wait_and_run",
            "start_clean_twin",
            "exec_child",
        ], twin.output

    run(mode, [PY], body)
