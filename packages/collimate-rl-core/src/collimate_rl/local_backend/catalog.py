"""The gateway's public catalog, and which images a bake can run locally.

Every template the server runs (built-ins, plugins, ``--templates``) is a
public catalog row, so ``GET /v1/images`` lists exactly what a sandbox can be
created from. A row's ``tier`` is ``demo`` for a vsock-only template and
``pro`` for a networked one (demo keys cannot use those).

There is no container runtime here: a bake's ``image`` is resolved to a
local stand-in. A catalog row's ``image`` (``local/<id>``) or id runs that
template; ``python`` images (any tag, any registry path ending in
``python``) run a python template on this server's interpreter; the common
base images ``alpine``, ``busybox``, ``debian`` and ``ubuntu`` run the host's
POSIX shell. Any other image is a build error, as an image that cannot be
pulled is on a real fleet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .engine.api import TemplateSpec

_DESCRIPTIONS = {
    "python": "warm CPython on the local backend's interpreter",
    "shell": "POSIX shell of the local backend's host",
    "app": "an app server, reached through per-sandbox endpoints",
}
_SHELL_IMAGES = ("alpine", "busybox", "debian", "ubuntu")


#: The catalog's names for the built-in templates, as the managed catalog
#: names its images: ``client.env("python", width=N)`` finds ``py``.
_CATALOG_NAMES = {"py": "python", "sh": "shell"}


def catalog_image(template_id: str) -> str:
    return f"local/{template_id}"


def catalog_row(spec: TemplateSpec) -> dict[str, Any]:
    return {
        "id": spec.id,
        "name": _CATALOG_NAMES.get(spec.id, spec.id),
        "image": catalog_image(spec.id),
        "visibility": "public",
        "tier": "pro" if spec.networked else "demo",
        "description": _description(spec),
    }


def _description(spec: TemplateSpec) -> str:
    text = _DESCRIPTIONS.get(spec.kind, spec.kind)
    return f"{text} (unavailable here: {spec.unavailable})" if spec.unavailable else text


def catalog_rows(templates: Mapping[str, TemplateSpec]) -> list[dict[str, Any]]:
    return [catalog_row(templates[tid]) for tid in sorted(templates)]


def _repository(image: str) -> str:
    """``docker.io/library/python:3.11@sha256:..`` -> ``python``."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[0].lower()


def _first_of_kind(
    templates: Mapping[str, TemplateSpec], kind: str, prefer: str
) -> TemplateSpec | None:
    if prefer in templates and templates[prefer].kind == kind:
        return templates[prefer]
    for tid in sorted(templates):
        if templates[tid].kind == kind and not templates[tid].networked:
            return templates[tid]
    return None


def resolve_image(image: str, templates: Mapping[str, TemplateSpec]) -> tuple[TemplateSpec, bool]:
    """The local template an image runs as, and whether it is a catalog
    image (its artifact is inherited, not built). ``LookupError`` says why
    an image cannot run here."""
    if image.startswith("local/") and image[len("local/") :] in templates:
        return templates[image[len("local/") :]], True
    if image in templates:
        return templates[image], True
    repo = _repository(image)
    if repo == "python":
        spec = _first_of_kind(templates, "python", "py")
        if spec is not None:
            return spec, False
    if repo in _SHELL_IMAGES:
        spec = _first_of_kind(templates, "shell", "sh")
        if spec is not None:
            return spec, False
    raise LookupError(
        f"image {image!r} is not available on the local backend: it runs the catalog's "
        "images (local/<id>), python[:tag] images and the alpine/busybox/debian/ubuntu "
        "base images"
    )
