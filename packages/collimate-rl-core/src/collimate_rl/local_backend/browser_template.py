"""The ``browser`` template: a headless Chromium whose DevTools port (9222)
a client drives from outside the sandbox (``collimate_rl.connect_browser``).

It is an app template like any other (``templates``): the clone starts
Chromium as its server and is ready once ``/json/version`` answers. It is
not networked, so under namespaces isolation Chromium lives in a net
namespace with only a loopback of its own: it can load what the sandbox
serves itself, and nothing of the host or beyond; the engine relays the
DevTools port into that namespace (``engine.netns_relay``).

Why each flag:

* ``--headless=new``: the full browser without a display.
* ``--no-sandbox``: Chromium's own sandbox wants to make user namespaces
  and a setuid helper, which a clone (no new privileges, a seccomp filter)
  forbids; the clone is the sandbox.
* ``--remote-debugging-address=127.0.0.1`` / ``--remote-debugging-port``:
  DevTools on the clone's loopback. DevTools answers only requests whose
  ``Host`` is an IP address or ``localhost`` (against DNS rebinding), which
  the relay and a tunnel to ``127.0.0.1:<port>`` both present;
  ``--remote-allow-origins=*`` lets a WebSocket client that sends an
  ``Origin`` (a browser-based client, some CDP libraries) connect too.
* ``--user-data-dir="$HOME/chromium-profile"``: a profile in the clone's
  own writable home (``/tmp`` in a namespaced clone, a directory of its own
  in process mode), never shared between clones.
* the ``--disable-*`` / ``--no-*`` rest: no background traffic (updates,
  sync, metrics, safe browsing, crash reports) that would only fail in a
  clone without network, and no first-run work.

Where Chromium is not installed the template is still listed, marked
``unavailable`` with the command that installs it, and every sandbox of it
is refused with that message.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from typing import Any, Final

#: The template's id.
BROWSER_TEMPLATE: Final = "browser"
#: Chromium's DevTools port in the sandbox (0.8.0's ``CDP_PORT``).
DEVTOOLS_PORT: Final = 9222
#: What installs it (Debian's package; ``tools/install_toolchains.sh`` runs it).
INSTALL_HINT: Final = "apt-get install chromium"

#: The names Chromium goes by on PATH, in the order they are looked for.
_NAMES: Final = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: What a name on PATH starts, where that is a wrapper script: Debian's
#: ``/usr/bin/chromium`` sources ``/etc/chromium.d`` (API keys in the
#: environment, a ``findmnt`` of ``/dev/shm``) before it execs the binary.
_BINARY_BEHIND: Final = {"chromium": "/usr/lib/chromium/chromium"}

CHROMIUM_FLAGS: Final = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--remote-debugging-address=127.0.0.1",
    "--remote-allow-origins=*",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--no-pings",
    "--disable-breakpad",
    "--metrics-recording-only",
    "--mute-audio",
    "--password-store=basic",
    "--use-mock-keychain",
)


def find_chromium() -> str | None:
    """The Chromium executable of this host (found on PATH, so a PATH
    without it hides it), or None."""
    for name in _NAMES:
        found = shutil.which(name)
        if found is None:
            continue
        binary = _BINARY_BEHIND.get(name)
        if binary is not None and os.access(binary, os.X_OK):
            return binary
        return found
    return None


def chromium_command(executable: str) -> str:
    """The app command (``{port}`` filled in by the engine) that starts
    ``executable`` as the template's server."""
    flags = " ".join(shlex.quote(flag) for flag in CHROMIUM_FLAGS)
    return (
        f"exec {shlex.quote(executable)} {flags} --remote-debugging-port={{port}}"
        ' --user-data-dir="$HOME/chromium-profile" about:blank'
    )


def browser_template(executable: str | None = None) -> Mapping[str, Any]:
    """The template table (``executable``: default, the host's Chromium)."""
    executable = executable or find_chromium()
    table: dict[str, Any] = {
        "id": BROWSER_TEMPLATE,
        "kind": "app",
        "description": "headless Chromium, driven over CDP on port 9222 (connect_browser)",
        "command": chromium_command(executable or "chromium"),
        "ports": [DEVTOOLS_PORT],
        "ready_http": "/json/version",
        # a cold start on a loaded machine takes seconds, not tens of them
        "ready_timeout_s": 60.0,
        # its own loopback only: the page loads what the sandbox serves
        "networked": False,
        "limits": {
            # the cgroup bounds its memory; Chromium reserves terabytes of
            # address space it never touches, so no RLIMIT_AS
            "memory": "2GiB",
            "address_space": False,
            # counted in threads: a browser, its renderers and helpers
            "processes": 1024,
            "cpu_seconds": 600,
        },
    }
    if executable is None:
        table["unavailable"] = (
            f"Chromium is not installed on this host; install it with `{INSTALL_HINT}` "
            "(or `bash tools/install_toolchains.sh`) and restart the backend"
        )
    return table
