"""How the environment's server starts: ``python -m collimate_code.server``
leaves Gradio out unless OpenEnv's web interface is asked for (Gradio is
most of a server's start, paid by every episode's session)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

#: what a fresh interpreter reports after the server's entry point has
#: prepared and the app is built, as ``python -m collimate_code.server`` does
PROBE = """
import json, sys
import collimate_code
early = sorted(m for m in ("openenv", "gradio") if m in sys.modules)
from collimate_code.server.__main__ import skip_gradio_unless_needed
skip_gradio_unless_needed()
from collimate_code.server.app import app
print(json.dumps({
    "loaded_by_the_package": early,
    "gradio": "absent" if "gradio" not in sys.modules
              else "blocked" if sys.modules["gradio"] is None else "imported",
    "routes": sorted(getattr(r, "path", "") for r in app.routes),
}))
"""


def _probe(**env: str) -> dict[str, object]:
    environ = {k: v for k, v in os.environ.items() if k != "ENABLE_WEB_INTERFACE"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_the_package_imports_without_openenv_and_its_names_resolve_on_use() -> None:
    got = _probe()
    assert got["loaded_by_the_package"] == []
    import collimate_code

    assert collimate_code.CollimateCodeEnv.__name__ == "CollimateCodeEnv"
    assert {"CollimateCodeAction", "CollimateCodeEnv"} <= set(dir(collimate_code))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = collimate_code.nope  # type: ignore[attr-defined]


def test_a_server_without_the_web_interface_never_imports_gradio() -> None:
    got = _probe()
    assert got["gradio"] in ("blocked", "absent")
    assert {"/reset", "/step", "/ws"} <= set(got["routes"])  # type: ignore[arg-type]
    assert not any(str(r).startswith("/web") for r in got["routes"])  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", ["true", "1", "YES"])
def test_asking_for_the_web_interface_leaves_gradio_to_openenv(value: str) -> None:
    got = _probe(ENABLE_WEB_INTERFACE=value)
    assert got["gradio"] != "blocked"
    import openenv.core.env_server as server

    if getattr(server, "create_web_interface_app", None) is not None:
        # OpenEnv's line that serves the interface at /web with Gradio
        assert got["gradio"] == "imported"
        assert any(str(r).startswith("/web") for r in got["routes"])  # type: ignore[attr-defined]
