"""The local backend's built-in templates, contributed as a built-in plugin.

Registered through the same ``collimate_rl_local_templates`` hook third-party
plugins use, so the hook is exercised by core itself. ``dkr-python311`` is
the template id the seed README's tour grades on; it runs on this server's
own interpreter (whatever its version), as a stand-in for the real image.
``browser`` is a headless Chromium (see ``browser_template``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..plugins.markers import hookimpl
from ..rewards.program import RUNTIME_MODULE, runtime_file
from .browser_template import browser_template
from .toolchains import LANGUAGE_TEMPLATE, toolchain_trees


def builtin_templates() -> tuple[Mapping[str, Any], ...]:
    """The built-in templates. The python ones preload the SDK's grader
    runtime, so a grade ships only its config and the candidate (the
    "preloaded" form, ~1 KB) instead of the runtime's ~50 KB of bytecode,
    which every hop would carry and parse. (A function: the runtime's file
    is written on first use, by a server, not by every importer.)"""
    grader = f"{RUNTIME_MODULE}={runtime_file()}"
    return (
        {
            "id": "py",
            "kind": "python",
            "description": "warm CPython (the server's interpreter)",
            "preload": [grader],
        },
        {
            "id": "dkr-python311",
            "kind": "python",
            "description": "warm CPython, stand-in for the dkr-python311 image",
            "preload": [grader],
        },
        {"id": "sh", "kind": "shell", "description": "POSIX shell"},
        {
            "id": LANGUAGE_TEMPLATE,
            "kind": "python",
            "description": "compilers and runtimes of the host (C++, Java, JavaScript, "
            "TypeScript, Rust, Go), driven by a warm CPython",
            "expose": list(toolchain_trees()),
            # the same warm interpreter as "py" (one zygote for both)
            "preload": [grader],
            # the JVM, Go and Node reserve gigabytes of address space they
            # never use: memory is bounded per clone (cgroup) and per run
            # (its resident set, by the language runner), not by RLIMIT_AS
            # (output: a judge's exec returns each test's output, which a
            # checker then reads; it may be megabytes a test)
            # (cpu_seconds: the hard ceiling of every compile's and run's own
            # CPU limit, which the language runner sets below it)
            "limits": {"memory": "4GiB", "address_space": False, "output": "256MiB",
                       "cpu_seconds": 3600},
        },
        # headless Chromium for connect_browser (unavailable without Chromium)
        browser_template(),
    )


@hookimpl
def collimate_rl_local_templates() -> Sequence[Mapping[str, Any]]:
    return list(builtin_templates())
