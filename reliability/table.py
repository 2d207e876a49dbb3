"""The reliability table: one line per count, and which counts must be zero."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    name: str
    value: int | str
    #: the count must be 0 (the run fails otherwise)
    due_zero: bool = False
    #: a check that is not a zero count failed (e.g. memory not flat)
    failed: bool = False

    @property
    def ok(self) -> bool:
        if self.failed:
            return False
        return not (self.due_zero and self.value != 0)


def print_table(rows: list[Row], *, title: str) -> bool:
    """Print ``rows``; True when every due zero is zero."""
    width = max(len(r.name) for r in rows)
    print(title)
    print("-" * (width + 40))
    for r in rows:
        mark = "" if r.ok else "   <-- FAILED"
        due = " (due 0)" if r.due_zero else ""
        print(f"{r.name:<{width}}  {r.value}{due}{mark}")
    print("-" * (width + 40))
    ok = all(r.ok for r in rows)
    print("all zeros where zeros are due" if ok else "FAILED: a count that must be zero is not")
    return ok
