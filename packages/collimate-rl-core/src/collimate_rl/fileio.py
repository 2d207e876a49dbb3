"""Byte-exact file transfer over the plain exec API (no wire change).

``exec(files=[...])`` writes TEXT (a trailing newline is appended when
missing), and the guest merges stderr into stdout, so raw bytes need their
own protocol. This module holds it as pure functions, shared by the blocking
and the async sandbox (which only run the commands):

Upload (:func:`upload_plan`)
    base64 chunks (<= ~96 KiB of text each, well under the kernel's 128 KiB
    cap on one argv string, since the composed script reaches the guest as
    one ``sh -c`` argument) are appended to a temp file next to the target
    with ``printf '%s' ... | base64 -d``; the last exec checks the size and
    the sha256 IN THE GUEST and only then ``mv``s the temp file into place.
    A failed upload never leaves a truncated target.

Download (:func:`download_command` / :func:`parse_download`)
    the guest prints ``<S>-BEGIN <size> <sha256>``, one base64 line, and
    ``<S>-END``, where ``S`` is a random sentinel drawn per call. Parsing is
    strict: noise outside the frame is ignored; a missing or repeated
    sentinel, or an extra line inside the frame, raises; noise spliced into
    the payload line fails the sha256 check. A download returns exact bytes
    or raises. Files over :data:`DOWNLOAD_CAP_BYTES` (the 16 MiB exec-output
    cap / base64's 4/3) are refused in the guest with a clear message.

In-guest failures raise :class:`~collimate_rl.CollimateTaskError` (with the
guest's ``exit_code`` and transcript in ``output``); a failing control plane
keeps raising plain :class:`~collimate_rl.CollimateError` from the client.
The guest needs a POSIX shell with a ``printf`` builtin, ``base64``,
``sha256sum``, ``wc``, ``tr``, ``mkdir`` and ``mv`` (busybox and coreutils
both qualify).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .errors import CollimateTaskError

__all__ = [
    "DOWNLOAD_CAP_BYTES",
    "UPLOAD_CHUNK_CHARS",
    "DownloadFrame",
    "UploadPlan",
    "check_step",
    "download_command",
    "parse_download",
    "upload_plan",
]

#: Base64 characters per upload exec (a multiple of 4: chunks decode alone).
UPLOAD_CHUNK_CHARS: Final = 96 * 1024
#: Largest downloadable file: 11 MiB of bytes is ~14.7 MiB of base64, under
#: the 16 MiB output cap with room for the frame and stray noise.
DOWNLOAD_CAP_BYTES: Final = 11 * 1024 * 1024

_EXIT_SIZE: Final = 90
_EXIT_SHA: Final = 91


@dataclass(frozen=True)
class UploadPlan:
    """The execs of one upload, in order, and what to run if one fails."""

    path: str
    steps: tuple[str, ...]
    cleanup: str


def upload_plan(path: str, data: bytes, *, chunk_chars: int = UPLOAD_CHUNK_CHARS) -> UploadPlan:
    """The shell scripts that move ``data`` to ``path`` byte for byte."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ValueError(f"path must be a non-empty str without NUL, got {path!r}")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    if chunk_chars < 4 or chunk_chars % 4:
        raise ValueError("chunk_chars must be a positive multiple of 4")
    raw = bytes(data)
    encoded = base64.b64encode(raw).decode("ascii")
    chunks = [encoded[i : i + chunk_chars] for i in range(0, len(encoded), chunk_chars)] or [""]
    target = shlex.quote(path)
    tmp = shlex.quote(f"{path}.collimate-upload-{secrets.token_hex(8)}")
    parent = shlex.quote(path.rsplit("/", 1)[0] or "/") if "/" in path else "."
    steps = []
    for i, chunk in enumerate(chunks):
        lines = ["set -e"]
        if i == 0:
            lines.append(f"mkdir -p {parent}")
        redirect = ">" if i == 0 else ">>"
        lines.append(f"printf '%s' '{chunk}' | base64 -d {redirect} {tmp}")
        steps.append(lines)
    digest = hashlib.sha256(raw).hexdigest()
    steps[-1] += [
        f"size=$(wc -c < {tmp} | tr -d ' ')",
        f'if [ "$size" != {len(raw)} ]; then echo "collimate upload: "{target}": '
        f'wrote $size bytes, expected {len(raw)}" >&2; rm -f {tmp}; exit {_EXIT_SIZE}; fi',
        f"sum=$(sha256sum {tmp} | cut -d ' ' -f 1)",
        f'if [ "$sum" != {digest} ]; then echo "collimate upload: "{target}": '
        f'sha256 mismatch in the guest" >&2; rm -f {tmp}; exit {_EXIT_SHA}; fi',
        f"mv -f {tmp} {target}",
    ]
    return UploadPlan(path, tuple("\n".join(s) for s in steps), f"rm -f {tmp}")


