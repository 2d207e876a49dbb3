"""Docs that cannot rot silently: every module, file, function, class member,
route and command that docs/, the READMEs and the docstrings and comments of
core and the plugins name exists (``tools/docs_check/``, read with ast,
nothing imported).

The check on the real tree must find nothing; the same check on a small
planted tree must find each kind of stale name, so a checker that stopped
reading would fail here too.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def test_every_name_the_docs_give_exists(docs_check: ModuleType) -> None:
    dc = docs_check
    checker = dc.name_check(dc.Project(ROOT))
    assert not checker.findings, "stale names in the docs:\n" + "\n".join(
        map(str, checker.findings)
    )
    # and it read what it should: each kind of reference, in numbers (a
    # checker whose patterns stopped matching would otherwise pass)
    for kind, at_least in {
        "role": 300,
        "dotted": 200,
        "file": 150,
        "route": 50,
        "import": 15,
        "class member": 10,
        "folder": 10,
        "hatch": 10,
        "link": 3,
    }.items():
        assert checker.checked[kind] >= at_least, (kind, checker.checked)


# -- a planted tree: one stale name of each kind --------------------------

PLANTED = {
    "hatch.toml": """
        [envs.lint.scripts]
        all = "ruff check ."
    """,
    "packages/core/src/collimate_rl/__init__.py": '''
        """The package."""
        from .mod import Real, real_fn
    ''',
    "packages/core/src/collimate_rl/mod.py": '''
        """Real names: :func:`real_fn`, :class:`Real`, :meth:`Real.method`,
        :mod:`.other`, :func:`.other.helper`. Stale ones: :mod:`.bogus_module`
        and :func:`.other.bogus_function`; ``Real.bogus_member``."""


        def real_fn() -> None:
            """Calls :func:`missing_everywhere`."""


        class Real:
            def method(self) -> None:
                # see collimate_rl.gone_module for the rest
                pass
    ''',
    "packages/core/src/collimate_rl/other.py": '''
        """Helpers; the routes are in ``local_backend/daemon_wire.py``."""


        def helper() -> None:
            pass
    ''',
    "packages/core/src/collimate_rl/local_backend/__init__.py": "",
    "packages/core/src/collimate_rl/local_backend/daemon_wire.py": '''
        """The daemon wire: ``GET /v1/health``, ``POST /v1/things``; and
        ``GET /v1/bogus_route`` (stale)."""


        def build(router, service):
            async def health(req, p):
                return service.health()

            router.add("GET", "/v1/health", health)
            return router
    ''',
    "packages/core/README.md": """
        # core

        `collimate_rl.mod.real_fn`, `collimate_rl.mod.Real.method`,
        `packages/core/src/collimate_rl/mod.py`, `mod.py: real_fn`,
        `GET /v1/health`, `hatch run lint:all`, [the guide](../../docs/guide.md).

        ```python
        from collimate_rl import Real, real_fn
        from collimate_rl.mod import gone_function
        ```
    """,
    "docs/guide.md": """
        # Guide

        ## Names

        `collimate_rl.no_such_module`, `collimate_rl.mod.bogus_fn`,
        `packages/core/src/collimate_rl/missing.py`, `mod.py: bogus_helper`,
        `tests/test_nothing.py`, `rewards/nowhere/`, `Real.nothing`,
        `POST /v1/nowhere`, `/v1/nothing/{id}`, `hatch run lint:nope`,
        [a page](missing.md), [an anchor](#no-such-heading), [fine](#names).
    """,
}

STALE = {
    ("name", ".bogus_module"),
    ("name", ".other.bogus_function"),
    ("name", "Real.bogus_member"),
    ("name", "missing_everywhere"),
    ("name", "collimate_rl.gone_module"),
    ("name", "collimate_rl.mod.gone_function"),
    ("name", "collimate_rl.no_such_module"),
    ("name", "collimate_rl.mod.bogus_fn"),
    ("name", "mod.py: bogus_helper"),
    ("name", "Real.nothing"),
    ("file", "packages/core/src/collimate_rl/missing.py"),
    ("file", "tests/test_nothing.py"),
    ("file", "rewards/nowhere/"),
    ("route", "GET /v1/bogus_route"),
    ("route", "POST /v1/nowhere"),
    ("route", "POST /v1/things"),  # named in a docstring, served by no router
    ("route", "/v1/nothing/{id}"),
    ("hatch", "lint:nope"),
    ("link", "missing.md"),
    ("anchor", "#no-such-heading"),
}


def test_each_planted_stale_name_is_reported(docs_check: ModuleType, tmp_path: Path) -> None:
    dc = docs_check
    project = dc.Project(write(tmp_path, PLANTED))
    found = {(f.kind, f.ref) for f in dc.name_findings(project)}
    assert found == STALE, (
        f"missed: {sorted(STALE - found)}\nreported but not planted: {sorted(found - STALE)}"
    )


def test_findings_say_where(docs_check: ModuleType, tmp_path: Path) -> None:
    dc = docs_check
    project = dc.Project(write(tmp_path, PLANTED))
    by_ref = {f.ref: f for f in dc.name_findings(project)}
    assert by_ref[".bogus_module"].where == "packages/core/src/collimate_rl/mod.py:2"
    assert by_ref["collimate_rl.gone_module"].where == "packages/core/src/collimate_rl/mod.py:12"
    assert by_ref["collimate_rl.mod.gone_function"].where == "packages/core/README.md:9"
    assert by_ref["POST /v1/nowhere"].where == "docs/guide.md:8"
    assert "collimate_rl.mod has no 'bogus_fn'" in by_ref["collimate_rl.mod.bogus_fn"].why


def test_relative_names_resolve_as_imports_do(docs_check: ModuleType) -> None:
    dc = docs_check
    assert dc.resolve_relative("collimate_rl.rewards.grader", ".wire") == (
        "collimate_rl.rewards.grader.wire"
    )
    assert dc.resolve_relative("collimate_rl.rewards.grader", "..program") == (
        "collimate_rl.rewards.program"
    )
    assert dc.resolve_relative("collimate_rl", ".rewards.grader.entry") == (
        "collimate_rl.rewards.grader.entry"
    )
