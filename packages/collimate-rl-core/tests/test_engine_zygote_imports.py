"""What the zygote imports is in every process forked from it.

Every clone, exec child, clean twin and packed candidate is a fork of the
zygote, and a fork copies the page-table entries of every page the zygote
holds; the exit tears them down again. A module the guest code never uses
at run time (``typing``, imported only for annotations) costs each
candidate of a pack its pages for nothing (measured in
``benchmarks/HISTORY.md``, 2026-12-05).

Checked in a fresh ``python -I -S`` that loads the guest package the way
``_zygote.py`` does (its modules, without the ``collimate_rl`` package
around them)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import collimate_rl.local_backend.engine as engine

ZYGOTE_ENTRY = Path(engine.__file__).with_name("_zygote.py")

LOAD = textwrap.dedent(
    """
    import importlib.util, json, sys
    spec = importlib.util.spec_from_file_location("_collimate_zygote_entry", sys.argv[1])
    entry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entry)
    entry.load_guest()
    print(json.dumps(sorted(sys.modules)))
    """
)

#: imported by guest code for annotations only, never at run time
ANNOTATIONS_ONLY = ("typing", "typing_extensions")


def guest_imports() -> list[str]:
    """Every module of a fresh interpreter that has loaded the guest
    package (the loader's own ``importlib.util`` and ``json`` included:
    neither imports ``typing``)."""
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", LOAD, str(ZYGOTE_ENTRY)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded: list[str] = json.loads(out.stdout)
    return loaded


def test_the_guest_package_loads_without_the_typing_module() -> None:
    loaded = guest_imports()
    assert "collimate_rl.guest.zygote.twin" in loaded  # the check saw the guest
    assert not [name for name in loaded if name in ANNOTATIONS_ONLY], loaded


def test_the_guest_package_does_not_import_the_sdk_around_it() -> None:
    loaded = guest_imports()
    outside = [
        name
        for name in loaded
        if name.startswith("collimate_rl") and not name.startswith("collimate_rl.guest.zygote")
    ]
    assert outside == [], outside
    assert "httpx" not in loaded and "pluggy" not in loaded
