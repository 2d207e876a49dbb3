"""Grading a dataset file: what ``collimate grade`` is made of.

The parts are kept apart so that each can be tested without a backend:

* :mod:`.rows` reads the input (JSONL, or Parquet through :mod:`.parquet`,
  one record batch at a time) and validates every row up front (code,
  ground truth, id, group; the program and spec as the adapters build
  them), so a bad row stops the run before the first exec instead of
  after an hour of grading;
* :mod:`.results` owns the output JSONL: the record of one row, an
  append-only writer whose every complete line is valid at any moment, and
  the resume plan (what an earlier run already graded, whether the file
  belongs to this input at all);
* :mod:`.runner` grades the pending rows in chunks through
  :func:`collimate_rl.grade_batch`, with CRN seeds and interrupts;
* :mod:`.summary` tallies the output per data source (with the most common
  first failure);
* :mod:`.cli` is the argparse glue of ``collimate grade``.

:func:`canonical_json` (one spelling per JSON value, for keys and hashes) is
how rows are keyed here, and by the adapters that key rows the same way.
"""

from __future__ import annotations

from .results import (
    ExistingOutput,
    OutputMismatchError,
    ResultWriter,
    infra_record,
    invalid_record,
    load_existing,
    result_record,
)
from .rows import (
    InputError,
    InputRow,
    ReadResult,
    RowOptions,
    RowProblem,
    canonical_json,
    read_rows,
)

__all__ = [
    "ExistingOutput",
    "InputError",
    "InputRow",
    "OutputMismatchError",
    "ReadResult",
    "ResultWriter",
    "RowOptions",
    "RowProblem",
    "canonical_json",
    "infra_record",
    "invalid_record",
    "load_existing",
    "read_rows",
    "result_record",
]
