"""Stand-ins for what the candidate's process holds, for tests that are code.

Asserts, HumanEval ``check`` functions and pytest functions run in the
grader; :class:`_Session` loads the candidate in its process and hands the
tests stand-ins for the names it defines. :class:`_Remote` stands in for a
function, class, object or iterator it made: calls, attributes, items and
iteration cross to its process (:mod:`.remote` carries them). Only plain
builtin data crosses back, so an object that equals anything, lies about
its class or subclasses a builtin never reaches a comparison: it stays in
the candidate's process, and a comparison of it with a plain value is False.
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, B905
from __future__ import annotations

import sys

from .budget import _Budget
from .remote import CandidateError, _Conn, _failure_of, _Gone

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any

_MAX_RESTARTS = 8  # fresh processes for one candidate's interactive tests


class _Session:
    """A candidate loaded as a module, for tests that run in the grader. A
    process that dies or times out is replaced (its module loaded again) for
    the next call, a few times at most: one crash costs the check it
    happened in, not every check after it."""

    def __init__(
        self, fork: Any, budget: _Budget, module: str, path: str, aliases: list[str]
    ) -> None:
        self.fork = fork
        self.budget = budget
        self.load_req = {"do": "load", "module": module, "path": path, "aliases": aliases}
        self.conn: _Conn | None = None
        self.restarts = 0
        self.exports: dict[str, Any] = {}
        self.exc_classes: dict[int, type] = {}
        self.load_error: str | None = None
        #: calls and operations sent to the candidate's process so far: test
        #: code that fails after one of them may have been failed by it
        self.calls = 0

    def start(self) -> bool:
        """Fork and load; False (``load_error`` says why) when it cannot.

        The answer comes from a process that ran the candidate's code, so it
        is read as anything but trusted: a claim that the guest is broken is
        believed only if the grader sees it too (``_Budget.vouched``),
        and an answer no worker gives ends the process, the candidate's
        failure."""
        conn = self.conn = self.fork()
        try:
            reply = conn.ask(dict(self.load_req), self.budget)
            if _is_tuple(reply, 2) and reply[0] == "load" and type(reply[1]) is str:
                self.load_error = self.budget.vouched(reply[1])
                return False
            if not (_is_tuple(reply, 2) and reply[0] == "loaded" and type(reply[1]) is dict):
                raise CandidateError("not a load's answer")
            self.exports = {_name(name): self.value(enc) for name, enc in list(reply[1].items())}
        except _Gone as gone:
            self.load_error = "%s while loading the candidate: %s" % _failure_of(gone.why)
            return False
        except CandidateError:
            conn.end("sent garbage")
            self.load_error = (
                "error while loading the candidate: %s" % (_failure_of("sent garbage")[1])
            )
            return False
        return True

    def live(self) -> _Conn:
        conn = self.conn
        if conn is not None and conn.gone is None:
            return conn
        if self.restarts >= _MAX_RESTARTS or self.budget.left() <= 0:
            raise CandidateError("the candidate's process is gone")
        self.restarts += 1
        if conn is not None:
            conn.end("replaced")
        if not self.start():
            raise CandidateError(self.load_error or "the candidate no longer loads")
        return self.conn  # type: ignore[return-value]

    def close(self) -> None:
        if self.conn is not None:
            self.conn.end("done")

    # -- values ------------------------------------------------------------
    def value(self, enc: Any) -> Any:
        """What the grader holds for a value as it crossed (see
        ``worker._Candidate.out``); :class:`CandidateError` for anything
        else a process running the candidate's code may have sent."""
        if _is_tuple(enc, 2) and enc[0] == "v":
            return enc[1]
        if _is_tuple(enc, 2) and enc[0] == "m" and type(enc[1]) is str:
            # a module the candidate imported: the grader's own, if loaded
            return sys.modules.get(enc[1])
        if not (_is_tuple(enc, 5) and enc[0] == "h" and type(enc[1]) is int):
            raise CandidateError("the candidate's process sent garbage")
        _tag, key, type_name, is_callable, bases = enc
        if type(type_name) is not str or not _is_tuple(bases, None):
            raise CandidateError("the candidate's process sent garbage")
        if bases:
            return self.exception_class(key, type_name, bases)
        return _Remote(self, key, type_name, bool(is_callable))

    def exception_class(self, key: int, name: str, bases: Any) -> type:
        """A local exception class standing in for one the candidate
        defined, deriving from the same builtin exception (so that
        ``pytest.raises(ValueError)`` and ``except MyError`` both work)."""
        cls = self.exc_classes.get(key)
        if cls is None:
            import builtins

            base: Any = Exception
            for base_name in bases:
                found = getattr(builtins, base_name, None) if type(base_name) is str else None
                if isinstance(found, type) and issubclass(found, Exception):
                    base = found
                    break
            try:
                cls = type(str(name), (base,), {"__module__": "solution"})
            except Exception:  # (a name no class can have: a NUL in it)
                cls = type("CandidateError", (base,), {"__module__": "solution"})
            self.exc_classes[key] = cls
        return cls

    def encode(self, value: Any, depth: int = 0) -> Any:
        """An argument as it crosses (see ``worker._Candidate.into``)."""
        kind = type(value)
        if isinstance(value, _Remote):
            if object.__getattribute__(value, "_session") is not self:
                raise CandidateError("an object of another candidate")
            return ("h", object.__getattribute__(value, "_key"))
        if depth > 100:
            raise CandidateError("an argument nested too deep to cross")
        if kind is list:
            return ("l", [self.encode(v, depth + 1) for v in value])
        if kind is tuple:
            return ("t", [self.encode(v, depth + 1) for v in value])
        if kind is set or kind is frozenset:
            return ("s", [self.encode(v, depth + 1) for v in value])
        if kind is dict:
            return (
                "d",
                [(self.encode(k, depth + 1), self.encode(v, depth + 1)) for k, v in value.items()],
            )
        if kind in (type(None), bool, int, float, complex, str, bytes):
            return ("v", value)
        raise CandidateError(
            "an argument of type %s cannot cross to the candidate's process "
            "(only plain data and the candidate's own objects can)" % kind.__name__
        )

    def answer(self, reply: Any, args: Any = ()) -> Any:
        """The value of a call or operation as its reply says, or the
        exception it raised; :class:`CandidateError` for a reply no worker
        sends."""
        if _is_tuple(reply, 3) and reply[0] == "ok" and type(reply[2]) is list:
            for given, back in zip(args, reply[2]):
                if _is_tuple(back, 2) and back[0] == "v":
                    _sync(given, back[1])
            return self.value(reply[1])
        if _is_tuple(reply, 5) and reply[0] == "raised":
            _tag, name, bases, key, message = reply
            if type(name) is not str or type(message) is not str or not _is_tuple(bases, None):
                raise CandidateError("the candidate's process sent garbage")
            import builtins

            if not key:
                cls = getattr(builtins, name, None)
                if isinstance(cls, type) and issubclass(cls, Exception):
                    raise cls(message)
                raise CandidateError("the candidate raised %s: %s" % (name, message))
            if type(key) is not int:
                raise CandidateError("the candidate's process sent garbage")
            raise self.exception_class(key, name, bases)(message)
        if _is_tuple(reply, 2) and type(reply[0]) is str and type(reply[1]) is str:
            raise CandidateError("%s: %s" % (reply[0], reply[1]))
        raise CandidateError("the candidate's process sent garbage")

    def visible(self) -> dict[str, Any]:
        """The names test code may see from the candidate's code: not one
        that shadows a builtin (or ``pytest``), or a candidate defining
        ``set`` or ``sorted`` would answer for both sides of a test's
        comparison."""
        import builtins

        return {
            name: value
            for name, value in self.exports.items()
            if value is not None and name != "pytest" and not hasattr(builtins, name)
        }

    def call(self, target: Any, args: Any, kwargs: Any) -> Any:
        self.calls += 1
        conn = self.live()
        req = {
            "do": "call",
            "target": target,
            "args": [self.encode(a) for a in args],
            "kwargs": [(str(k), self.encode(v)) for k, v in kwargs.items()],
        }
        try:
            reply = conn.ask(req, self.budget)
        except _Gone as gone:
            raise CandidateError(_failure_of(gone.why)[1]) from None
        return self.answer(reply, args)

    def op(self, key: int, what: str, *args: Any) -> Any:
        self.calls += 1
        conn = self.live()
        req = {"do": "op", "handle": key, "op": what, "args": [self.encode(a) for a in args]}
        try:
            reply = conn.ask(req, self.budget)
        except _Gone as gone:
            raise CandidateError(_failure_of(gone.why)[1]) from None
        return self.answer(reply)


