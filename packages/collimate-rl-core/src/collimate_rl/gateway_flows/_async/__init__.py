"""The async sources of the gateway flows, each written once.

The blocking twin of every module here is generated into
``collimate_rl/gateway_flows/_sync/`` by ``tools/unasync.py``
(docs/architecture.md, "Blocking and async twins"). Import the classes from
their public modules (``collimate_rl.gateway_flows.sessions``, ...), never
from here.
"""
