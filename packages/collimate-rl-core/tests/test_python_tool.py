"""``PythonTool``: one trajectory's sandbox and interpreter, and the text a
model reads back, against a real namespaced local backend (both wires,
blocking and async)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from collimate_rl import (
    AsyncCollimateClient,
    AsyncPythonTool,
    CellError,
    CellResult,
    CollimateClient,
    CollimateError,
    GatewayClient,
    PythonTool,
    cell_text,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.engine import namespaced_backend

pytestmark = pytest.mark.namespaces

PRO = "col_pro_python-tool-tests"
TEMPLATE = {"id": "tool", "kind": "python", "limits": {"processes": 64}}


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with namespaced_backend([TEMPLATE], api_keys=[PRO]) as server:
        yield server


@pytest.mark.parametrize("wire", ["daemon", "gateway"])
def test_names_persist_across_one_trajectorys_calls(
    backend: LocalCollimateBackend, wire: str
) -> None:
    client: CollimateClient | GatewayClient
    if wire == "daemon":
        client = CollimateClient(backend.base_url)
    else:
        client = GatewayClient(api_key=PRO, base_url=backend.base_url)
    with client, PythonTool(client=client, template="tool") as tool:
        assert not tool.started
        assert tool.call("import math\nxs = [1, 2, 3]") == "(no output)"
        assert tool.started
        assert tool.call("print(sum(xs))\nmath.factorial(len(xs))") == "6\n6"
        text = tool.call("xs[10]")
        assert "IndexError" in text and "<cell" in text and "kernel" not in text.lower()
        assert tool.calls == 3
        session = tool._sandbox.session_id if tool._sandbox else None
    assert not tool.started
    with CollimateClient(backend.base_url) as fresh, pytest.raises(CollimateError):
        fresh.get_session(str(session))  # the sandbox was reaped with the tool


def test_two_trajectories_do_not_share_names(backend: LocalCollimateBackend) -> None:
    async def main() -> tuple[str, str]:
        async with AsyncCollimateClient(backend.base_url) as client:
            a = AsyncPythonTool(client=client, template="tool")
            b = AsyncPythonTool(client=client, template="tool")
            async with a, b:
                await asyncio.gather(a.call("secret = 41"), b.call("other = 1"))
                return await a.call("secret + 1"), await b.call("secret")

    mine, theirs = asyncio.run(main())
    assert mine == "42"
    assert "NameError" in theirs


def test_a_timed_out_call_says_so_and_keeps_the_names(backend: LocalCollimateBackend) -> None:
    with (
        CollimateClient(backend.base_url) as client,
        PythonTool(client=client, template="tool", timeout=1) as tool,
    ):
        tool.call("kept = 'yes'")
        text = tool.call("import time\ntime.sleep(30)")
        assert "timed out" in text and "names are kept" in text
        assert tool.call("kept") == "'yes'"


def test_a_closed_tool_refuses_calls(backend: LocalCollimateBackend) -> None:
    with CollimateClient(backend.base_url) as client:
        tool = PythonTool(client=client, template="tool")
        tool.close()
        with pytest.raises(RuntimeError, match="closed"):
            tool.call("1")


def result(**fields: object) -> CellResult:
    base: dict[str, object] = {
        "stdout": "",
        "stderr": "",
        "value": None,
        "error": None,
        "duration_s": 0.1,
    }
    base.update(fields)
    return CellResult(**base)  # type: ignore[arg-type]


def test_cell_text_orders_output_value_and_error() -> None:
    error = CellError("ValueError", "bad", 'Traceback:\n  File "<cell 3>"\nValueError: bad\n')
    text = cell_text(result(stdout="out\n", stderr="warn\n", value="7", error=error))
    assert text == 'out\n[stderr]\nwarn\n7\nTraceback:\n  File "<cell 3>"\nValueError: bad'
    assert cell_text(result()) == "(no output)"
    assert "restarted" in cell_text(result(restarted=True, error=CellError("X", "", "")))
    assert cell_text(result(truncated=True, stdout="a")).endswith("[output truncated]")


def test_cell_text_keeps_both_ends_of_a_long_output() -> None:
    text = cell_text(result(stdout="A" * 5000 + "B" * 5000), limit=1000)
    assert len(text) <= 1000
    assert text.startswith("A") and text.endswith("B") and "characters cut" in text
