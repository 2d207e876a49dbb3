"""``drop_infra_groups``: slime's dynamic-sampling filter for infra failures.

A sample removed for an infrastructure failure
(``collimate_on_infra_error=remove``) still counts in its group's
advantage normalisation: slime normalises over every sample of a group
and only zeroes the removed one's loss mask. Its placeholder 0.0 would
shift the others' advantages. So the group must go as a whole:

    --dynamic-sampling-filter-path collimate_rl.slime.drop_infra_groups

slime calls the filter once per finished group, ``filter(args, group)``,
where the group is a list of samples (or of lists of samples, when a
custom generate function returns several per prompt), and drops the group
when the answer says not to keep it; slime then samples more prompts to
fill the batch.

The answer is slime's own ``DynamicFilterOutput`` (found in
``sys.modules``, where slime's rollout put it; slime is never imported),
so slime's rollout metrics count these drops as
``rollout/dynamic_filter/drop_collimate_infra_error``. Elsewhere (an older
slime, a test) it is a :class:`FilterVerdict`, which reads the same and is
truthy exactly when the group is kept (what slime's older filters returned).
Neither ever keeps a failed group to fill a short batch.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from .outcome import is_infra_marked

__all__ = ["DROP_REASON", "FilterVerdict", "drop_infra_groups"]

#: Why a group was dropped (slime counts drops per reason).
DROP_REASON: Final = "collimate_infra_error"
#: Where slime defines its filters' answer type.
_SLIME_FILTER_TYPES: Final = "slime.rollout.filter_hub.base_types"


@dataclass
class FilterVerdict:
    """The filter's answer when slime's own type is not loaded: the fields
    of slime's ``DynamicFilterOutput``; truthy when the group is kept."""

    keep: bool
    reason: str | None = None
    keep_when_insufficient: bool = False

    def __bool__(self) -> bool:
        return self.keep


def _samples(group: Any) -> Iterator[Any]:
    for item in group:
        if isinstance(item, (list, tuple)):
            yield from _samples(item)
        else:
            yield item


def _answer(keep: bool, reason: str | None) -> Any:
    module = sys.modules.get(_SLIME_FILTER_TYPES)
    output_type = getattr(module, "DynamicFilterOutput", None)
    if output_type is not None:
        return output_type(keep=keep, reason=reason)
    return FilterVerdict(keep=keep, reason=reason)


def drop_infra_groups(args: Any, samples: Any, **kwargs: Any) -> Any:
    """Keep the group unless one of its samples was removed for an
    infrastructure failure (see the module docstring for the answer type)."""
    if not isinstance(samples, (list, tuple)):
        raise TypeError(f"drop_infra_groups takes a group (a list of samples), got {samples!r:.80}")
    failed = any(is_infra_marked(sample) for sample in _samples(samples))
    return _answer(not failed, DROP_REASON if failed else None)
