"""The cluster's shared secret: the one check a grader reachable from other
machines makes before it answers anything.

The daemon wire has no authentication (its unix socket's mode and a
loopback bind are its access control). A grader that the other nodes of a
cluster reach listens on an address they can dial, so it is started with a
secret (``COLLIMATE_CLUSTER_SECRET_FILE``: the path of a file holding it,
read once at start, so the secret itself is never in a command line, an
environment listing or a log) and refuses, 401 ``unauthorized``, every
request whose ``X-Collimate-Cluster-Secret`` header does not carry it. The
compare takes the same time whatever the guess. Opt-in: a server started
without a secret checks nothing, as before.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping

from .wire_errors import WireError

__all__ = ["SECRET_FILE_ENV", "SECRET_HEADER", "read_secret_file", "refusal", "secret_matches"]

#: The header a client sends the secret in (compared by its lower-case name).
SECRET_HEADER = "X-Collimate-Cluster-Secret"
#: The environment variable naming the file that holds the secret.
SECRET_FILE_ENV = "COLLIMATE_CLUSTER_SECRET_FILE"


def read_secret_file(env: Mapping[str, str] | None = None) -> str | None:
    """The secret from the file ``$COLLIMATE_CLUSTER_SECRET_FILE`` names
    (None when unset); an empty or unreadable file is an error, never a
    server that silently checks nothing."""
    path = (os.environ if env is None else env).get(SECRET_FILE_ENV)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            secret = fh.read().strip()
    except OSError as exc:
        raise ValueError(f"{SECRET_FILE_ENV}: cannot read {path}: {exc.strerror or exc}") from None
    if not secret:
        raise ValueError(f"{SECRET_FILE_ENV}: {path} is empty")
    return secret


def secret_matches(headers: Mapping[str, str], secret: str) -> bool:
    """Whether ``headers`` (lower-case names) carry ``secret``, compared in
    constant time."""
    given = headers.get(SECRET_HEADER.lower(), "")
    return hmac.compare_digest(given.encode("utf-8"), secret.encode("utf-8"))


def refusal() -> WireError:
    """The answer to a request without the secret (it never says why beyond that)."""
    return WireError(401, "unauthorized", f"missing or wrong {SECRET_HEADER} header")
