"""N jobs at concurrency C, on worker threads, while the calling thread
redraws the view: the engine of ``burst`` and ``launch``.

Ctrl-C (KeyboardInterrupt on the calling thread) stops new jobs from
starting; the jobs in flight finish (each is one short request), so the
view's ledger holds every sandbox that must still be deleted.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from .target import DEFAULT_TEMPLATE, SessionLedger, Target

__all__ = ["FanOut", "FanRun", "add_fan_options"]


def add_fan_options(
    p: argparse.ArgumentParser, *, n: int, n_help: str, concurrency: int, concurrency_help: str
) -> None:
    """The template the jobs fork, ``-n`` and ``-c``: each help ends with
    its default."""
    p.add_argument("template", nargs="?", default=DEFAULT_TEMPLATE, help="template to fork")
    p.add_argument("-n", type=int, default=n, help=f"{n_help} ({n})")
    p.add_argument(
        "-c",
        "--concurrency",
        type=int,
        default=concurrency,
        help=f"{concurrency_help} ({concurrency})",
    )


class FanOut:
    """Runs ``job(i)`` for i in range(n), at most ``concurrency`` at once."""

    def __init__(self, n: int, concurrency: int, job: Callable[[int], None]) -> None:
        if n < 0 or concurrency < 1:
            raise ValueError("n must be >= 0 and concurrency >= 1")
        self.n = n
        self.concurrency = concurrency
        self.job = job
        self.stop = threading.Event()
        self.done = 0
        self.failed = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def _one(self, i: int) -> None:
        if self.stop.is_set():
            return
        try:
            self.job(i)
        except Exception as exc:
            with self._lock:
                self.failed += 1
                if len(self.errors) < 5:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
        else:
            with self._lock:
                self.done += 1

    def run(self, redraw: Callable[[], None], interval: float = 0.1) -> bool:
        """Run every job, calling ``redraw`` between waits; False when
        interrupted (KeyboardInterrupt): the jobs not started were skipped."""
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="collimate-view")
        pending: set[Future[None]] = set()
        nxt = 0
        try:
            while nxt < self.n or pending:
                while nxt < self.n and len(pending) < self.concurrency:
                    pending.add(pool.submit(self._one, nxt))
                    nxt += 1
                _, pending = wait(pending, timeout=interval, return_when=FIRST_COMPLETED)
                redraw()
            return True
        except KeyboardInterrupt:
            self.stop.set()
            return False
        finally:
            self.stop.set()
            for f in pending:
                f.cancel()
            pool.shutdown(wait=True)


class FanRun:
    """What a view over a :class:`FanOut` holds: its arguments, the
    sandboxes it has up (each deleted at the end), the fan-out of ``job``
    (``-n`` jobs at ``-c`` at once) and when it started."""

    def __init__(
        self, target: Target, args: argparse.Namespace, job: Callable[[int], None]
    ) -> None:
        self.args = args
        self.ledger = SessionLedger(target.client)
        self.fan = FanOut(args.n, args.concurrency, job)
        self.started = time.perf_counter()
