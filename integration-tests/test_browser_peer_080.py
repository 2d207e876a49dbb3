"""The published ``collimate-rl==0.8.0`` client's ``cdp_url`` to our browser
template: the URL it mints (``compat/peer_cdp.py``, in its own venv) is one
Playwright's ``connect_over_cdp`` drives our sandbox's Chromium through,
with no change on either side."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from collimate_rl import GatewayClient, connect_browser
from collimate_rl.local_backend.browser_template import BROWSER_TEMPLATE
from collimate_rl.testing.browser import need_browser
from collimate_rl.testing.engine import namespaced_backend

COMPAT = Path(__file__).parent / "compat"
PRO = "col_pro_peer080_browser"


@pytest.mark.slow
@pytest.mark.packaging
@pytest.mark.namespaces
def test_peer_080_cdp_url_drives_our_browser_template(peer_venv: ModuleType) -> None:
    need_browser()
    python = peer_venv.peer_python(version="0.8.0")
    with (
        namespaced_backend(api_keys=[PRO]) as backend,
        GatewayClient(api_key=PRO, base_url=backend.base_url) as ours,
    ):
        run = subprocess.run(
            [
                str(python),
                "-I",
                str(COMPAT / "peer_cdp.py"),
                backend.base_url,
                PRO,
                BROWSER_TEMPLATE,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=peer_venv.clean_env(),
        )
        assert run.returncode == 0, run.stdout + run.stderr
        minted = json.loads(run.stdout.strip().splitlines()[-1])
        try:
            assert "protocol=cdp" in minted["cdp_url"], minted
            browser = connect_browser(minted["cdp_url"])
            try:
                page = browser.new_page()
                page.set_content("<title>minted by 0.8.0</title>")
                assert page.title() == "minted by 0.8.0"
            finally:
                browser.close()
        finally:
            ours.delete_sandbox(minted["sandbox"])
        assert backend.health()["sessions"] == 0
