"""Collect the templates a server runs: plugins (built-ins included) first,
then the config file and in-process tables on top.

The plugin manager comes from :func:`collimate_rl.plugins.get_plugin_manager`
when it is available; this module makes sure the built-in template plugin is
registered either way, so a server always has ``py``, ``dkr-python311`` and
``sh`` unless plugins are explicitly turned off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pluggy

from ..plugins.manager import get_plugin_manager
from ..plugins.registry import local_templates
from . import builtin_templates
from .engine.api import TemplateSpec
from .templates import (
    TemplateConfigError,
    TemplateSource,
    load_template_file,
    merge_templates,
    parse_tables,
    parse_template,
)


def _plugin_manager() -> pluggy.PluginManager:
    # The built-in templates come through the plugin manager like any other
    # (their module is in BUILTIN_PLUGIN_MODULES).
    return get_plugin_manager()


def plugin_templates(pm: pluggy.PluginManager | None = None) -> list[TemplateSource]:
    """Every template contributed through ``collimate_rl_local_templates``,
    each tagged with the plugin that contributed it (a duplicate id across
    plugins is an error naming both, raised by the plugin registry)."""
    contributions = local_templates(pm or _plugin_manager())
    out: list[TemplateSource] = []
    for contribution in contributions.values():
        origin = f"plugin {contribution.plugin!r}"
        out.append(TemplateSource(parse_template(contribution.value, origin=origin), origin))
    return out


def _in_process(templates: Any) -> list[TemplateSource]:
    """``templates=`` of the in-process backend: a TOML path, a list of
    tables / TemplateSpecs, or a mapping ``{id: table}`` (the earlier
    release's ``{"py": {"interpreter": ...}}`` shape included)."""
    origin = "templates= argument"
    if templates is None:
        return []
    if isinstance(templates, (str, Path)):
        return load_template_file(templates)
    if isinstance(templates, Mapping):
        items: Iterable[Any] = [
            {**table, "id": tid} if isinstance(table, Mapping) else table
            for tid, table in templates.items()
        ]
    else:
        items = templates
    out = []
    for item in items:
        if isinstance(item, TemplateSpec):
            out.append(TemplateSource(item, origin))
        else:
            out.append(TemplateSource(parse_template(item, origin=origin), origin))
    return out


def collect_templates(
    *,
    templates_file: str | Path | None = None,
    templates: Any = None,
    use_plugins: bool = True,
    allow_override: bool = False,
) -> list[TemplateSpec]:
    """The final template list, or :class:`TemplateConfigError`."""
    base = (
        plugin_templates()
        if use_plugins
        else parse_tables(builtin_templates.builtin_templates(), origin="built-in templates")
    )
    from_file = load_template_file(templates_file) if templates_file is not None else []
    merged = merge_templates(base, from_file, allow_override=allow_override)
    # Tables handed over in code name their ids on purpose: they replace
    # same-named templates (the earlier release's `templates={"py": ...}`).
    merged = merge_templates(merged, _in_process(templates), allow_override=True)
    if not merged:
        raise TemplateConfigError("no templates configured")
    return [src.spec for src in merged]
