"""The in-guest grader as ONE module: what a python template preloads.

The grader's source is the modules of :mod:`..guest.grader`, one job each; a
guest runs them joined into one program (:func:`.program.preload_source`).
Importing this module runs that very program in this module's namespace,
so code and tests here meet exactly what a guest meets, and
``RUNTIME_ID`` is the id the SDK's programs look for
(:func:`.program.runtime_id`). The names it defines are the grader's own
(see :mod:`..guest.grader`); nothing here is imported by the SDK at run time.
"""

from __future__ import annotations

from .program import preload_source, runtime_id

exec(compile(preload_source(), "<collimate-grader>", "exec", dont_inherit=True), globals())
RUNTIME_ID = runtime_id()