def check_step(response: Mapping[str, Any], what: str) -> None:
    """Raise :class:`CollimateTaskError` when an upload step failed in the guest."""
    code = response.get("exit_code")
    if code != 0:
        output = str(response.get("stdout") or "")
        raise CollimateTaskError(
            f"{what} failed in the guest (exit code {code}): {output.strip()[-300:]}",
            code if isinstance(code, int) else None,
            output,
        )


@dataclass(frozen=True)
class DownloadFrame:
    """The command of one download and the sentinel that frames its answer."""

    path: str
    sentinel: str
    command: str


def download_command(path: str, *, cap_bytes: int = DOWNLOAD_CAP_BYTES) -> DownloadFrame:
    """The shell script that prints ``path`` inside a fresh sentinel frame."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ValueError(f"path must be a non-empty str without NUL, got {path!r}")
    sentinel = f"COLLIMATE-DL-{secrets.token_hex(16)}"
    p = shlex.quote(path)
    shown = shlex.quote(path)
    command = "\n".join(
        [
            f"if [ ! -f {p} ]; then echo collimate download: no such file: {shown} >&2; exit 2; fi",
            f"if [ ! -r {p} ]; then echo collimate download: not readable: {shown} >&2; exit 3; fi",
            f"size=$(wc -c < {p} | tr -d ' ') || exit 4",
            f'if [ "$size" -gt {cap_bytes} ]; then echo "collimate download: "{p}": $size bytes '
            f"is over the download cap of {cap_bytes} bytes (~11 MiB: the 16 MiB exec output "
            f'cap / base64)" >&2; exit 5; fi',
            f"sum=$(sha256sum {p} | cut -d ' ' -f 1) || exit 6",
            f'echo "{sentinel}-BEGIN $size $sum"',
            f"base64 {p} | tr -d '\\n' || exit 7",
            "echo",
            f"echo {sentinel}-END",
        ]
    )
    return DownloadFrame(path, sentinel, command)


def _frame_error(frame: DownloadFrame, why: str, response: Mapping[str, Any]) -> CollimateTaskError:
    code = response.get("exit_code")
    return CollimateTaskError(
        f"download of {frame.path} returned a corrupted frame: {why}",
        code if isinstance(code, int) else None,
        str(response.get("stdout") or ""),
    )


def parse_download(frame: DownloadFrame, response: Mapping[str, Any]) -> bytes:
    """The exact bytes of a download, or :class:`CollimateTaskError`."""
    code = response.get("exit_code")
    stdout = str(response.get("stdout") or "")
    if code != 0:
        raise CollimateTaskError(
            f"download of {frame.path} failed in the guest (exit code {code}): "
            f"{stdout.strip()[-300:]}",
            code if isinstance(code, int) else None,
            stdout,
        )
    lines = stdout.split("\n")
    begin_prefix = f"{frame.sentinel}-BEGIN "
    end_line = f"{frame.sentinel}-END"
    begins = [i for i, line in enumerate(lines) if line.startswith(begin_prefix)]
    ends = [i for i, line in enumerate(lines) if line == end_line]
    mentions = sum(line.count(frame.sentinel) for line in lines)
    if len(begins) != 1 or len(ends) != 1 or mentions != 2:
        raise _frame_error(frame, f"{len(begins)} begin / {len(ends)} end sentinel lines", response)
    begin, end = begins[0], ends[0]
    if end != begin + 2:
        raise _frame_error(frame, f"{end - begin - 1} lines between the sentinels", response)
    header = lines[begin][len(begin_prefix) :].split(" ")
    if len(header) != 2 or not header[0].isdigit() or len(header[1]) != 64:
        raise _frame_error(frame, f"malformed header {lines[begin]!r:.120}", response)
    size, digest = int(header[0]), header[1]
    try:
        data = base64.b64decode(lines[begin + 1], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _frame_error(frame, f"payload is not base64 ({exc})", response) from None
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        raise _frame_error(
            frame, f"size/sha256 mismatch ({len(data)} bytes decoded, {size} sent)", response
        )
    return data
