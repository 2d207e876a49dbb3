"""``python -m collimate_code.server --port N``: serve the environment with uvicorn."""

from __future__ import annotations

import argparse
import os
import sys

#: what OpenEnv reads to serve its Gradio web interface beside the API
_WEB_INTERFACE = "ENABLE_WEB_INTERFACE"


def web_interface_enabled() -> bool:
    """OpenEnv's own rule for ``ENABLE_WEB_INTERFACE`` (off by default)."""
    return os.environ.get(_WEB_INTERFACE, "false").lower() in ("true", "1", "yes")


def skip_gradio_unless_needed() -> None:
    """Keep Gradio out of a server that will not serve it.

    OpenEnv 0.10 imports its web interface, and with it Gradio, whenever
    ``openenv.core.env_server`` is imported, and goes on without it when
    that import fails. Gradio is about 3.6 of the 4.7 seconds of CPU an
    environment server's imports take, paid by every session (a GRPO group
    of 16 episodes starts 16 servers). With the web interface off, the
    default, the import is made to fail at once (``None`` in
    ``sys.modules``). OpenEnv's later line imports it only when enabled.
    """
    if not web_interface_enabled() and "openenv" not in sys.modules:
        sys.modules.setdefault("gradio", None)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m collimate_code.server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    skip_gradio_unless_needed()

    import uvicorn  # type: ignore[import-not-found,unused-ignore]

    from .app import app

    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
