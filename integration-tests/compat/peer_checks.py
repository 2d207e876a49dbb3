"""The scaffolding both compatibility scripts share (``peer_compat.py`` and
``peer_gateway.py``): named checks that print one line each and remember
their failures, the assertion that a call fails with a given status and
code, and the closing report that decides the exit status.

It is imported by those scripts under the PEER's interpreter, so it keeps
their rules: the standard library only (never our ``collimate_rl``), Python
3.8+ syntax. The scripts run with ``-I``, which leaves a script's own
directory off ``sys.path``; each puts this directory back (at the end of the
path, so the peer's packages still come first) before importing it.
"""

import traceback

failures = []


def check(name):
    """Run the decorated function at once as the check ``name``: print
    ``ok`` or ``FAIL`` (with its traceback) and remember a failure, so one
    failing check does not hide the ones after it."""

    def wrap(fn):
        try:
            fn()
        except Exception:
            failures.append(name)
            print("FAIL", name)
            traceback.print_exc()
        else:
            print("ok  ", name)
        return fn

    return wrap


def expect_error(fn, status, code, error_type):
    """``fn()`` must raise ``error_type`` carrying this HTTP ``status`` and
    ``error_code``; any other exception propagates as it is."""
    try:
        fn()
    except error_type as exc:
        got = (getattr(exc, "status", None), getattr(exc, "error_code", None))
        assert got == (status, code), f"expected {(status, code)!r}, got {got!r} ({exc})"
    else:
        raise AssertionError(f"expected {status} {code}, got no error")


def report():
    """Print the verdict over every check run so far; the exit status (0 only
    if none failed)."""
    if failures:
        print(f"{len(failures)} check(s) failed: {', '.join(failures)}")
        return 1
    print("all checks passed")
    return 0
