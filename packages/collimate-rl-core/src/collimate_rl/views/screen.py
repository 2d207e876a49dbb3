"""Where a view draws: a live Rich frame, or plain lines.

Which one is :func:`collimate_rl._terminal.wants_rich`'s rule (Rich
installed, a terminal, no ``NO_COLOR``, no ``--plain``). Plain mode prints
a progress line when its text changed and at most every ``plain_interval``
seconds, so a long run does not flood a log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from .._terminal import wants_rich

__all__ = ["Frame", "Screen", "wants_rich"]

#: Builds a frame's Rich renderable; called only in Rich mode, so a view
#: never imports Rich when it prints plain lines.
RichFrame = Callable[[], Any]


class Frame:
    """One state of a view: ``plain`` lines, and ``rich`` to build its Rich
    renderable lazily (only in Rich mode: Rich may be missing)."""

    def __init__(self, plain: Sequence[str], rich: RichFrame | None = None) -> None:
        self.plain = list(plain)
        self.rich = rich


class Screen:
    """Shows a view's frames until closed, then its final frame.

    ``update(frame)`` redraws a Rich Live region (Rich mode) or prints the
    first plain line of the frame when it changed (plain mode, throttled);
    ``final(frame)`` prints the whole final frame once, after the live
    region is gone, so the summary is what stays on the terminal.
    """

    def __init__(
        self, out: TextIO, *, rich: bool, title: str = "", plain_interval: float = 1.0
    ) -> None:
        self.out = out
        self.rich = rich
        self.title = title
        self.plain_interval = plain_interval
        self._live: Any = None
        self._console: Any = None
        self._last_line = ""
        self._last_print = 0.0
        if rich:
            from rich.console import Console
            from rich.live import Live

            self._console = Console(file=out)
            self._live = Live(console=self._console, refresh_per_second=8, transient=True)

    def __enter__(self) -> Screen:
        if self._live is not None:
            self._live.start()
        elif self.title:
            self.line(self.title)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def line(self, text: str) -> None:
        """A line outside the live region (a notice, the target)."""
        if self._console is not None:
            self._console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.out, flush=True)

    def update(self, frame: Frame) -> None:
        if self._live is not None:
            if frame.rich is not None:
                self._live.update(frame.rich())
            return
        head = frame.plain[0] if frame.plain else ""
        now = time.monotonic()
        if head == self._last_line or now - self._last_print < self.plain_interval:
            return
        self._last_line, self._last_print = head, now
        print(head, file=self.out, flush=True)

    def final(self, frame: Frame) -> None:
        self.stop()
        if self._console is not None and frame.rich is not None:
            self._console.print(frame.rich())
            return
        for text in frame.plain:
            print(text, file=self.out, flush=True)
