"""Run by the published ``collimate-rl==0.8.0``'s interpreter (its own venv):
its client mints the CDP URL of a sandbox of our browser template.

    python peer_cdp.py BASE_URL PRO_KEY TEMPLATE

Creates the sandbox with 0.8.0's ``GatewayClient.create_sandbox`` and mints
with its ``cdp_url``; prints ``{"sandbox": ..., "cdp_url": ...}`` as the
last line and leaves the sandbox running: the test drives the browser
through that URL with Playwright, then deletes the sandbox.
"""

import json
import sys

import collimate_rl
from collimate_rl.gateway import GatewayClient

base_url, pro_key, template = sys.argv[1], sys.argv[2], sys.argv[3]
assert collimate_rl.__version__ == "0.8.0", collimate_rl.__version__

pro = GatewayClient(api_key=pro_key, base_url=base_url)
sandbox = pro.create_sandbox(template)["id"]
url = pro.cdp_url(sandbox, ttl_seconds=300)
print(json.dumps({"sandbox": sandbox, "cdp_url": url}), flush=True)
