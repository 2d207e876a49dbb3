"""``python -m collimate_rl.ray.watchdog [collimate serve args]``: the
grader process, ``collimate serve`` tied to the actor that started it.

The actor holds the write end of this process's stdin and never writes to
it. However the actor's process ends (a clean stop, a crash, SIGKILL, its
node's raylet going), the kernel closes that end, this process reads EOF
and stops: first a drain (SIGTERM, what ``collimate serve`` answers by
refusing new work and finishing admitted work), then, if the drain is not
done within :data:`GRACE_S`, an exit. No grader outlives its actor.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Sequence

from collimate_rl.local_backend import main as serve_main

__all__ = ["GRACE_S", "main"]

#: How long a drain may take once the actor is gone, before a hard exit.
GRACE_S = 5.0


def _watch_parent() -> None:
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(GRACE_S)
    os._exit(1)


def main(argv: Sequence[str] | None = None) -> int:
    threading.Thread(target=_watch_parent, name="collimate-ray-watchdog", daemon=True).start()
    return serve_main(list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    raise SystemExit(main())
