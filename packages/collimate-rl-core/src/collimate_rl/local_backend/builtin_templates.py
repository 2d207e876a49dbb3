"""The local backend's built-in templates, contributed as a built-in plugin.

Registered through the same ``collimate_rl_local_templates`` hook third-party
plugins use, so the hook is exercised by core itself. ``dkr-python311`` is
the template id the seed README's tour grades on; it runs on this server's
own interpreter (whatever its version), as a stand-in for the real image.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..plugins.markers import hookimpl
from ..rewards.program import RUNTIME_MODULE, runtime_file

# The SDK's grader runtime, warm in the python templates: a grade then ships
# only its config and the candidate (the "preloaded" form, ~1 KB) instead of
# the runtime's ~50 KB of bytecode, which every hop would carry and parse.
GRADER_RUNTIME = f"{RUNTIME_MODULE}={runtime_file()}"

BUILTIN_TEMPLATES: tuple[Mapping[str, Any], ...] = (
    {
        "id": "py",
        "kind": "python",
        "description": "warm CPython (the server's interpreter)",
        "preload": [GRADER_RUNTIME],
    },
    {
        "id": "dkr-python311",
        "kind": "python",
        "description": "warm CPython, stand-in for the dkr-python311 image",
        "preload": [GRADER_RUNTIME],
    },
    {"id": "sh", "kind": "shell", "description": "POSIX shell"},
)


@hookimpl
def collimate_rl_local_templates() -> Sequence[Mapping[str, Any]]:
    return list(BUILTIN_TEMPLATES)
