"""The records the cluster keeps in Ray's own store (the GCS key-value
store): the shared secret and one record per grader.

Held in the GCS rather than in an actor, they outlive any actor's restart
and any node's loss (the GCS lives on the head). Every access to the store
is in this module: it is the one place that names Ray's internal KV API.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from ray.experimental import internal_kv

from .names import GRADER_PREFIX, NAMESPACE, SECRET_KEY

__all__ = ["drop_grader", "drop_secret", "grader_records", "put_grader", "secret"]


def secret(*, create: bool) -> str | None:
    """The cluster's secret; made (once, whoever asks first) when ``create``."""
    value = internal_kv._internal_kv_get(SECRET_KEY, namespace=NAMESPACE)
    if value is None and create:
        # overwrite=False: two concurrent `up`s agree on the first one written
        internal_kv._internal_kv_put(
            SECRET_KEY, secrets.token_urlsafe(32), overwrite=False, namespace=NAMESPACE
        )
        value = internal_kv._internal_kv_get(SECRET_KEY, namespace=NAMESPACE)
    return None if value is None else value.decode()


def drop_secret() -> None:
    internal_kv._internal_kv_del(SECRET_KEY, namespace=NAMESPACE)


def put_grader(node_id: str, record: dict[str, Any]) -> None:
    internal_kv._internal_kv_put(
        GRADER_PREFIX + node_id, json.dumps(record), overwrite=True, namespace=NAMESPACE
    )


def drop_grader(node_id: str) -> None:
    internal_kv._internal_kv_del(GRADER_PREFIX + node_id, namespace=NAMESPACE)


def grader_records() -> dict[str, dict[str, Any]]:
    """Node id -> the record its grader wrote (url, pid, started, ...)."""
    found: dict[str, dict[str, Any]] = {}
    for key in internal_kv._internal_kv_list(GRADER_PREFIX, namespace=NAMESPACE):
        value = internal_kv._internal_kv_get(key, namespace=NAMESPACE)
        if value is not None:
            found[key.decode()[len(GRADER_PREFIX) :]] = json.loads(value)
    return found
