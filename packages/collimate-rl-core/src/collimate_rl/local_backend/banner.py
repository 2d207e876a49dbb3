"""The start-up banner: where the server listens and, above all, what
isolation is really in force. It never claims more than the engine reports."""

from __future__ import annotations

from .server import BackendServer

_NOT_A_SANDBOX = (
    "!! ISOLATION: process mode -- this is NOT a sandbox. Code runs as processes of this user\n"
    "!! with rlimits and process-group kills only: it can read and write your files and reach\n"
    "!! the network. Use it for trusted code, tests and demos only."
)


def banner(server: BackendServer) -> str:
    assert server.service is not None
    svc = server.service
    wires = "daemon wire + gateway wire" if server.gateway is not None else "daemon wire"
    lines = [f"collimate local backend {svc.health()['version']} ({wires})"]
    if server.base_url:
        lines.append(f"  listening on {server.base_url}")
        if server.config.host not in ("127.0.0.1", "::1", "localhost"):
            lines.append(
                f"!! bound to {server.config.host}: the daemon wire has no authentication,"
                " so anyone who can reach this port can run code here"
            )
    if server.socket_path:
        lines.append(f"  listening on unix:{server.socket_path}")
    lines.append(f"  templates: {', '.join(sorted(svc.templates))}")
    limit = svc.admission.max_inflight or "unlimited"
    ttl = f"{svc.session_ttl:g}s" if svc.session_ttl else "off"
    slots = svc.run_queue.slots or "unpaced"
    lines.append(
        f"  max in-flight: {limit}; one-shots running at once: {slots}; idle session TTL: {ttl}"
    )
    if server.gateway is not None:
        lines.append(
            f"  gateway wire: {len(server.gateway.keys)} API key(s) "
            "(send Authorization: Bearer <key>)"
        )
        for tier, key in sorted(server.generated_keys.items()):
            # the one place a key is ever shown: keys this server made up itself
            lines.append(f"  generated {tier} key (shown once): {key}")
    lines.append(f"  isolation: {svc.engine.isolation} ({svc.engine.isolation_detail})")
    if svc.engine.isolation == "process":
        lines.append(_NOT_A_SANDBOX)
    return "\n".join(lines)
