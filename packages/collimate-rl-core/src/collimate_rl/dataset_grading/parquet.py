"""Reading a Parquet input of ``collimate grade`` (verl's datasets, the Hub's
exports), one record batch at a time.

pyarrow is optional (``pip install "collimate-rl-core[parquet]"``): it is
imported when a Parquet file is read, never before, and its absence is an
:class:`InputError` that says what to install.

The file is never loaded whole: :func:`iter_parquet_rows` reads record
batches of ``batch_size`` rows (only the columns asked for, when given) and
yields their rows as plain dicts, numbered from 1 in file order across row
groups. Arrow decodes a column one row group at a time, so what is held at
once is one row group of the columns read (as the file was written: a
writer's ``row_group_size``) and one batch as Python objects; pre-buffering
(pyarrow's default, which reads every row group ahead) is turned off.

Values are what ``RecordBatch.to_pylist`` gives: lists, dicts for structs
(with ``None`` for the keys a row lacks), Python scalars. The caller
normalises them (:func:`collimate_rl.normalize_value`).
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, Final

__all__ = ["DEFAULT_BATCH_SIZE", "PARQUET_INSTALL_HINT", "InputError", "iter_parquet_rows"]

#: Rows per record batch: small enough that a batch of long completions
#: stays a few MB, large enough that Arrow's per-batch cost vanishes.
DEFAULT_BATCH_SIZE: Final = 512
#: Bytes read at a time from a column chunk (0 would read each chunk whole).
_READ_BUFFER: Final = 1 << 20
PARQUET_INSTALL_HINT: Final = (
    'reading Parquet needs pyarrow: pip install "collimate-rl-core[parquet]" '
    "(or pip install pyarrow)"
)


class InputError(Exception):
    """The input file cannot be read at all (not a row's fault): exit 2."""


def _parquet_file(path: Path) -> Any:
    try:  # (by name: pyarrow is optional, and untyped where mypy runs)
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError as exc:
        raise InputError(f"{PARQUET_INSTALL_HINT} ({exc})") from None
    try:
        return pq.ParquetFile(path, pre_buffer=False, buffer_size=_READ_BUFFER)
    except Exception as exc:  # ArrowInvalid, OSError: not a Parquet file, or unreadable
        raise InputError(f"{path} is not a readable Parquet file: {exc}") from None


def iter_parquet_rows(
    path: str | Path,
    columns: Collection[str] | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row number, row)`` for every row of the Parquet file ``path``, in
    order, reading one record batch at a time. ``columns``: the top-level
    columns to read (the others are never decoded); names the file lacks
    are ignored. Raises :class:`InputError` without pyarrow, or for a file
    that is not Parquet (or breaks off mid-file)."""
    p = Path(path)
    pf = _parquet_file(p)
    try:
        names = list(pf.schema_arrow.names)
        wanted = None if columns is None else [n for n in names if n in set(columns)]
        if wanted is not None and not wanted:  # none of ours: every row is empty (and counted)
            for number in range(1, pf.metadata.num_rows + 1):
                yield number, {}
            return
        number = 0
        try:
            for batch in pf.iter_batches(batch_size=batch_size, columns=wanted):
                for row in batch.to_pylist():
                    number += 1
                    yield number, row
        except Exception as exc:  # a corrupt or truncated file: Arrow's errors only
            if not (isinstance(exc, OSError) or type(exc).__module__.startswith("pyarrow")):
                raise
            raise InputError(f"{p}: cannot read past row {number}: {exc}") from None
    finally:
        pf.close()
