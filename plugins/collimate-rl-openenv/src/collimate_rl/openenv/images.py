"""Which template an OpenEnv "image" names.

OpenEnv hands a provider a Docker image reference (``AutoEnv`` makes one from
the environment's name, ``coding-env:latest``). Collimate runs templates, so
the reference is read as a template id: a bare id is itself,
``snapshot:<id>`` names a snapshot (template) id explicitly, and a Docker
reference keeps its last path component without tag or digest
(``ghcr.io/org/coding-env:v2`` and ``coding-env@sha256:...`` are
``coding-env``). A mapping of your own goes in ``template_for_image``.
"""

from __future__ import annotations

import re

__all__ = ["image_to_template"]

_TEMPLATE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SNAPSHOT = "snapshot:"


def image_to_template(image: str) -> str:
    """The template id ``image`` names (see the module docstring).

    Raises ``ValueError`` naming the image when no template id can be read
    from it."""
    if not isinstance(image, str) or not image.strip():
        raise ValueError(f"image must be a non-empty string, got {image!r}")
    ref = image.strip()
    if ref.startswith(_SNAPSHOT):
        tid = ref[len(_SNAPSHOT) :]
    else:
        name = ref.split("@", 1)[0]  # a digest: name@sha256:...
        name = name.rsplit("/", 1)[-1]  # registry[:port]/namespace/name
        tid = name.split(":", 1)[0]  # a tag: name:tag
    if not _TEMPLATE_ID.match(tid):
        raise ValueError(
            f"image {image!r} names no template id (expected an id, 'snapshot:<id>' or a "
            f"Docker reference whose name is one: letters, digits, '.', '_', '-'); "
            f"got {tid!r}; pass template_for_image= to map it yourself"
        )
    return tid
