"""The fixed names by which every job of a cluster finds the graders.

A Ray job started without a namespace gets an anonymous one, so the actors
and the records that other jobs must find live in one fixed namespace.
"""

from __future__ import annotations

from typing import Final

#: Ray namespace of the registry and the graders (actors and KV records).
NAMESPACE: Final = "collimate"
#: The registry actor: its presence says "this cluster runs graders".
REGISTRY: Final = "collimate-registry"
#: KV key of the cluster's shared secret.
SECRET_KEY: Final = "cluster-secret"
#: KV keys of the graders' records: this prefix and the node id.
GRADER_PREFIX: Final = "grader/"


def grader_name(node_id: str) -> str:
    """The name of the grader actor of node ``node_id`` (one a node)."""
    return f"collimate-grader-{node_id}"
