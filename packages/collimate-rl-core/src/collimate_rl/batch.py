"""Grading many candidates in one call: ``grade_batch`` (threads) and
``grade_batch_async`` (one event loop).

One call per training step: ``spec`` is one spec for every candidate (a
GRPO group) or one spec per candidate (many prompts with their groups),
and the candidates are packed across prompts. Results are positional. The
work itself is the grading pipeline (:mod:`collimate_rl.pipeline`): plan
the units, run the execs, read the verdicts.
"""

from __future__ import annotations

from .pipeline._async.grading import grade_batch_async
from .pipeline._sync.grading import grade_batch
from .pipeline.arguments import Specs
from .pipeline.collect import ResultCallback

__all__ = ["ResultCallback", "Specs", "grade_batch", "grade_batch_async"]

# their public home (reprs, pickles, the API docs), as before the twins were generated
for _fn in (grade_batch, grade_batch_async):
    _fn.__module__ = __name__
