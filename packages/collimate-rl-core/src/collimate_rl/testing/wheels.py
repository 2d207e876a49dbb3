"""A framework's own source, for tests that run its code without its stack.

TRL and verl pull torch (and transformers, ray) on install, yet the parts
of them a plugin's tests exercise (TRL's reward call, verl's reward loading
and its SandboxFusion client) are plain Python. :func:`wheel_source` gives
the package directory of ``dist==version``: the installed one when that
version is installed, else the pure-Python wheel from PyPI, checked
against PyPI's sha256 and unpacked once into a cache directory
(``$COLLIMATE_RL_WHEEL_CACHE``, default ``~/.cache/collimate-rl/wheels``).
Nothing is imported: the tests read or load single modules from the path.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import urllib.request
import zipfile
from pathlib import Path

__all__ = ["WheelUnavailable", "wheel_source"]

#: PyPI's simple index, asked for its JSON form (PEP 691)
_INDEX = "https://pypi.org/simple/{dist}/"
_JSON = "application/vnd.pypi.simple.v1+json"


class WheelUnavailable(RuntimeError):
    """The wheel is neither installed nor fetchable (offline, no such version)."""


def _cache() -> Path:
    base = os.environ.get("COLLIMATE_RL_WHEEL_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "collimate-rl" / "wheels"


def _installed(dist: str, version: str, package: str) -> Path | None:
    try:
        if importlib.metadata.version(dist) != version:
            return None
    except importlib.metadata.PackageNotFoundError:
        return None
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _wheel_url(dist: str, version: str) -> tuple[str, str]:
    """(URL, sha256) of the release's pure-Python wheel."""
    request = urllib.request.Request(_INDEX.format(dist=dist), headers={"Accept": _JSON})
    with urllib.request.urlopen(request, timeout=60) as answer:
        project = json.load(answer)
    prefix = f"{dist.replace('-', '_')}-{version}-"
    for file in project.get("files", []):
        name = file.get("filename", "")
        if name.startswith(prefix) and name.endswith("-none-any.whl"):
            return file["url"], file["hashes"]["sha256"]
    raise WheelUnavailable(f"{dist} {version} has no pure-Python wheel on PyPI")


def _fetch(dist: str, version: str, into: Path) -> None:
    url, sha256 = _wheel_url(dist, version)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = Path(tmp) / "framework.whl"
        with urllib.request.urlopen(url, timeout=300) as answer, wheel.open("wb") as out:
            shutil.copyfileobj(answer, out)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != sha256:
            raise WheelUnavailable(
                f"{dist} {version}: the wheel's sha256 is {digest}, not {sha256}"
            )
        staging = Path(tempfile.mkdtemp(dir=into.parent, prefix=into.name + "."))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(staging)
        try:
            staging.rename(into)  # (atomic: a concurrent fetch finds it whole, or not at all)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not into.is_dir():
                raise


def wheel_source(dist: str, version: str, package: str) -> Path:
    """The directory of ``package`` in ``dist==version`` (see the module
    docstring); :class:`WheelUnavailable` when it cannot be had."""
    installed = _installed(dist, version, package)
    if installed is not None:
        return installed
    unpacked = _cache() / f"{dist}-{version}"
    if not unpacked.is_dir():
        unpacked.parent.mkdir(parents=True, exist_ok=True)
        try:
            _fetch(dist, version, unpacked)
        except OSError as exc:
            raise WheelUnavailable(f"{dist} {version}: cannot fetch its wheel ({exc})") from exc
    folder = unpacked / package
    if not folder.is_dir():
        raise WheelUnavailable(f"{dist} {version}'s wheel has no {package}/")
    return folder
