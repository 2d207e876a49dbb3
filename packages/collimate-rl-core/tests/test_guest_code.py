"""The guest package (``collimate_rl/guest``) imports the standard library
and itself, nothing else.

Its code runs inside a sandbox: shipped as text or bytecode into an
interpreter that may have neither ``collimate_rl`` nor its dependencies (or
other versions of them), or loaded by the zygote in a ``python -I -S`` that
must never import the SDK. The check reads every module of the package with
:mod:`ast`, imports nothing, and counts every import: at module level, in
functions, under ``if TYPE_CHECKING:`` too (the shipped program has no
``typing`` to lean on either), and ``__import__`` / ``importlib.import_module``
calls with a literal name. An import is allowed when it names a module of
the standard library (``sys.stdlib_module_names``) or, relative or absolute,
a module of the guest package itself. A planted ``import httpx`` and a
planted import of the SDK around the package both fail it.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src"
GUEST = "collimate_rl.guest"


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in ``tree``."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            yield node.lineno, name
        elif isinstance(node, ast.Call) and node.args:
            func, first = node.func, node.args[0]
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
            if called in ("__import__", "import_module") and literal:
                name = str(getattr(first, "value", ""))
                if not name.startswith("."):
                    yield node.lineno, name


def guest_problems(root: Path) -> list[str]:
    """What in the guest package below ``root`` (a ``src`` folder) imports
    anything but the standard library and the guest package itself."""
    found: list[str] = []
    files = sorted((root / Path(*GUEST.split("."))).rglob("*.py"))
    assert files, f"no guest package under {root}"
    for path in files:
        module = _module_name(root, path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, name in _imports(tree, module, path.name == "__init__.py"):
            top = name.partition(".")[0]
            if name == GUEST or name.startswith(GUEST + "."):
                continue
            where = f"{path.relative_to(root)}:{line}"
            if top == "collimate_rl":
                found.append(f"{where}: imports the SDK around the guest package ({name})")
            elif top not in sys.stdlib_module_names:
                found.append(f"{where}: imports {name}, not of the standard library")
    return found


def test_guest_code_imports_only_the_standard_library_and_itself() -> None:
    assert guest_problems(SOURCE) == []


def test_every_program_is_in_the_guest_package() -> None:
    """The guest programs the SDK ships are read from the guest package."""
    guest = SOURCE / "collimate_rl" / "guest"
    for name in (
        "grader/__init__.py",
        "kernel_program.py",
        "language_runner.py",
        "sandbox_fusion_runner.py",
        "separation.py",
        "zygote/zygote.py",
    ):
        assert (guest / name).is_file(), name


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A copy of the guest package (in a ``src`` of its own) to plant in."""
    shutil.copytree(SOURCE / "collimate_rl" / "guest", tmp_path / "collimate_rl" / "guest")
    return tmp_path


@pytest.mark.parametrize(
    ("file", "line", "expected"),
    [
        ("separation.py", "import httpx", "imports httpx, not of the standard library"),
        (
            "grader/candidate.py",
            "    from collimate_rl import Sandbox",
            "imports the SDK around the guest package (collimate_rl)",
        ),
        (
            "grader/remote.py",
            "from ...rewards import spec",
            "imports the SDK around the guest package (collimate_rl.rewards)",
        ),
        (
            "zygote/clone.py",
            "x = __import__('collimate_rl.local_backend')",
            "imports the SDK around the guest package (collimate_rl.local_backend)",
        ),
    ],
)
def test_a_planted_import_fails_the_check(
    planted: Path, file: str, line: str, expected: str
) -> None:
    path = planted / "collimate_rl" / "guest" / file
    text = path.read_text(encoding="utf-8")
    if line.startswith(" "):  # inside a function: the first one's body
        head, sep, tail = text.partition("\ndef ")
        signature, colon, body = tail.partition(":\n")
        text = head + sep + signature + colon + line + "\n" + body
    else:
        text += "\n" + line + "\n"
    path.write_text(text, encoding="utf-8")
    problems = guest_problems(planted)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"collimate_rl/guest/{file}:")
    assert problems[0].endswith(expected)


def _shipped() -> dict[str, str]:
    from collimate_rl._guest_source import joined_source
    from collimate_rl.kernel._state import PROGRAM
    from collimate_rl.local_backend import language_runs, sandbox_fusion
    from collimate_rl.rewards import program

    return {
        "kernel_program": PROGRAM.decode("utf-8"),
        "language_runner": language_runs.runner_source(),
        "sandbox_fusion_runner": sandbox_fusion.runner_source(),
        "grader's worker": program.worker_source(),
        "jupyter_runner": joined_source("jupyter_runner"),
    }


