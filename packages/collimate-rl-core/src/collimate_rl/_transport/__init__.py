"""The machinery under the four public clients (not public API).

* :mod:`.calls`: a request as data (:class:`~.calls.Call`) and how an answer
  becomes a value or a typed error; no I/O.
* :mod:`.pool`: the pooled httpx transport of one client object, re-created
  lazily after pickling, ``os.fork`` or a change of event loop.
* :mod:`.send`: the thin sync and async send loops that apply
  :mod:`collimate_rl.retry` and the exec observer hooks.
* :mod:`.observe`: the ``collimate_rl_before_exec`` / ``after_exec`` calls.

Every ``import httpx`` of the SDK lives in this package and in the client
modules built on it.
"""
