"""The grader that runs INSIDE the guest (its source is shipped as exec ``code``).

One module per job, joined into ONE program to be shipped: :mod:`...rewards.program`
reads the modules in the order of :data:`PARTS`, drops their imports of
each other (in the guest they share one namespace) and appends ``main(<config
literal>)``; :mod:`...rewards.guest_runtime` is that program as a module (what a
template preloads). The modules are real ones so that they are linted,
type-checked and unit-tested like everything else; importing them has no
side effects, and they are meant to run joined (the grader finds a kind's
functions, and a pack's, by name in the one namespace). Constraints that
follow from where it runs:

* stdlib only, Python >= 3.8 syntax, and only modules a warm interpreter
  has already imported (``os``, ``sys``, ``time``, ``signal``, ``io``,
  ``random``, ``math``): a fork pays for every import, and a locked-down
  guest may not be able to import anything else at all. Annotations and the
  ``__future__`` import are stripped before shipping (:mod:`...rewards.program`);
* no ``json`` import in the guest: the config arrives as a Python literal,
  and the verdict leaves as JSON (``json`` when the warm interpreter has
  it, else :func:`.wire.to_json`).

Why it looks the way it does:

* **The verdict is framed, not "the last line".** The guest merges stderr
  into stdout, so anything printed after a bare reward line (a warning, an
  atexit hook) would turn a pass into 0.0. The grader writes
  ``<MARKER><nonce> <verdict>`` on a duplicate of the original stdout and then
  leaves with ``os._exit`` (no atexit, no interpreter-shutdown noise). While
  the candidate runs, fds 0/1/2 point at ``/dev/null``: its prints can neither
  fill the 16 MiB output cap before the verdict nor forge a frame line.
* **The candidate runs in a process of its own** (:mod:`.remote` starts
  and talks to it, :mod:`.candidate` is its side, forked by :mod:`.spawner`), forked from a clean
  interpreter that never held the grader's memory, without the verdict's
  fd, and sends the grader each check's raw result; the grader compares.
  The sealed data (expected outputs, references, tests) stays in the
  grader, and tests that are code run there, calling into the candidate's
  process (:mod:`.stand_ins`). Code that walks the stack or the heap finds
  neither the answers nor anything it can write a verdict with, and
  ``os._exit`` or a crash costs only the checks not yet reported.
* **A "hello" frame is written before the candidate is even read.** No hello
  means the grader never ran (wrong interpreter, broken guest): an
  infrastructure failure, not the candidate's. Hello without a verdict means
  the candidate killed the grader (a signal to its parent): its failure.
* **Delivery is verified.** The candidate arrives as a text ``files`` entry;
  its size and a polynomial checksum (:func:`.wire.checksum`, no import needed)
  are checked before it runs, so a mangled delivery is
  reported as such instead of being scored.
* **Time is budgeted per check.** Each test runs under an interval timer
  bounded by the exec's deadline (minus a margin), so one looping test costs
  that test only and the verdict still arrives with partial credit.
* **Property inputs come from a private RNG** copied from the seeded global
  ``random`` state at start: identical draws to a plain seeded grader, but a
  candidate that consumes or reseeds ``random`` cannot shift its own inputs,
  so common random numbers hold across a whole group.
* **Comparison is strict about types.** A candidate result must be a plain
  builtin value (or a numpy scalar/array, converted) when the expected value
  is one, so an object whose ``__eq__`` always returns True scores nothing.
* **Packs** (:func:`.entry.main`, :mod:`.sweep`) grade several candidates in one
  exec, each as it would be graded alone, with the guest swept between two.
"""

from __future__ import annotations

__all__ = ["PARTS", "WORKER_PARTS"]

#: The modules of the shipped program, in the order they are joined (paths
#: below ``collimate_rl/guest``, without ``.py``).
PARTS = (
    "grader/wire",
    "grader/budget",
    "grader/compare",
    "grader/remote",
    "grader/stand_ins",
    "grader/code_tests",
    "grader/kinds",
    "grader/pytest_shim",
    "grader/sweep",
    "grader/entry",
)

#: The worker's program: the candidates' side, shipped on its own (the
#: spawner, :mod:`.spawner`, and each candidate's process, :mod:`.candidate`),
#: in this order: the confinement it shares with other guest programs first.
WORKER_PARTS = ("separation", "grader/spawning", "grader/candidate", "grader/spawner")