def _is_tuple(value: Any, size: int | None) -> bool:
    """``value`` is a tuple (of ``size`` items, unless None)."""
    return type(value) is tuple and (size is None or len(value) == size)


def _name(name: Any) -> str:
    """A name the candidate's module defines, as its process sent it."""
    if type(name) is not str:
        raise CandidateError("the candidate's process sent garbage")
    return name


def _sync(given: Any, back: Any) -> None:
    """Make ``given`` (an argument the test passed) look as the candidate's
    call left it, in place: lists, dicts, sets and bytearrays."""
    try:
        if type(given) is list and type(back) is list:
            if len(given) == len(back):
                for i, (g, b) in enumerate(zip(given, back)):
                    if type(g) in (list, dict, set) and type(g) is type(b):
                        _sync(g, b)
                    else:
                        given[i] = b
            else:
                given[:] = back
        elif (type(given) is dict and type(back) is dict) or (
            type(given) is set and type(back) in (set, frozenset)
        ):
            given.clear()
            given.update(back)
    except Exception:
        pass


def _exact(value: Any, kind: type, what: str) -> Any:
    if type(value) is not kind:
        raise TypeError("%s returned %s, not %s" % (what, type(value).__name__, kind.__name__))
    return value


class _Remote:
    """Stands in for an object of the candidate's process (a function, a
    class, an instance, an iterator). Calls, attributes, items and
    iteration cross to that process; equality with anything but another of
    its objects is False, whatever its ``__eq__`` would say."""

    __slots__ = ("__weakref__", "_callable", "_key", "_session", "_type")

    def __init__(self, session: _Session, key: int, type_name: str, is_callable: bool) -> None:
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_type", type_name)
        object.__setattr__(self, "_callable", is_callable)

    def _op(self, what: str, *args: Any) -> Any:
        session = object.__getattribute__(self, "_session")
        return session.op(object.__getattribute__(self, "_key"), what, *args)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        session = object.__getattribute__(self, "_session")
        return session.call(("handle", object.__getattribute__(self, "_key")), args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._op("getattr", name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._op("setattr", name, value)

    def __getitem__(self, key: Any) -> Any:
        return self._op("getitem", key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._op("setitem", key, value)

    def __iter__(self) -> Any:
        it = self._op("iter")
        if isinstance(it, _Remote):
            return _RemoteIterator(it)
        return iter(it)

    def __next__(self) -> Any:
        return self._op("next")

    def __len__(self) -> int:
        return int(_exact(self._op("len"), int, "__len__"))

    def __contains__(self, item: Any) -> bool:
        return bool(_exact(self._op("contains", item), bool, "__contains__"))

    def __bool__(self) -> bool:
        return bool(_exact(self._op("bool"), bool, "__bool__"))

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if not isinstance(other, _Remote):
            return False  # a plain value never equals an object of the candidate's
        return self._op("eq", other) is True

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, _Remote):
            return NotImplemented
        return self._op("lt", other) is True

    def __hash__(self) -> int:
        return int(_exact(self._op("hash"), int, "__hash__"))

    def __repr__(self) -> str:
        try:
            return str(_exact(self._op("repr"), str, "__repr__"))
        except Exception:
            return "<candidate %s>" % object.__getattribute__(self, "_type")

    def __str__(self) -> str:
        return str(_exact(self._op("str"), str, "__str__"))

    def __instancecheck__(self, obj: Any) -> bool:
        if not isinstance(obj, _Remote):
            return False
        return self._op("isinstance", obj) is True


class _RemoteIterator:
    __slots__ = ("_it",)

    def __init__(self, it: _Remote) -> None:
        self._it = it

    def __iter__(self) -> _RemoteIterator:
        return self

    def __next__(self) -> Any:
        return self._it._op("next")
