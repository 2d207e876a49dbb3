"""Packing: several candidates graded by one exec (the earlier import path
of its pieces, which now live in the grading pipeline).

A lone grade pays for a whole exec: a request, a clone wiped and forked, a
grader started. A pack sends many candidates in one exec instead, across
prompts; the in-guest grader (:func:`.guest.grader.entry.main`, given a
pack) grades them one after another, each exactly as it would be graded alone (its own exec
seed, time budget and process), and sweeps the guest between two (see
:mod:`.guest.grader.sweep`).

The rule that keeps packing safe is on the SDK side: **a candidate's
reward is taken from a pack only if the pack wrote that candidate's
verdict** and the verdict does not blame the infrastructure. The other
candidates are re-packed or graded alone (:func:`.pipeline.plan.follow_up`),
so packing never turns an infrastructure failure into a reward.

Where the pieces are: planning packs in :mod:`.pipeline.plan`, building
their exec in :mod:`.pipeline.execs`, reading it in :mod:`.pipeline.read`.
"""

from __future__ import annotations

from .pipeline.execs import MAX_PACK_SECONDS, PACK_BUDGETS, PreparedPack, pack_timeout, prepare_pack
from .pipeline.plan import MAX_AUTO_PACK, check_pack, chunk, follow_up
from .pipeline.read import CANNOT_PACK, PackedGrade, read_pack

__all__ = [
    "CANNOT_PACK",
    "MAX_AUTO_PACK",
    "MAX_PACK_SECONDS",
    "PACK_BUDGETS",
    "PackedGrade",
    "PreparedPack",
    "check_pack",
    "chunk",
    "follow_up",
    "pack_timeout",
    "prepare_pack",
    "read_pack",
]
