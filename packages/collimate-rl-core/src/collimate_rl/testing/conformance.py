"""The session-surface conformance suite every client + server pair must pass.

Subclass it in a test module and provide two fixtures::

    from collimate_rl.testing import SessionSurfaceConformance

    class TestMyBackend(SessionSurfaceConformance):
        @pytest.fixture
        def client(self):
            with CollimateClient("http://127.0.0.1:8080") as c:
                yield c

        @pytest.fixture
        def template_id(self):
            return "python"       # a python template of that server

For an async client subclass :class:`AsyncSessionSurfaceConformance` instead
and yield the async client from ``client``: every test then drives it on a
real event loop (no pytest-asyncio needed).

The tests assert the contract of docs/wire.md §1, 2 and 5 as seen through the
session surface, on either wire (codes a gateway spells differently are
accepted through the ``*_codes`` class attributes). They make no timing
assumptions: the one timeout test asserts the outcome (``exit_code -1``),
never how long it took.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from ..errors import CollimateError
from ..wire import SEED_RE
from .bridge import BlockingBridge

__all__ = ["AsyncSessionSurfaceConformance", "SessionSurfaceConformance"]

_SEED_A = "ab" * 32
_SEED_B = "0123456789abcdef" * 4
_DRAWS = "import random\nprint([random.random() for _ in range(3)])"
_SEED_ACKS = {"verified", "off", "no-ack"}
_TIMINGS = ("fork_time_ms", "exec_time_ms", "total_time_ms")


class SessionSurfaceConformance:
    """The suite, for a blocking client (fixture ``client``) and a python
    template (fixture ``template_id``)."""

    #: Error codes accepted for an unknown session / template (daemon, gateway).
    missing_session_codes: ClassVar[tuple[str, ...]] = ("no_such_session", "not_found")
    missing_template_codes: ClassVar[tuple[str, ...]] = ("no_template", "not_found")

    @pytest.fixture
    def surface(self, client: Any) -> Any:
        """What the tests call: the client itself (the async suite wraps it)."""
        return client

    @pytest.fixture
    def session_id(self, surface: Any, template_id: str) -> Iterator[str]:
        created = surface.create_session(template_id)
        yield created["session_id"]
        surface.delete_session(created["session_id"])

    # -- discovery -----------------------------------------------------------

    def test_health_shape(self, surface: Any) -> None:
        health = surface.health()
        assert isinstance(health, dict)
        assert health.get("status") in {"ok", "draining"}

    # -- the session lifecycle ---------------------------------------------

    def test_create_get_list_delete(self, surface: Any, template_id: str) -> None:
        created = surface.create_session(template_id)
        sid = created["session_id"]
        try:
            assert isinstance(sid, str) and sid
            assert created["template_id"] == template_id
            info = surface.get_session(sid)
            assert info["session_id"] == sid
            assert info["template_id"] == template_id
            listed = surface.list_sessions()
            assert isinstance(listed, list)
            assert sid in {s["session_id"] for s in listed}
        finally:
            gone = surface.delete_session(sid)
        assert gone["deleted"] is True
        assert gone["session_id"] == sid
        assert sid not in {s["session_id"] for s in surface.list_sessions()}

    def test_delete_is_idempotent(self, surface: Any, template_id: str) -> None:
        sid = surface.create_session(template_id)["session_id"]
        assert surface.delete_session(sid)["deleted"] is True
        again = surface.delete_session(sid)
        assert again == {**again, "deleted": False, "session_id": sid}

    def test_delete_of_a_never_existing_session_does_not_raise(self, surface: Any) -> None:
        answer = surface.delete_session("sess_never_existed_0000")
        assert answer["deleted"] is False
        assert answer["session_id"] == "sess_never_existed_0000"

    def test_unknown_session_is_a_typed_404(self, surface: Any) -> None:
        with pytest.raises(CollimateError) as got:
            surface.get_session("sess_never_existed_0000")
        assert got.value.status == 404
        assert got.value.error_code in self.missing_session_codes
        with pytest.raises(CollimateError) as got:
            surface.session_exec("sess_never_existed_0000", command="true")
        assert got.value.status == 404
        assert got.value.error_code in self.missing_session_codes

    def test_exec_after_delete_is_a_typed_error(self, surface: Any, template_id: str) -> None:
        sid = surface.create_session(template_id)["session_id"]
        surface.delete_session(sid)
        with pytest.raises(CollimateError) as got:
            surface.session_exec(sid, command="true")
        assert got.value.status in (404, 410)

    def test_unknown_template_is_a_typed_404(self, surface: Any) -> None:
        with pytest.raises(CollimateError) as got:
            surface.exec_once("no-such-template-0000", command="true")
        assert got.value.status == 404
        assert got.value.error_code in self.missing_template_codes

    # -- the exec contract -----------------------------------------------

    def test_exec_response_shape(self, surface: Any, session_id: str) -> None:
        res = surface.session_exec(session_id, command="echo hello")
        assert res["stdout"] == "hello\n"
        assert res["stderr"] == ""
        assert res["exit_code"] == 0
        assert SEED_RE.match(res["seed"])
        assert res["seed_ack"] in _SEED_ACKS
        for key in _TIMINGS:
            assert isinstance(res[key], (int, float))

    def test_stderr_is_merged_into_stdout(self, surface: Any, session_id: str) -> None:
        res = surface.session_exec(session_id, command="echo out; echo err 1>&2; echo end")
        assert res["stdout"] == "out\nerr\nend\n"
        assert res["stderr"] == ""

    def test_exit_status_is_reported(self, surface: Any, session_id: str) -> None:
        assert surface.session_exec(session_id, command="exit 3")["exit_code"] == 3

    def test_session_keeps_state_between_execs(self, surface: Any, session_id: str) -> None:
        surface.session_exec(session_id, command="echo kept > state.txt")
        assert surface.session_exec(session_id, command="cat state.txt")["stdout"] == "kept\n"

    def test_code_runs_in_the_template_interpreter(self, surface: Any, session_id: str) -> None:
        res = surface.session_exec(session_id, code="import sys\nprint(sys.version_info[0])")
        assert res["stdout"].strip() == "3"

    def test_one_shot_exec(self, surface: Any, template_id: str) -> None:
        before = {s["session_id"] for s in surface.list_sessions()}
        res = surface.exec_once(template_id, code="print(6 * 7)")
        assert res["stdout"] == "42\n"
        assert res["exit_code"] == 0
        after = {s["session_id"] for s in surface.list_sessions()}
        assert after <= before  # nothing left behind

    def test_timeout_kills_the_run_with_exit_minus_one(self, surface: Any, session_id: str) -> None:
        res = surface.session_exec(session_id, command="sleep 60", timeout_seconds=1)
        assert res["exit_code"] == -1
        assert "timeout" in res["stdout"]

    # -- seeds ----------------------------------------------------------

    def test_seed_is_echoed(self, surface: Any, session_id: str) -> None:
        assert surface.session_exec(session_id, command="true", seed=_SEED_A)["seed"] == _SEED_A

    def test_a_fresh_seed_is_drawn_when_none_is_sent(self, surface: Any, session_id: str) -> None:
        first = surface.session_exec(session_id, command="true")["seed"]
        second = surface.session_exec(session_id, command="true")["seed"]
        assert SEED_RE.match(first) and SEED_RE.match(second)
        assert first != second

    def test_same_seed_same_draws_across_calls(
        self, surface: Any, session_id: str, template_id: str
    ) -> None:
        in_session = surface.session_exec(session_id, code=_DRAWS, seed=_SEED_A)["stdout"]
        one_shot = surface.exec_once(template_id, code=_DRAWS, seed=_SEED_A)["stdout"]
        other = surface.exec_once(template_id, code=_DRAWS, seed=_SEED_B)["stdout"]
        assert in_session == one_shot
        assert in_session != other

    def test_invalid_seed_is_a_400(self, surface: Any, session_id: str) -> None:
        with pytest.raises(CollimateError) as got:
            surface.session_exec(session_id, command="true", seed="not-hex")
        assert got.value.status == 400
        assert got.value.error_code == "invalid_seed"

    # -- request fields -----------------------------------------------------

    def test_files_get_a_trailing_newline_only_when_missing(
        self, surface: Any, session_id: str
    ) -> None:
        files = [
            {"path": "no_newline.txt", "content": "x"},
            {"path": "has_newline.txt", "content": "y\n"},
        ]
        res = surface.session_exec(
            session_id, command="cat no_newline.txt has_newline.txt; echo END", files=files
        )
        assert res["stdout"] == "x\ny\nEND\n"

    def test_command_wins_over_commands_and_code(self, surface: Any, session_id: str) -> None:
        res = surface.session_exec(
            session_id,
            command="echo from-command",
            commands=[["echo", "from-commands"]],
            code="print('from-code')",
        )
        assert res["stdout"] == "from-command\n"

    def test_commands_win_over_code(self, surface: Any, session_id: str) -> None:
        res = surface.session_exec(
            session_id, commands=[["echo", "from-commands"]], code="print('from-code')"
        )
        assert res["stdout"] == "from-commands\n"

    def test_commands_are_argv_lists_quoted_for_the_shell(
        self, surface: Any, session_id: str
    ) -> None:
        res = surface.session_exec(
            session_id, commands=[["echo", "a  b"], ["printf", "%s\\n", "x;y", "$HOME"]]
        )
        assert res["stdout"] == "a  b\nx;y\n$HOME\n"


class AsyncSessionSurfaceConformance(SessionSurfaceConformance):
    """The same suite for an async client: ``client`` yields the async client,
    and each test runs its coroutines on a fresh event loop."""

    @pytest.fixture
    def surface(self, client: Any) -> Iterator[Any]:
        with BlockingBridge(client) as bridge:
            yield bridge
