"""The async sources of core's clients, each written once.

The blocking twin of every module here is generated into
``collimate_rl/_sync/`` by ``tools/unasync.py`` (docs/architecture.md,
"Blocking and async twins"). Import the classes from their public modules
(``collimate_rl.client``, ...), never from here.
"""
