"""Dataset values as plain Python, whatever library loaded them.

Rows rarely reach a reward function as the JSON their dataset card shows:

* Hugging Face ``datasets`` stores a column of objects as one Arrow struct
  type, the union of every row's keys, and fills the keys a row lacks with
  ``None``. A column mixing MBPP, HumanEval and KodCode ground truths hands a
  KodCode row ``{"test": ..., "test_list": None, "entry_point": None, ...}``:
  read literally, that row has MBPP's ``test_list`` and is taken for an
  assert row.
* Parquet through pandas, ``with_format("numpy")`` and verl's loaders give
  numpy arrays (and numpy scalars) where the JSON had lists and numbers;
  other code hands tuples.

:func:`normalize_value` undoes both, so shape detection sees only the keys a
row really has. A ``None`` inside a list, or as the value of a key of an
object inside a list, is kept: a unit test's expected output may be ``None``
(a function that returns nothing), and a list of tests shares one struct type
whose keys every test has anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["normalize_value"]


def _plain_scalar(value: Any) -> Any:
    """A numpy scalar (``np.int64(3)``, ``np.str_("x")``) as its Python value.
    Recognised by shape, not by type, so numpy is never imported here."""
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        return item()
    return value


def _as_list(value: Any) -> list[Any] | None:
    """A list-like (tuple, numpy array, pyarrow array) as a list, else None."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, (str, bytes, bytearray, Mapping)):
        return None
    to_list = getattr(value, "tolist", None)
    if callable(to_list) and getattr(value, "shape", ()) != ():
        as_list = to_list()
        return as_list if isinstance(as_list, list) else None
    to_pylist = getattr(value, "to_pylist", None)
    if callable(to_pylist):
        as_list = to_pylist()
        return as_list if isinstance(as_list, list) else None
    return None


def normalize_value(value: Any, *, drop_none: bool = True) -> Any:
    """``value`` in plain JSON-like Python: mappings as dicts without the
    keys whose value is ``None`` (when ``drop_none``), list-likes as lists,
    numpy scalars as Python scalars. Objects inside lists keep their ``None``
    values (see the module docstring). Strings and other values pass as
    they are."""
    if value is None or type(value) in (str, bytes, bytearray, int, float, bool):
        return value
    if isinstance(value, str):  # numpy's str_, a subclass: plain, or it pickles as numpy
        return str(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):  # numpy's float64 is a float subclass
        return float(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, Mapping):
        return {
            key: normalize_value(item, drop_none=drop_none)
            for key, item in value.items()
            if not (drop_none and item is None)
        }
    as_list = _as_list(value)
    if as_list is not None:
        return [normalize_value(item, drop_none=False) for item in as_list]
    return _plain_scalar(value)
