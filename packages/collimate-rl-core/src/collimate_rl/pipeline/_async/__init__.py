"""The async sources of grading's two pairs, each written once: admission
(one exec through its server's gate) and the grading entry points (``grade``,
``grade_batch``).

The blocking twin of every module here is generated into
``collimate_rl/pipeline/_sync/`` by ``tools/unasync.py``
(docs/architecture.md, "Blocking and async twins"). Import the functions from
their public modules (``collimate_rl.grading``, ``collimate_rl.batch``), never
from here.
"""
