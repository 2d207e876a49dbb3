"""Finding a framework's version without importing it.

Framework plugins announce which version of their framework is installed.
The frameworks are heavy (OpenEnv pulls gradio, ~3 s to import), so an
announcement must read package metadata or locate a module, never import it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util

__all__ = ["distribution_version", "find_distribution", "module_version"]


def distribution_version(name: str) -> str | None:
    """The installed version of the distribution ``name``, or ``None``."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def find_distribution(*names: str) -> list[tuple[str, str]]:
    """``(name, version)`` for each of ``names`` that is installed, in order."""
    found = []
    for name in names:
        version = distribution_version(name)
        if version is not None:
            found.append((name, version))
    return found


def module_version(module: str) -> str | None:
    """The version of an importable top-level ``module`` not installed from an index.

    ``None`` when the module cannot be found. When it can, the version of the
    distribution that provides it, or ``"unknown"`` when it is importable only
    through ``sys.path`` / ``PYTHONPATH`` (a source checkout). The module itself
    is located, not executed.
    """
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for dist in importlib.metadata.packages_distributions().get(module, []):
        version = distribution_version(dist)
        if version is not None:
            return version
    return "unknown"
