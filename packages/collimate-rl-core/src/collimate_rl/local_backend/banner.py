"""The start-up banner: where the server listens and, above all, what
isolation is really in force. It never claims more than the engine reports."""

from __future__ import annotations

from .config import is_loopback
from .server import BackendServer

_NOT_A_SANDBOX = (
    "!! ISOLATION: process mode -- this is NOT a sandbox. Code runs as processes of this user\n"
    "!! with rlimits and process-group kills only: it can read and write your files and reach\n"
    "!! the network. Use it for trusted code, tests and demos only."
)


def bind_warning(host: str) -> str | None:
    """The banner's warning for a TCP bind beyond loopback (which the
    config only accepts with ``allow_non_loopback``)."""
    if is_loopback(host):
        return None
    return (
        f"!! bound to {host}, not loopback: the daemon wire has no authentication,"
        " so anyone who can reach this port can run code here"
    )


def banner(server: BackendServer) -> str:
    assert server.service is not None
    svc = server.service
    wires = "daemon wire + gateway wire" if server.gateway is not None else "daemon wire"
    lines = [f"collimate local backend {svc.health()['version']} ({wires})"]
    if server.base_url:
        lines.append(f"  listening on {server.base_url}")
        warning = bind_warning(server.config.host)
        if warning:
            lines.append(warning)
    if server.socket_path:
        lines.append(f"  listening on unix:{server.socket_path}")
    lines.append(f"  templates: {', '.join(sorted(svc.templates))}")
    for tid, spec in sorted(svc.templates.items()):
        if spec.unavailable:
            lines.append(f"  template {tid} is unavailable here: {spec.unavailable}")
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
    languages = svc.health().get("languages")
    if isinstance(languages, dict) and not languages.get("probing"):
        found = [f"{n} ({v['compiler']})" for n, v in languages.items() if v.get("available")]
        missing = [f"{n} ({v['install']})" for n, v in languages.items() if not v.get("available")]
        lines.append(f"  languages: {', '.join(found) or 'none'}")
        if missing:
            lines.append(f"  languages missing: {'; '.join(missing)}")
    lines.append(f"  isolation: {svc.engine.isolation} ({svc.engine.isolation_detail})")
    confinement = getattr(svc.engine, "confinement", None)
    info = confinement() if callable(confinement) else {}
    exposed = info.get("exposed")
    if isinstance(exposed, dict):
        for tid, view in exposed.items():
            shown = ", ".join(view["read_only"])
            masked = f"; masked: {', '.join(view['masked'])}" if view["masked"] else ""
            lines.append(f"  host paths template {tid} sees (read-only): {shown}{masked}")
    quotas = info.get("quotas")
    if isinstance(quotas, dict):
        if quotas.get("mechanism") == "rlimits":
            why = quotas.get("why_not_cgroups", "")
            lines.append(f"  quotas: rlimits only, per process ({why})")
        else:
            lines.append(
                f"  quotas: {quotas['mechanism']} per clone: memory {quotas['memory']}; "
                f"processes {quotas['processes']}; cpu {quotas['cpu']}"
            )
    if svc.engine.isolation == "process":
        lines.append(_NOT_A_SANDBOX)
    return "\n".join(lines)
