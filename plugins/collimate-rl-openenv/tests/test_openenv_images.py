"""image_to_template: which template an OpenEnv image reference names."""

from __future__ import annotations

import pytest

from collimate_rl.openenv import image_to_template


@pytest.mark.parametrize(
    ("image", "template"),
    [
        ("collimate-code-env", "collimate-code-env"),  # a bare id
        ("collimate-code-env:latest", "collimate-code-env"),  # AutoEnv's default image
        ("snapshot:tmpl_0123abc", "tmpl_0123abc"),
        ("snapshot:coding-env:v2", None),  # a snapshot id has no tag
        ("ghcr.io/org/coding-env:v2", "coding-env"),
        ("localhost:5000/team/echo_env:1.0", "echo_env"),  # a registry with a port
        ("registry.hf.space/openenv-echo-env:latest", "openenv-echo-env"),
        ("coding-env@sha256:" + "ab" * 32, "coding-env"),
        ("ghcr.io/org/coding-env:v2@sha256:" + "cd" * 32, "coding-env"),
        ("  py  ", "py"),
    ],
)
def test_reads_ids_snapshots_and_docker_references(image: str, template: str | None) -> None:
    if template is None:
        with pytest.raises(ValueError, match="names no template id"):
            image_to_template(image)
    else:
        assert image_to_template(image) == template


@pytest.mark.parametrize("image", ["", "   ", "snapshot:", "a/b/:tag", "bad name", "-lead"])
def test_refuses_what_names_no_template(image: str) -> None:
    with pytest.raises(ValueError, match="image"):
        image_to_template(image)


def test_refuses_a_non_string() -> None:
    with pytest.raises(ValueError, match="non-empty string"):
        image_to_template(None)  # type: ignore[arg-type]
