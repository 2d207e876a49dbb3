"""Warming: what the zygote initialises once so that no clone or exec pays
for it, and the faults a standby takes before its job arrives."""

from __future__ import annotations

import gc
import io
import json
import random
import traceback

_WARM_UP_SOURCE = """
import random
values = [random.random() for _ in range(8)]
def f(a, *args, **kw):
    return {"a": a, "args": args, "kw": kw}
class C:
    def __init__(self):
        self.x = f(1, 2, k=3)
try:
    raise ValueError(C().x)
except ValueError as exc:
    message = str(exc)
print(message, sorted(values)[0] >= 0)
"""


def warm_up() -> None:
    """Initialise what the first exec would otherwise pay for in every clone.

    The parser, compiler, ``random`` seeding, ``print`` and traceback
    formatting all build state lazily; done here once, it is shared
    copy-on-write. ``gc.freeze()`` then moves every object to a generation
    the collector never walks, so a child's GC does not touch (and copy) the
    pages of the objects it inherited.
    """
    sink = io.StringIO()
    for _ in range(3):
        random.seed(int("ab" * 32, 16))
        code = compile(_WARM_UP_SOURCE, "<string>", "exec")
        exec(code, {"__name__": "__main__", "print": lambda *a: sink.write(repr(a))})
        try:
            raise RuntimeError("warm")
        except RuntimeError as exc:
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sink)
        json.loads(json.dumps({"source": "x", "files": [["a", "b"]]}))
    gc.collect()
    gc.freeze()


def touch_ahead() -> None:
    """A standby's copy-on-write faults, taken before its job arrives.

    A forked child shares every page with its parent until it writes to it,
    and a Python child writes to most pages it reads (reference counts, type
    caches, the allocator's free lists): each first write is a page fault and
    a copy, about a millisecond of them for a small exec, all on the latency
    path. Running a tiny program here takes most of them ahead of time; it
    leaves nothing the job could see (``random`` is re-seeded, ``__main__``
    replaced, the output goes nowhere)."""
    sink = io.StringIO()
    code = compile(_WARM_UP_SOURCE, "<string>", "exec")
    exec(code, {"__name__": "__main__", "print": lambda *a: sink.write(repr(a))})
    json.loads(json.dumps({"op": "exec", "req": 1, "kind": "code", "seed": "ab" * 32}))
    json.loads(json.dumps({"source": "print(1)\n" * 8, "files": [["a.py", "x = 1\n"]]}))
    random.seed(int("ab" * 32, 16))
