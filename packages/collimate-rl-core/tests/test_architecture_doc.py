"""docs/architecture.md's walk of a unit down the grading pipeline names
only what exists: each dotted name it gives (``collimate_rl.pipeline.plan.
plan_units``) is imported and looked up, so a renamed or moved step fails
here until the walk says where it went. (The layer table is checked against
``LAYERS`` by ``test_structure_layers.py``.)"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

ARCHITECTURE = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"
WALK_TITLE = "### A unit's walk"


def walk_names(text: str) -> list[str]:
    """The dotted ``collimate_rl...`` names of the walk's section, in order."""
    assert WALK_TITLE in text, "docs/architecture.md has no walk section"
    section = text.split(WALK_TITLE, 1)[1].split("\n#", 1)[0]
    return list(dict.fromkeys(re.findall(r"`(collimate_rl(?:\.\w+)+)`", section)))


def resolve(name: str) -> Any:
    """The object ``name`` names: the longest importable module prefix, then
    attributes; LookupError saying which part is missing."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            if not hasattr(found, attr):
                raise LookupError(f"{name}: {'.'.join(parts[:cut])} has no {attr!r}")
            found = getattr(found, attr)
        return found
    raise LookupError(f"{name}: no such module")


def test_the_walk_names_every_step() -> None:
    names = walk_names(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(names) >= 15, names
    steps = [n for n in names if n.startswith("collimate_rl.pipeline.")]
    assert {n.split(".")[2] for n in steps} >= {"arguments", "plan", "schedule", "run", "read"}


@pytest.mark.parametrize("name", walk_names(ARCHITECTURE.read_text(encoding="utf-8")))
def test_each_name_of_the_walk_exists(name: str) -> None:
    assert resolve(name) is not None


def test_a_name_that_moved_fails() -> None:
    with pytest.raises(LookupError, match="has no 'plan_unitz'"):
        resolve("collimate_rl.pipeline.plan.plan_unitz")
    with pytest.raises(LookupError, match="no such module"):
        resolve("collimate_rl_nowhere.step")
