"""The code that runs inside a warm interpreter: the zygote, its clones and
their exec children, each a fork of the one before, as a microVM control
plane forks a warm VM.

* ``zygote``: the warm interpreter of a template; forks clones.
* ``clone``: one session or one-shot at a time, in its own namespaces
  (``private_root``); wiped and reused between users.
* ``exec_child``: one exec, in the private root, as an unprivileged uid.

Never imported by the server. ``local_backend/engine/_zygote.py`` loads this
package in a ``python -I -S`` interpreter without importing ``collimate_rl``
itself (it would pull in an HTTP client, and every page of the zygote is
copied on write into every clone and exec): these modules stay standard-library only
and import nothing from outside this package. This file is not executed
there either, so it must stay empty of code.
"""
