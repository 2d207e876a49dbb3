"""Grading, as one pipeline a reader follows top down.

Every grade, a lone ``grade()``, a group or a whole training step through
``grade_batch()``, goes through the same three steps, each in its own
module, each importing only the steps below it:

1. :mod:`.plan` -- the *units*: which candidates are graded alone and which
   together, in packs (one exec grading many candidates, across prompts),
   sized from what the target says of itself (:mod:`.targets`), and what
   to do with the candidates a pack did not grade (re-pack them, or grade
   them alone);
2. :mod:`.run` -- the *execs*: a unit's exec is built (:mod:`.execs`),
   sent within what the target admits (:mod:`.admission`), resent in full
   when the target refuses the short form (:mod:`.forms`); written once as
   steps that the blocking and the async drivers both follow;
3. :mod:`.read` -- the *verdicts*: an exec's answer turned into
   :class:`~.result.GradeResult` objects, by each candidate's own spec.

Around them: :mod:`.schedule` keeps a batch's units in flight (threads or
one event loop) and collects results in order (:mod:`.collect`);
:mod:`.coalesce` gathers concurrent single grades into packs. The public
entry points are thin: :mod:`collimate_rl.grading` (``grade``,
``grade_async``) and :mod:`collimate_rl.batch` (``grade_batch``,
``grade_batch_async``).

The rule every step serves: **an infrastructure failure is never a
reward**, and a candidate's reward is taken from a pack only if the pack
wrote that candidate's own verdict.

This package's ``__init__`` imports nothing, so importing any one step
never drags in the others.
"""
