"""A zygote's file preload (``name=/path/file.py``) is compiled by a
throwaway child (``guest/zygote/zygote.py``: ``compiled_in_child``), so the
parser's memory never stays in the process every clone, exec and packed
candidate is forked from. Shown here: the code is the same as compiling in
place, a syntax error still reaches the caller as itself, and the parser's
heap stays out of the calling process (checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from collimate_rl.guest.zygote.zygote import compiled_in_child


def test_the_code_is_what_compiling_here_would_give(tmp_path: Path) -> None:
    path = tmp_path / "runtime.py"
    path.write_text("import math\nVALUE = 7\ndef area(r):\n    return round(math.pi * r * r, 3)\n")
    code = compiled_in_child(str(path))
    assert code.co_filename == str(path)
    namespace: dict[str, object] = {}
    exec(code, namespace)
    assert namespace["VALUE"] == 7
    area = namespace["area"]
    assert callable(area) and area(2) == 12.566
    assert code.co_code == compile(path.read_bytes(), str(path), "exec", dont_inherit=True).co_code


def test_a_syntax_error_reaches_the_caller_with_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("x = 1\ndef f(:\n    pass\n")
    with pytest.raises(SyntaxError) as info:
        compiled_in_child(str(path))
    assert info.value.filename == str(path) and info.value.lineno == 2


def test_a_missing_file_is_an_error_not_an_empty_module(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        compiled_in_child(str(tmp_path / "gone.py"))


# in a fresh interpreter: how much anonymous memory compiling a big module
# leaves behind, compiled in place and compiled by the child
MEASURE = textwrap.dedent(
    """
    import sys
    from collimate_rl.guest.zygote.zygote import compiled_in_child

    def anonymous_kb():
        with open("/proc/self/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Anonymous:"):
                    return int(line.split()[1])

    path, how = sys.argv[1], sys.argv[2]
    before = anonymous_kb()
    if how == "here":
        with open(path, "rb") as fh:
            code = compile(fh.read(), path, "exec", dont_inherit=True)
    else:
        code = compiled_in_child(path)
    print(anonymous_kb() - before)
    """
)


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="needs Linux's smaps")
def test_the_parsers_memory_leaves_with_the_child(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    body = "".join(
        f"def f{i}(a, b=({i}, 'x{i}')):\n    return [a * {i}, b, {{'k': a + {i}}}]\n"
        for i in range(3000)
    )
    path.write_text(body)  # about 200 KB, the order of the grader runtime

    def grown_kb(how: str) -> int:
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, str(path), how],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return int(out.stdout.strip())

    here, child = grown_kb("here"), grown_kb("child")
    assert here > 2048, f"compiling in place left only {here} KB: the premise no longer holds"
    assert child * 4 < here, f"compiled by the child: {child} KB left, in place {here} KB"
