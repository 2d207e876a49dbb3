"""Services for a sandbox to serve, for tests of what reaches them from
outside (connect URLs, port forwards): an HTTP server with a WebSocket echo
at ``/ws``, and a raw TCP echo.

:func:`service_templates` writes the one script they run (stdlib only, no
import of this package: the clone may not see it) into a directory and
returns the app templates of the local backend that serve it: ``svc-web``
(guest port 8000, HTTP and WebSocket) and ``svc-echo`` (guest port 7000,
raw TCP echo).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["ECHO_PORT", "SCRIPT", "WEB_PORT", "service_templates"]

WEB_PORT = 8000
ECHO_PORT = 7000

SCRIPT = r"""
import asyncio, base64, hashlib, struct, sys

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


async def echo(reader, writer):
    while True:
        data = await reader.read(65536)
        if not data:
            break
        writer.write(data)
        await writer.drain()
    writer.close()


async def read_frame(reader):
    b0, b1 = await reader.readexactly(2)
    n = b1 & 0x7F
    if n == 126:
        (n,) = struct.unpack(">H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack(">Q", await reader.readexactly(8))
    mask = await reader.readexactly(4) if b1 & 0x80 else b"\0\0\0\0"
    data = await reader.readexactly(n)
    return b0 & 0x0F, bytes(c ^ mask[i % 4] for i, c in enumerate(data))


def frame(opcode, data):
    n = len(data)
    if n < 126:
        head = bytes([0x80 | opcode, n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 126]) + struct.pack(">H", n)
    else:
        head = bytes([0x80 | opcode, 127]) + struct.pack(">Q", n)
    return head + data


async def web(reader, writer):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    path = lines[0].split(" ")[1]
    pairs = (line.partition(":") for line in lines[1:] if line)
    headers = {k.strip().lower(): v.strip() for k, _, v in pairs}
    if path == "/ws" and headers.get("upgrade", "").lower() == "websocket":
        key = headers["sec-websocket-key"].encode()
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        while True:
            opcode, data = await read_frame(reader)
            if opcode == 8:
                writer.write(frame(8, data[:2]))
                break
            writer.write(frame(opcode, b"echo:" + data))
            await writer.drain()
    else:
        body = ("hello from " + path).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    await writer.drain()
    writer.close()


async def main():
    handler = {"web": web, "echo": echo}[sys.argv[1]]
    server = await asyncio.start_server(handler, "127.0.0.1", int(sys.argv[2]))
    async with server:
        await server.serve_forever()


asyncio.run(main())
"""


def service_templates(directory: str | Path) -> list[dict[str, Any]]:
    """Write the services' script into ``directory`` (made if need be;
    exposed read-only to the clones) and return the two app templates.

    The clones' servers run as an unprivileged user: ``directory`` is made
    world-readable here, and its parents must let anyone through (a
    ``tempfile.mkdtemp()`` does; pytest's ``tmp_path``, under a 0700
    directory, does not)."""
    root = Path(directory).resolve()
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    script = root / "guest_services.py"
    script.write_text(SCRIPT)
    script.chmod(0o644)
    common = {"kind": "app", "expose": [str(root)], "ready_timeout_s": 60}
    return [
        {
            "id": "svc-web",
            "command": f"python3 {script} web {{port}}",
            "ports": [WEB_PORT],
            "ready_http": "/health",
            **common,
        },
        {
            "id": "svc-echo",
            "command": f"python3 {script} echo {{port}}",
            "ports": [ECHO_PORT],
            **common,
        },
    ]
