"""The local backend's template for the code environment (``collimate_code``).

``AutoEnv.from_env("collimate_code")`` asks its provider for the image
``collimate-code-env:latest``, which names the template ``collimate-code-env``.
When the ``openenv-collimate-code`` distribution is installed beside the
backend, this plugin contributes that template: an app whose server is the
environment's own (``python -m collimate_code.server``, OpenEnv's
``create_app``), started per session, so a session's ``env_vars`` reach it.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["CODE_ENV_MODULE", "CODE_ENV_TEMPLATE", "code_env_template"]

CODE_ENV_MODULE = "collimate_code"
CODE_ENV_TEMPLATE = "collimate-code-env"
#: Importing OpenEnv (which imports gradio) takes seconds of CPU; many
#: servers started at once on a small machine take longer still.
READY_TIMEOUT_S = 300.0


def code_env_template(python: str | None = None) -> Mapping[str, Any] | None:
    """The template table, or ``None`` when the code environment is not
    installed (nothing is imported to find out)."""
    if importlib.util.find_spec(CODE_ENV_MODULE) is None:
        return None
    exe = shlex.quote(python or sys.executable)
    return {
        "id": CODE_ENV_TEMPLATE,
        "kind": "app",
        "description": "OpenEnv code-grading environment server (collimate_code)",
        "command": f"{exe} -m {CODE_ENV_MODULE}.server --host 127.0.0.1 --port {{port}}",
        "ports": [8000],
        "ready_http": "/health",
        "ready_timeout_s": READY_TIMEOUT_S,
        # OpenEnv's server: an interpreter with fastapi, uvicorn and gradio
        # loaded, a thread per session; the address space is what counts.
        "limits": {"memory": "4GiB", "processes": 512, "cpu_seconds": 3600},
    }
