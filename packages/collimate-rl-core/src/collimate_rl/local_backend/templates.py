"""Templates of the local backend: parsed from tables into :class:`TemplateSpec`.

A template table is the same wherever it comes from (the ``--templates`` TOML
file, a plugin's ``collimate_rl_local_templates`` hook, or the in-process
``templates=`` argument)::

    [[templates]]
    id = "py"
    kind = "python"              # python | shell | app
    python = "/usr/bin/python3"  # python kind; default: the server's interpreter
    preload = ["json", "re"]     # modules the warm interpreter imports ahead of time;
                                 # "name=/path/file.py" loads one file as module `name`
                                 # without importing the package around it
    networked = false
    unavailable = "..."          # this host cannot run it, and why (clones are refused)
    expose = ["/data/x"]         # host paths its code may read (read-only); by
                                 # default it sees only system dirs and its interpreter
    [templates.limits]
    cpu_seconds = 60
    memory = "1GiB"              # bytes as int, or a size string
    processes = 256
    file_size = "256MiB"
    output = "16MiB"
    cpus = 1.0                   # per clone CPU bandwidth where cgroups are in force
                                 # (default: none; a CPU cgroup costs each exec latency)
    address_space = true         # memory also as each process's RLIMIT_AS (false for
                                 # runtimes that reserve gigabytes: JVM, Go, Node)

    [[templates]]
    id = "web"
    kind = "app"
    command = "python -m http.server {port}"
    ports = [8000]
    ready_http = "/"
    warm_pool = 2

``[templates.<id>]`` tables (the id taken from the key) are accepted too.
Every mistake is reported with the template and the key at fault, because a
backend that silently ignores a typo in a limit is a backend that lies.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .engine.api import Limits, TemplateKind, TemplateSpec
from .engine.exposure import ExposeError, check_exposable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "TemplateConfigError",
    "TemplateSource",
    "load_template_file",
    "merge_templates",
    "parse_size",
    "parse_template",
]

_KINDS: tuple[TemplateKind, ...] = ("python", "shell", "app")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_COMMON_KEYS = {"id", "kind", "networked", "limits", "description", "expose", "unavailable"}
_KIND_KEYS: dict[str, set[str]] = {
    "python": {"python", "interpreter", "preload"},
    "shell": set(),
    "app": {"command", "ports", "ready_http", "ready_timeout_s", "warm_pool", "python"},
}
_LIMIT_KEYS = {
    "cpu_seconds": "cpu_seconds",
    "memory": "memory_bytes",
    "memory_bytes": "memory_bytes",
    "processes": "max_processes",
    "max_processes": "max_processes",
    "file_size": "file_size_bytes",
    "file_size_bytes": "file_size_bytes",
    "output": "output_bytes",
    "output_bytes": "output_bytes",
    "cpus": "cpus",
    "address_space": "address_space",
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B?)?\s*$", re.IGNORECASE)


class TemplateConfigError(ValueError):
    """A template table is wrong; the message names the source, id and key."""


@dataclass(frozen=True)
class TemplateSource:
    """A parsed template and where it was defined (for duplicate errors)."""

    spec: TemplateSpec
    origin: str


def parse_size(value: Any, *, what: str) -> int:
    """``1048576``, ``"1MiB"``, ``"1M"`` (decimal) or ``"512KiB"`` -> bytes."""
    if isinstance(value, bool):
        raise TemplateConfigError(f"{what}: expected a size, got {value!r}")
    if isinstance(value, int):
        if value <= 0:
            raise TemplateConfigError(f"{what}: must be positive, got {value}")
        return value
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m:
            number, unit = float(m.group(1)), (m.group(2) or "").upper()
            letter = unit[:1] if unit[:1] in "KMGT" and unit else ""
            power = "KMGT".index(letter) + 1 if letter else 0
            size = int(number * ((1024 if "I" in unit else 1000) ** power))
            if size > 0:
                return size
    raise TemplateConfigError(f"{what}: expected bytes or a size like '512MiB', got {value!r}")


def _positive_int(value: Any, *, what: str, allow_zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        floor = "a non-negative" if allow_zero else "a positive"
        raise TemplateConfigError(f"{what}: expected {floor} integer, got {value!r}")
    return value


def _limits(raw: Any, *, where: str) -> Limits:
    if raw is None:
        return Limits()
    if not isinstance(raw, Mapping):
        raise TemplateConfigError(f"{where}: limits must be a table")
    unknown = sorted(set(raw) - set(_LIMIT_KEYS))
    if unknown:
        raise TemplateConfigError(
            f"{where}: unknown limit(s) {unknown}; known: {sorted(set(_LIMIT_KEYS))}"
        )
    values: dict[str, Any] = {}
    for key, value in raw.items():
        field_name = _LIMIT_KEYS[key]
        what = f"{where}: limits.{key}"
        if field_name in ("memory_bytes", "file_size_bytes", "output_bytes"):
            values[field_name] = parse_size(value, what=what)
        elif field_name == "cpus":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise TemplateConfigError(f"{what}: expected a positive number, got {value!r}")
            values[field_name] = float(value)
        elif field_name == "address_space":
            if not isinstance(value, bool):
                raise TemplateConfigError(f"{what}: expected true or false, got {value!r}")
            values[field_name] = value
        else:
            values[field_name] = _positive_int(value, what=what)
    return Limits(**values)


def _str_list(raw: Any, *, what: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise TemplateConfigError(f"{what}: expected a list of strings, got {raw!r}")
    return tuple(raw)


def parse_template(table: Mapping[str, Any], *, origin: str = "<config>") -> TemplateSpec:
    """One template table -> :class:`TemplateSpec`, or a clear
    :class:`TemplateConfigError`."""
    if not isinstance(table, Mapping):
        raise TemplateConfigError(f"{origin}: a template must be a table, got {table!r}")
    tid = table.get("id")
    if not isinstance(tid, str) or not _ID_RE.match(tid):
        raise TemplateConfigError(f"{origin}: template id must match {_ID_RE.pattern}, got {tid!r}")
    where = f"{origin}: template {tid!r}"
    kind = table.get("kind", "python")
    if kind not in _KINDS:
        raise TemplateConfigError(f"{where}: kind must be one of {list(_KINDS)}, got {kind!r}")
    unknown = sorted(set(table) - _COMMON_KEYS - _KIND_KEYS[kind])
    if unknown:
        raise TemplateConfigError(
            f"{where}: unknown key(s) {unknown} for kind {kind!r}; "
            f"known: {sorted(_COMMON_KEYS | _KIND_KEYS[kind])}"
        )
    networked = table.get("networked", False)
    if not isinstance(networked, bool):
        raise TemplateConfigError(f"{where}: networked must be true or false")
    python = table.get("python", table.get("interpreter"))
    if python is not None and (not isinstance(python, str) or not python):
        raise TemplateConfigError(f"{where}: python must be an interpreter path")
    unavailable = table.get("unavailable")
    if unavailable is not None and (not isinstance(unavailable, str) or not unavailable):
        raise TemplateConfigError(f"{where}: unavailable must be a reason (a string)")
    expose = _str_list(table.get("expose"), what=f"{where}: expose")
    try:
        expose = tuple(check_exposable(p) for p in expose)
    except ExposeError as exc:
        raise TemplateConfigError(f"{where}: expose: {exc}") from None
    spec_kw: dict[str, Any] = {
        "id": tid,
        "kind": kind,
        "python": python,
        "preload": _str_list(table.get("preload"), what=f"{where}: preload"),
        "networked": networked,
        "limits": _limits(table.get("limits"), where=where),
        "expose": expose,
        "unavailable": unavailable,
    }
    if kind == "app":
        spec_kw.update(_app_fields(table, where=where))
    return TemplateSpec(**spec_kw)


def _app_fields(table: Mapping[str, Any], *, where: str) -> dict[str, Any]:
    command = table.get("command")
    if not isinstance(command, str) or "{port}" not in command:
        raise TemplateConfigError(
            f'{where}: an app template needs command = "... {{port}} ...", got {command!r}'
        )
    ports_raw = table.get("ports", [])
    if not isinstance(ports_raw, list) or not all(
        isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in ports_raw
    ):
        raise TemplateConfigError(f"{where}: ports must be a list of port numbers")
    ready_http = table.get("ready_http")
    if ready_http is not None and (
        not isinstance(ready_http, str) or not ready_http.startswith("/")
    ):
        raise TemplateConfigError(f"{where}: ready_http must be a path starting with '/'")
    ready_timeout = table.get("ready_timeout_s", 30.0)
    if (
        isinstance(ready_timeout, bool)
        or not isinstance(ready_timeout, (int, float))
        or ready_timeout <= 0
    ):
        raise TemplateConfigError(f"{where}: ready_timeout_s must be a positive number")
    return {
        "app_command": command,
        "ports": tuple(ports_raw),
        "ready_http": ready_http,
        "ready_timeout_s": float(ready_timeout),
        "warm_pool": _positive_int(
            table.get("warm_pool", 0), what=f"{where}: warm_pool", allow_zero=True
        ),
        # App templates expose ports, which implies a NIC (docs/wire.md §3, ReadySpec).
        "networked": bool(table.get("networked", True)),
    }


def tables_from_document(doc: Mapping[str, Any], *, origin: str) -> list[Mapping[str, Any]]:
    """The template tables of a parsed TOML document (list or keyed form)."""
    unknown = sorted(set(doc) - {"templates"})
    if unknown:
        raise TemplateConfigError(
            f"{origin}: unknown top-level key(s) {unknown}; expected [[templates]]"
        )
    raw = doc.get("templates", [])
    if isinstance(raw, list):
        return list(raw)
    if isinstance(raw, Mapping):
        tables: list[Mapping[str, Any]] = []
        for key, table in raw.items():
            if not isinstance(table, Mapping):
                raise TemplateConfigError(f"{origin}: templates.{key} must be a table")
            if "id" in table and table["id"] != key:
                raise TemplateConfigError(
                    f"{origin}: templates.{key} has a different id {table['id']!r}"
                )
            tables.append({**table, "id": key})
        return tables
    raise TemplateConfigError(f"{origin}: 'templates' must be an array of tables or a table")


def load_template_file(path: str | Path) -> list[TemplateSource]:
    """Parse a TOML template file."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            doc = tomllib.load(fh)
    except OSError as exc:
        raise TemplateConfigError(f"{p}: cannot read template file: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise TemplateConfigError(f"{p}: invalid TOML: {exc}") from exc
    origin = str(p)
    return parse_tables(tables_from_document(doc, origin=origin), origin=origin)


def parse_tables(tables: Iterable[Mapping[str, Any]], *, origin: str) -> list[TemplateSource]:
    return [TemplateSource(parse_template(t, origin=origin), origin) for t in tables]


def merge_templates(
    base: Sequence[TemplateSource], overrides: Sequence[TemplateSource], *, allow_override: bool
) -> list[TemplateSource]:
    """``base`` (plugins, built-ins) plus ``overrides`` (the config file, the
    in-process argument). A duplicate id within one group is always an error;
    across groups it is an error unless ``allow_override`` says the config wins."""
    merged: dict[str, TemplateSource] = {}
    for group, may_replace in ((base, False), (overrides, allow_override)):
        seen_here: dict[str, str] = {}
        for src in group:
            tid = src.spec.id
            if tid in seen_here:
                raise TemplateConfigError(
                    f"template {tid!r} is defined twice: in {seen_here[tid]} and in {src.origin}"
                )
            seen_here[tid] = src.origin
            if tid in merged and not may_replace:
                raise TemplateConfigError(
                    f"template {tid!r} is defined twice: in {merged[tid].origin} "
                    f"and in {src.origin} (to let the config file win, pass --override-templates)"
                )
            merged[tid] = src
    return list(merged.values())
