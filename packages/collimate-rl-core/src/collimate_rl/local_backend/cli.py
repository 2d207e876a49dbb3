"""``collimate serve`` / ``python -m collimate_rl.local_backend``: run the
local backend in the foreground.

SIGTERM (and a first Ctrl-C) drains: new work gets 503 ``draining``,
in-flight execs finish, then the process exits 0. A second Ctrl-C stops at
once (still cleaning up every clone, socket file and port).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Sequence

from .banner import banner
from .cluster_secret import read_secret_file
from .config import DEFAULT_KERNEL_TTL_S, DEFAULT_MAX_INFLIGHT, DEFAULT_SESSION_TTL_S, ServerConfig
from .server import BackendServer
from .templates import TemplateConfigError
from .toolchains import LANGUAGE_TEMPLATE


def build_parser(prog: str = "collimate serve") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Run the collimate local backend (the daemon wire and the gateway wire) on "
        "this machine.",
    )
    p.add_argument("--host", default="127.0.0.1", help="TCP address to bind (default: loopback)")
    p.add_argument(
        "--allow-non-loopback",
        action="store_true",
        help="let --host be an address other than loopback (the wire has no authentication: "
        "anyone who reaches the port can run code here)",
    )
    p.add_argument(
        "--port",
        type=int,
        default=None,
        help="TCP port (default 8080; 0 picks a free one; with --socket only, TCP is off)",
    )
    p.add_argument(
        "--socket", dest="socket_path", default=None, help="also/only serve this unix socket"
    )
    p.add_argument("--templates", dest="templates_file", default=None, help="TOML template file")
    p.add_argument(
        "--override-templates",
        action="store_true",
        help="let the --templates file replace built-in/plugin templates of the same id",
    )
    p.add_argument("--no-plugins", action="store_true", help="built-in templates only")
    p.add_argument("--isolation", choices=("auto", "namespaces", "process"), default="auto")
    p.add_argument(
        "--max-inflight",
        type=int,
        default=DEFAULT_MAX_INFLIGHT,
        help="execs+creates in flight before 503 at_capacity "
        f"(0 = unlimited; default {DEFAULT_MAX_INFLIGHT})",
    )
    p.add_argument(
        "--run-slots",
        type=int,
        default=None,
        help="one-shot execs running at once, the rest queued in arrival order; a CPU "
        "left idle lets the next one in (0 = no pacing; default: one per CPU)",
    )
    p.add_argument(
        "--session-ttl",
        type=float,
        default=DEFAULT_SESSION_TTL_S,
        help="seconds before an idle session is reaped "
        f"(0 = never; default {DEFAULT_SESSION_TTL_S:g})",
    )
    p.add_argument(
        "--kernel-ttl",
        type=float,
        default=DEFAULT_KERNEL_TTL_S,
        help="seconds a session may run no exec before its kernels (Sandbox.kernel()) "
        f"are killed (0 = never; default {DEFAULT_KERNEL_TTL_S:g})",
    )
    p.add_argument(
        "--api-key",
        dest="api_keys",
        action="append",
        default=[],
        metavar="KEY",
        help="a gateway-wire key col_<demo|pro|ent>_<secret> (repeatable); with no key and no "
        "keys file, a demo and a pro key are generated and printed once at start",
    )
    p.add_argument(
        "--api-keys-file",
        default=None,
        metavar="FILE",
        help="gateway-wire keys, one per line, optionally followed by a tenant name",
    )
    p.add_argument(
        "--no-gateway", action="store_true", help="serve the daemon wire only (no Bearer keys)"
    )
    p.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
    return p


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    port = args.port
    if port is None and not args.socket_path:
        port = 8080
    return ServerConfig(
        host=args.host,
        allow_non_loopback=args.allow_non_loopback,
        port=port,
        socket_path=args.socket_path,
        templates_file=args.templates_file,
        use_plugins=not args.no_plugins,
        override_templates=args.override_templates,
        isolation=args.isolation,
        max_inflight=args.max_inflight,
        run_slots=args.run_slots,
        session_ttl=args.session_ttl,
        kernel_ttl=args.kernel_ttl,
        gateway=not args.no_gateway,
        api_keys=tuple(args.api_keys),
        api_keys_file=args.api_keys_file,
        # read from a file at start, never from the command line
        cluster_secret=read_secret_file(),
    )


async def serve(config: ServerConfig) -> int:
    server = BackendServer(config)
    await server.start()
    if server.service is not None and LANGUAGE_TEMPLATE in server.service.templates:
        # the banner names the compilers found (seconds the first time on a
        # host, then read from the cache)
        with contextlib.suppress(Exception):
            await server.service.languages.found()
    print(banner(server), file=sys.stderr, flush=True)
    loop = asyncio.get_running_loop()
    interrupts = 0
    stops: list[asyncio.Task[None]] = []

    def on_sigint() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            print("draining (Ctrl-C again to stop now)", file=sys.stderr, flush=True)
            server.drain()
        else:
            stops.append(loop.create_task(server.stop()))

    loop.add_signal_handler(signal.SIGTERM, server.drain)
    loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        await server.wait_stopped()
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        loop.remove_signal_handler(signal.SIGINT)
        await server.stop()
    print("collimate local backend stopped", file=sys.stderr, flush=True)
    return 0


def main(argv: Sequence[str] | None = None, *, prog: str = "collimate serve") -> int:
    args = build_parser(prog).parse_args(list(argv) if argv is not None else None)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    try:
        config = config_from_args(args)
        return asyncio.run(serve(config))
    except (TemplateConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot listen: {exc}", file=sys.stderr)
        return 1