def test_each_program_is_shipped_as_one_module_with_what_it_imports() -> None:
    """The pieces guest programs share are written once in the package
    (``separation.py``, ``request_paths.py``, ``zygote/exit_code.py``) and
    joined into each program that imports them: once each, with no import
    of the guest package left."""
    shipped = _shipped()
    carried = {
        "kernel_program": ["_w_filter"],
        "language_runner": ["_w_separator", "_place"],
        "sandbox_fusion_runner": ["_place", "exit_code_of"],
        "grader's worker": ["_w_separator"],
        "jupyter_runner": ["_place", "make_image_dirs"],
    }
    for name, source in shipped.items():
        tree = ast.parse(source)
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
        assert "collimate_rl" not in {
            alias.name.partition(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for alias in n.names
        } | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        for function in carried[name]:
            assert defined.count(function) == 1, (name, function)
    # ... and written once in the package (the grader's candidates' filter
    # table is the kernel's too)
    guest = SOURCE / "collimate_rl" / "guest"
    tables = [p for p in guest.rglob("*.py") if "(302, 0, None)" in p.read_text(encoding="utf-8")]
    assert [p.name for p in tables] == ["separation.py"]


def test_a_name_two_joined_modules_define_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from collimate_rl import _guest_source

    (tmp_path / "shared.py").write_text('"""x"""\nfrom __future__ import annotations\nA = 1\n')
    (tmp_path / "main.py").write_text("from .shared import A as B\nA = 2\n")
    (tmp_path / "fine.py").write_text('"""doc"""\nfrom .shared import A as B\nC = B\n')
    monkeypatch.setattr(_guest_source, "GUEST_DIR", tmp_path)
    assert _guest_source.joined_source.__wrapped__("fine") == (
        "from __future__ import annotations\n" + '"""doc"""\nA = 1\nB = A\nC = B\n'
    )
    with pytest.raises(ValueError, match="A is defined by both"):
        _guest_source.joined_source.__wrapped__("main")


# --- what is shipped does not depend on the host's Python ---------------------

JOINED = ("kernel_program", "language_runner", "sandbox_fusion_runner")


_JOIN_AND_COMPILE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("gs", sys.argv[1])
gs = importlib.util.module_from_spec(spec); spec.loader.exec_module(gs)
print(json.dumps({name: gs.joined_source(name) for name in sys.argv[2:]}))
"""


def test_the_joined_programs_are_the_same_text_whatever_python_joins_them() -> None:
    """A sandbox's interpreter need not be the host's: each program is
    joined from its files' own text, so the newest Python here and the
    oldest write the same bytes, and the oldest compiles what the newest
    wrote (``ast.unparse`` on 3.12 writes f-strings 3.11 cannot read)."""
    from collimate_rl.testing.procs import working_pythons

    pythons = working_pythons()
    if len(pythons) < 2:
        pytest.skip(reason="one working CPython version here: nothing to compare")
    oldest, newest = pythons[min(pythons)], pythons[max(pythons)]
    source = Path(__file__).resolve().parents[1] / "src" / "collimate_rl" / "_guest_source.py"
    texts = {}
    for exe in (oldest, newest):
        out = subprocess.run(
            [exe, "-c", _JOIN_AND_COMPILE, str(source), *JOINED],
            capture_output=True,
            text=True,
            check=True,
        )
        texts[exe] = json.loads(out.stdout)
    assert texts[oldest] == texts[newest]
    check = "import json, sys\nfor n, t in json.load(sys.stdin).items(): compile(t, n, 'exec')"
    subprocess.run([oldest, "-c", check], input=json.dumps(texts[newest]), text=True, check=True)


_BUILD_GRADER = """
import json
import os
import site
from collimate_rl.rewards import program
texts = {"worker": program.worker_source(), "runtime": program.runtime_source(None, True)}
for kind in ("unit", "call", "property", "stdio", "stdin_stdout", "assert", "pytest"):
    texts[kind] = program.runtime_source(kind)
print(json.dumps(texts))
"""


def test_the_grader_built_by_the_newest_python_compiles_on_the_oldest() -> None:
    """The grader's runtime is shrunk through ``ast`` and printed back with
    ``ast.unparse`` (rewards/program.py), whose output follows the host's
    Python: what the newest Python here builds must compile on the oldest
    (a sandbox's interpreter need not be the host's). The newest runs the
    SDK from this source tree and this environment's pure-Python packages."""
    from collimate_rl.testing.procs import working_pythons

    pythons = working_pythons()
    if len(pythons) < 2:
        pytest.skip(reason="one working CPython version here: nothing to compare")
    oldest, newest = pythons[min(pythons)], pythons[max(pythons)]
    src = Path(__file__).resolve().parents[1] / "src"
    path = os.pathsep.join([str(src), *site.getsitepackages()])
    built = subprocess.run(
        [newest, "-c", _BUILD_GRADER],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": path},
    )
    texts = json.loads(built.stdout)
    assert len(texts) == 9 and all("def " in t for t in texts.values())
    check = "import json, sys\nfor n, t in json.load(sys.stdin).items(): compile(t, n, 'exec')"
    subprocess.run([oldest, "-c", check], input=json.dumps(texts), text=True, check=True)
