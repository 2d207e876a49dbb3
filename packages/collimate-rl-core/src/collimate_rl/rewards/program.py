"""Assembling the in-guest grader program: config + runtime + boot.

The runtime (the modules of :mod:`..guest.grader`, joined in the order of
``grader.PARTS``) is read once as text and shrunk: docstrings, annotations,
``__future__`` imports and the modules' imports of each other are dropped (a
locked-down guest may be unable to import anything its warm interpreter
did not preload; joined, the parts share one namespace), and each reward
kind ships only the functions it reaches.

Compiling the ~9 KB runtime costs a guest ~5 ms per grade, more than the
rest of a grade together; tokenizing its marshalled bytecode as one hex
string and loading it costs ~0.3 ms (hex tokenizes 2.5x faster than a bytes
literal's escapes). A program therefore comes in three forms:

* ``full``: the source ``S`` and the bytecode ``B``; the guest loads ``B``
  when its bytecode magic number is the one that wrote it, else compiles
  ``S``. Always works.
* ``lean``: ``B`` only, for a target that loaded the bytecode before.
* ``preloaded``: neither, for a target whose warm interpreter imported this
  very runtime (the same joined text, :func:`runtime_id`; the built-in
  templates preload it from :func:`runtime_file`) ahead of time.

Every form first looks for a preloaded runtime, and the verdict reports how
the runtime was loaded, so the SDK learns the smallest form a target accepts
(:class:`collimate_rl.pipeline.forms.FormCache` caches it). A form the guest cannot use makes it
print a ``need-full`` frame, and the SDK resends the full program once.

The config is a Python literal (not JSON) so the guest needs no ``json``
import; non-finite floats are spelled ``float('inf')`` / ``float('nan')``.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import functools
import hashlib
import importlib.util
import marshal
import math
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from .._guest_source import guest_file
from ..guest.grader import PARTS, WORKER_PARTS

__all__ = [
    "FORM_FOR_HOW",
    "NEED_FULL",
    "RUNTIME_FORMS",
    "RUNTIME_MODULE",
    "RuntimeForm",
    "build_runtime",
    "guest_program",
    "preload_source",
    "py_literal",
    "runtime_built",
    "runtime_file",
    "runtime_id",
    "runtime_source",
    "source_only_program",
]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

#: The module a template may preload so that graders skip loading a runtime.
RUNTIME_MODULE: Final = "collimate_rl.rewards.guest_runtime"
#: The frame payload of a guest that cannot use the form it was sent.
NEED_FULL: Final = "need-full"

RuntimeForm = Literal["full", "lean", "preloaded"]
RUNTIME_FORMS: Final[tuple[str, ...]] = ("full", "lean", "preloaded")
#: ``how`` a guest loaded the runtime -> the smallest form it will accept.
FORM_FOR_HOW: Final[dict[str, RuntimeForm]] = {
    "preloaded": "preloaded",
    "bytecode": "lean",
    "source": "full",
}


class _Shrink(ast.NodeTransformer):
    """Drops what only serves readers and type checkers: docstrings,
    annotations and ``from __future__`` imports (same behaviour), and turns
    the parts' relative imports of each other into ``pass``."""

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | None:
        if node.module == "__future__":
            return None
        if node.level:  # one part importing another: joined, they share a namespace
            return ast.Pass()
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.annotation = None
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        if node.value is None:
            return None
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)

    def _body(self, node: Any) -> Any:
        body = node.body
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            del body[0]
        self.generic_visit(node)
        if not node.body:
            node.body = [ast.Pass()]
        return node

    def visit_Module(self, node: ast.Module) -> Any:
        return self._body(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        return self._body(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        node.returns = None
        return self._body(node)


def _tree_shake(tree: ast.Module, roots: set[str]) -> ast.Module:
    """Keep the top-level functions and classes reachable from ``roots``
    (and every import and assignment)."""
    defs = {node.name: node for node in tree.body if isinstance(node, _DEFS)}
    keep: set[str] = set()
    used_at_top = {
        n.id
        for node in tree.body
        if not isinstance(node, _DEFS)
        for n in ast.walk(node)
        if isinstance(n, ast.Name)
    }
    todo = [r for r in roots | used_at_top if r in defs]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        used = {n.id for n in ast.walk(defs[name]) if isinstance(n, ast.Name)}
        todo.extend(n for n in used if n in defs and n not in keep)
    tree.body = [n for n in tree.body if not isinstance(n, _DEFS) or n.name in keep]
    return tree


#: CPython 3.11's ``ast`` keeps one recursion counter per interpreter, so two
#: threads building AST objects at once fail with "AST constructor recursion
#: depth mismatch" (a garbage collection inside the C code is enough to switch
#: threads), and a threaded grade_batch builds its first programs together:
#: building goes through this lock.
_BUILD_LOCK = threading.RLock()


def runtime_source(kind: str | None = None, packed: bool = False) -> str:
    """The shipped runtime: shrunk, and for a ``kind`` only the code that
    kind reaches (``main`` dispatches to ``_grade_<kind>`` by name, and to
    ``_pack`` only in a pack's program: ``packed``)."""
    with _BUILD_LOCK:
        return _runtime_source(kind, packed)


def _joined() -> ast.Module:
    """Every part of :mod:`..guest.grader`, shrunk, as one module: each import once,
    and without what only type checkers read (``TYPE_CHECKING``); the
    worker's own program (:func:`worker_source`) rides along as the string
    ``_WORKER_SOURCE``, with its bytecode (``_WORKER_BYTECODE``, for a
    guest whose ``_WORKER_MAGIC`` is the SDK's)."""
    worker = worker_source()
    bytecode = marshal.dumps(compile(worker, "<collimate-worker>", "exec"))
    body: list[ast.stmt] = ast.parse(
        f"_WORKER_SOURCE = {worker!r}\n"
        # (its bytecode too: compiling it costs a guest ~10 ms per grade)
        f"_WORKER_MAGIC = {importlib.util.MAGIC_NUMBER!r}\n"
        f"_WORKER_BYTECODE = bytes.fromhex({bytecode.hex()!r})\n"
    ).body
    body.extend(_shrunk_parts(PARTS))
    return ast.Module(body=body, type_ignores=[])


#: Ends the worker's program: run it, unless a template's preload only
#: defines it (``__collimate_warm__``, in the grader's entry module).
_RUN_WORKER: Final = '\nif __name__ != "__collimate_preload__":\n    _worker_main()\n'


@functools.cache
def worker_source() -> str:
    """The candidates' side (:mod:`..guest.grader.spawner`,
    :mod:`..guest.grader.candidate`), shrunk, with its call: what the grader
    starts in a fresh interpreter."""
    tree = ast.Module(body=_shrunk_parts(WORKER_PARTS), type_ignores=[])
    return ast.unparse(ast.fix_missing_locations(tree)) + _RUN_WORKER


def _shrunk_parts(parts: tuple[str, ...]) -> list[ast.stmt]:
    body: list[ast.stmt] = []
    seen: set[str] = set()
    for part in parts:
        text = guest_file(part).read_text(encoding="utf-8")
        for node in _Shrink().visit(ast.parse(text)).body:
            if isinstance(node, ast.Pass) or _for_type_checkers(node):
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                key = ast.dump(node)
                if key in seen:
                    continue
                seen.add(key)
            body.append(node)
    return body


def _for_type_checkers(node: ast.stmt) -> bool:
    """``TYPE_CHECKING = False`` or ``if TYPE_CHECKING: ...``."""
    if isinstance(node, ast.If):
        return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return isinstance(target, ast.Name) and target.id == "TYPE_CHECKING"
    return False


@functools.cache
def _runtime_source(kind: str | None, packed: bool = False) -> str:
    tree = _joined()
    if kind is not None:
        # (looked up by name in the guest: a kind's grader, pytest's runner)
        roots = {"main", f"_grade_{kind}"} | ({"_run_pytest_module"} if kind == "pytest" else set())
        tree = _tree_shake(tree, roots)
    return ast.unparse(ast.fix_missing_locations(tree))


_BOOT = """import sys, marshal
def _boot():
    m = sys.modules.get(@MODULE@)
    if m is not None and getattr(m, 'RUNTIME_ID', None) == I:
        return m.main, 'preloaded'
    ext = sys.modules.get('_frozen_importlib_external')
    g = {}
    same_magic = getattr(ext, 'MAGIC_NUMBER', None) == M
    if B is not None and sys.implementation.name == 'cpython' and same_magic:
        try:
            exec(marshal.loads(B), g)
            return g['main'], 'bytecode'
        except Exception:
            g = {}
    if S is None:
        sys.stdout.write('\\n' + C['marker'] + C['nonce'] + ' @NEED@\\n')
        sys.stdout.flush()
        raise SystemExit(0)
    exec(compile(S, '<collimate-grader>', 'exec'), g)
    return g['main'], 'source'
_main, _how = _boot()
del S, B
_main(C, _how)
""".replace("@MODULE@", repr(RUNTIME_MODULE)).replace("@NEED@", NEED_FULL)


def preload_source() -> str:
    """The whole runtime as one module's source (every kind, packs too):
    what a template preloads and :mod:`.guest_runtime` runs."""
    return runtime_source(None, packed=True)


@functools.cache
def runtime_file() -> str:
    """A file holding :func:`preload_source`, for a template to preload
    (``name=path``) without importing the ``collimate_rl`` package.

    The file is named by its content (:func:`runtime_id`) and kept in a
    directory of this user's own (mode 0700, under the temp dir). Every
    server of this version reuses it, and there is nothing to remove: a
    server that is killed leaves no directory behind. If that directory is
    not safely ours (someone else's, a symlink, open to others), the file
    goes to a fresh private directory removed at exit, as before."""
    text = preload_source().encode("utf-8")
    shared = shared_runtime_file(Path(tempfile.gettempdir()), text)
    if shared is not None:
        return str(shared)
    folder = tempfile.mkdtemp(prefix="collimate-grader-")
    atexit.register(shutil.rmtree, folder, True)
    path = Path(folder) / f"grader_{runtime_id()}.py"
    path.write_bytes(text)
    return str(path)


def shared_runtime_file(base: Path, text: bytes) -> Path | None:
    """``text`` as ``<base>/collimate-rl-<uid>/grader_<hash>.py``, written
    once (to a temporary name, then renamed: a reader never sees half of
    it) and checked on reuse. ``None`` when the directory cannot be made
    or is not private to this user."""
    digest = hashlib.sha256(text).hexdigest()[:16]
    folder = base / f"collimate-rl-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and not stat.S_IMODE(info.st_mode) & 0o077
    if not private or info.st_uid != os.getuid():
        return None
    path = folder / f"grader_{digest}.py"
    try:
        if path.read_bytes() == text:
            return path
    except OSError:
        pass
    try:
        fd, scratch = tempfile.mkstemp(prefix=".grader-", dir=folder)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(text)
        os.replace(scratch, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        return None
    return path


@functools.cache
def runtime_id() -> str:
    """What a preloaded runtime must report as ``RUNTIME_ID`` to be used:
    the hash of :func:`preload_source` (the module hashes its own file,
    :func:`runtime_file`, to the same)."""
    return hashlib.sha256(preload_source().encode("utf-8")).hexdigest()[:16]


#: Runtime blocks built so far, by (kind, form, packed): served without the
#: lock once there; built under it.
_BLOCKS: dict[tuple[str | None, str, bool], str] = {}


def _runtime_block(kind: str | None, form: str, packed: bool) -> str:
    key = (kind, form, packed)
    block = _BLOCKS.get(key)
    if block is not None:
        return block
    with _BUILD_LOCK:
        block = _BLOCKS.get(key)
        if block is None:
            block = _BLOCKS[key] = _build_runtime_block(kind, form, packed)
        return block


def runtime_built(kind: str | None, form: str, packed: bool) -> bool:
    """Whether the runtime for ``kind`` in ``form`` (a pack's: ``packed``)
    is ready: building one costs a few hundred milliseconds of CPU the
    first time (parsing, shrinking and compiling the grader), which an
    event loop must not spend (:func:`build_runtime` in a thread)."""
    return (kind, form, packed) in _BLOCKS


def build_runtime(kind: str | None, form: str, packed: bool) -> None:
    """Build (once) what :func:`runtime_built` asks about."""
    _runtime_block(kind, form, packed)


def _build_runtime_block(kind: str | None, form: str, packed: bool) -> str:
    source = _runtime_source(kind, packed)
    payload = marshal.dumps(compile(source, "<collimate-grader>", "exec"))
    s_part = repr(source) if form == "full" else "None"
    b_part = f"bytes.fromhex({payload.hex()!r})" if form != "preloaded" else "None"
    return (
        f"S = {s_part}\nB = {b_part}\nM = {importlib.util.MAGIC_NUMBER!r}\n"
        f"I = {runtime_id()!r}\n{_BOOT}"
    )


_REPR_IS_LITERAL = (str, int, bool, type(None), bytes)


def py_literal(value: Any) -> str:
    """``value`` (JSON-like data) as Python source that evaluates back to it."""
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return repr(value)
    if type(value) is dict and all(
        type(k) is str and type(v) in _REPR_IS_LITERAL for k, v in value.items()
    ):
        return repr(value)  # (a pack's items: one C call, not a dozen of these)
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(value)
    if isinstance(value, Mapping):
        items = ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(py_literal(v) for v in value)
        if isinstance(value, tuple):
            return "(" + inner + ("," if len(value) == 1 else "") + ")"
        return "[" + inner + "]"
    raise TypeError(
        f"grader data must be JSON-like (None, bool, int, float, str, list, dict), "
        f"got {type(value).__name__}: {value!r:.80}"
    )


def guest_program(config: Mapping[str, Any], *, form: RuntimeForm = "full") -> str:
    """The complete program: the config as ``C``, then the runtime for
    ``config["kind"]`` in ``form``, and the boot that runs it."""
    if form not in RUNTIME_FORMS:
        raise ValueError(f"form must be one of {RUNTIME_FORMS}, got {form!r}")
    packed = config.get("pack") is not None
    return f"C = {py_literal(config)}\n{_runtime_block(program_kind(config), form, packed)}"


def program_kind(config: Mapping[str, Any]) -> str | None:
    """The one kind a program grades (its runtime ships that kind's code
    only), or None for a pack of several kinds (the whole runtime)."""
    if config.get("pack") is None:
        return str(config["kind"])
    kinds = {str(spec["kind"]) for spec in config["specs"]}
    return kinds.pop() if len(kinds) == 1 else None


def source_only_program(config: Mapping[str, Any]) -> str:
    """The runtime as plain source and a direct call (no bytecode, no boot):
    what any Python >= 3.8 can run, and what a human can read."""
    packed = config.get("pack") is not None
    return f"{runtime_source(program_kind(config), packed)}\nmain({py_literal(config)})\n"
