"""The server's compile cache: one compile per distinct program.

A GRPO group of compiled candidates is graded against many tests, often
with identical candidates in it, and verl sends one ``/run_code`` per test
case: without a cache the same source is compiled once per test. Here a
build is keyed by the content hash of everything that decides it (the
language, the compiler and its version, the flags, the source, the files
beside it), so a candidate is compiled once for all its tests, identical
candidates once, and a resubmitted one not at all.

* **Single flight**: concurrent requests for one key share one compile;
  the others wait for it (``joined``).
* **What is kept**: builds and compile errors (a broken program stays
  broken: resubmitting it costs nothing either). A compile the machine kept
  from running (``starved``) or that failed for the server's own reasons is
  never kept: the next request compiles again.
* **Bounded**: at most ``max_bytes`` of builds, least recently used first
  out. Private to the server: kept in its memory, handed to a clone only
  inside the exec that runs it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: Default bound on the bytes of builds kept (base64 text, as sent to clones).
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
#: The compile outcomes that are the program's own, and so are kept.
KEPT_VERDICTS = frozenset({"ok", "error", "time_limit"})


@dataclass(frozen=True)
class Build:
    """One compile's outcome: ``verdict`` is ``ok`` (``files`` is the build),
    ``error`` or ``time_limit`` (the program's failure, ``output`` says why)."""

    verdict: str
    output: str  # the compiler's stdout and stderr (base64)
    files: Mapping[str, str]  # relative name (``*``: executable) -> base64
    return_code: int | None
    cpu: float
    wall: float

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.files.values()) + len(self.output) + 256


def cache_key(
    language: str, compiler: str, argv: tuple[str, ...], source: str, files: Mapping[str, str]
) -> str:
    """The content hash a build is kept under."""
    blob = json.dumps(
        [language, compiler, list(argv), source, sorted(files.items())],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


#: The counters ``describe`` shows (with how many builds are kept).
_COUNTERS = ("compiles", "hits", "joined", "not_kept", "bytes", "max_bytes", "evicted")


class CompileCache:
    """Builds by key, with single-flight compiles and counters."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._builds: OrderedDict[str, Build] = OrderedDict()
        self._inflight: dict[str, asyncio.Future[Build | None]] = {}
        self.bytes = 0
        self.compiles = 0  # compiles run
        self.hits = 0  # requests served from a kept build
        self.joined = 0  # requests that waited on another's compile
        self.not_kept = 0  # compiles whose outcome was not kept (starved, failed)
        self.evicted = 0

    async def get(self, key: str, compile_: Callable[[], Awaitable[Build]]) -> Build:
        """The build for ``key``: kept, being compiled (joined), or compiled
        now by ``compile_``. Its error reaches every request that joined;
        a compile given up on (its request cancelled) is taken over by one
        of them."""
        while True:
            build = self._builds.get(key)
            if build is not None:
                self._builds.move_to_end(key)
                self.hits += 1
                return build
            pending = self._inflight.get(key)
            if pending is None:
                return await self._compile(key, compile_)
            self.joined += 1
            shared = await asyncio.shield(pending)
            if shared is not None:
                return shared

    async def _compile(self, key: str, compile_: Callable[[], Awaitable[Build]]) -> Build:
        # None for the waiters: the compile was given up on, one of them compiles
        future: asyncio.Future[Build | None] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        self.compiles += 1
        try:
            build = await compile_()
        except Exception as exc:
            self.not_kept += 1
            future.set_exception(exc)
            future.exception()  # (retrieved: no warning when nobody joined)
            raise
        except BaseException:
            self.not_kept += 1
            future.set_result(None)
            raise
        finally:
            self._inflight.pop(key, None)
        future.set_result(build)
        if build.verdict in KEPT_VERDICTS:
            self._keep(key, build)
        else:
            self.not_kept += 1
        return build

    def _keep(self, key: str, build: Build) -> None:
        if build.size > self.max_bytes:
            return
        self._builds[key] = build
        self.bytes += build.size
        while self.bytes > self.max_bytes:
            _, old = self._builds.popitem(last=False)
            self.bytes -= old.size
            self.evicted += 1

    def describe(self) -> dict[str, Any]:
        """The counters ``/v1/health`` shows."""
        counters = {name: getattr(self, name) for name in _COUNTERS}
        return {**counters, "kept": len(self._builds)}
