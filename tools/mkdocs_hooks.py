"""MkDocs hooks (``mkdocs.yml``: ``hooks``): a link to a README that a page
of the site includes goes to that page.

The pages of ``docs/`` link to the READMEs where they live in the repository
(``../benchmarks/README.md``), so the links work when the Markdown is read on
its own. In the site, those READMEs are pages of their own: a stub under
``docs/`` includes each one (``{% include-markdown "../benchmarks/README.md" %}``).
This hook finds the stubs and rewrites each link to an included README (with
its ``#anchor``) into a link to the stub, before MkDocs checks the links; a
link to anything else outside ``docs/`` is left for MkDocs to report.

An image of an included README that is an SVG file outside ``docs/`` (the
benchmarks' charts, ``benchmarks/results/*.svg``) is inlined into the page:
the site then shows the same committed chart the README shows, without a
copy of it under ``docs/``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

_INCLUDE = re.compile(r"""\{%\s*include-markdown\s+["'](?P<path>[^"']+)["']""")
_SVG_IMAGE = re.compile(r"!\[[^\]]*\]\((?P<target>[^)\s#]+\.svg)\)")
_LINK = re.compile(r"(?P<head>\]\()(?P<target>[^)\s#]+)(?P<anchor>#[^)\s]*)?(?P<tail>\))")

# included README (absolute path) -> the stub page including it (path in docs/)
_STUBS: dict[Path, str] = {}


def on_config(config: Any, **_: Any) -> Any:
    docs = Path(config["docs_dir"]).resolve()
    _STUBS.clear()
    for page in sorted(docs.rglob("*.md")):
        m = _INCLUDE.search(page.read_text(encoding="utf-8"))
        if m:
            included = (page.parent / m.group("path")).resolve()
            _STUBS[included] = page.relative_to(docs).as_posix()
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, **_: Any) -> str:
    docs = Path(config["docs_dir"]).resolve()
    here = (docs / page.file.src_uri).parent

    def rewrite(m: re.Match[str]) -> str:
        target = m.group("target")
        if re.match(r"^[a-z][a-z+.-]*:", target):
            return m.group(0)  # https:, mailto:
        stub = _STUBS.get((here / target).resolve())
        if stub is None:
            return m.group(0)
        rel = os.path.relpath(docs / stub, here).replace(os.sep, "/")
        return f"{m.group('head')}{rel}{m.group('anchor') or ''}{m.group('tail')}"

    def inline(m: re.Match[str]) -> str:
        target = m.group("target")
        path = (here / target).resolve()
        if re.match(r"^[a-z][a-z+.-]*:", target) or path.is_relative_to(docs):
            return m.group(0)
        if not path.is_file():
            return m.group(0)  # left for MkDocs to report
        return '<div class="chart">' + path.read_text(encoding="utf-8") + "</div>"

    return _LINK.sub(rewrite, _SVG_IMAGE.sub(inline, markdown))
