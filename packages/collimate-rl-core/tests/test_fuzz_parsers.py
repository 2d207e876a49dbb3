"""Property-based fuzzing (hypothesis) of every parser that reads what
another party wrote: the wire's error envelopes and answers, the download
frame, extract_code, the verdict and reward lines, every reward kind's
ground truth, the egress policy and the exec body.

The property is the same throughout: a parser returns what it promises or
raises its documented, typed error, whatever the input; nothing else
escapes (no KeyError, AttributeError, RecursionError...). Examples are
bounded so CI stays fast.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collimate_rl import (
    CollimateError,
    CollimateTaskError,
    PropertyReward,
    RewardSpec,
    StdioReward,
    extract_code,
)
from collimate_rl import reward_spec_from_ground_truth as from_gt
from collimate_rl._transport.calls import decode_answer, exec_call, get
from collimate_rl.fileio import download_command, parse_download
from collimate_rl.local_backend.egress import decide_egress
from collimate_rl.local_backend.engine.api import TemplateSpec
from collimate_rl.local_backend.exec_request import parse_exec_body
from collimate_rl.local_backend.routing import Request
from collimate_rl.local_backend.wire_errors import WireError
from collimate_rl.pipeline.execs import prepare_grade
from collimate_rl.pipeline.read import result_from_response
from collimate_rl.rewards.registry import reward_kind_registry
from collimate_rl.rewards.verdict import (
    VERDICT_MARKER,
    clamp_reward,
    last_verdict_any_nonce,
    parse_reward_text,
    read_frames,
)
from collimate_rl.wire import error_from_response, parse_error_envelope

FUZZ = settings(
    max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
#: the ground-truth parsers compile what they are given: fewer examples
FUZZ_GT = settings(
    max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=25,
)
#: objects shaped like the wire's, with its field names, so fuzzing reaches past "not an object"
_FIELDS = [
    "template_id", "command", "commands", "code", "files", "timeout_seconds", "seed", "egress",
    "id", "path", "content", "mode", "allow", "deny", "error", "error_code", "message", "code",
    "tests", "inputs", "outputs", "input_output", "fn_name", "kind", "test", "entry_point",
    "input", "output", "testtype", "scoring", "stdin", "stdout", "assert_case", "import_prefix",
]  # fmt: skip
wire_objects = st.dictionaries(st.sampled_from(_FIELDS), json_values, max_size=6)


@FUZZ
@given(st.one_of(json_values, wire_objects))
def test_error_envelopes_parse_or_say_nothing(body: Any) -> None:
    code, message = parse_error_envelope(body)
    assert code is None or isinstance(code, str)
    assert message is None or isinstance(message, str)
    for gateway in (False, True):
        err = error_from_response(503, body, gateway=gateway)
        assert isinstance(err, CollimateError) and err.status == 503


@FUZZ
@given(
    st.integers(100, 599),
    st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()),
)
def test_an_answer_decodes_or_raises_a_typed_error(status: int, content: bytes) -> None:
    for call in (get("/v1/health"), exec_call("/v1/exec", {"code": "1"}, 5.0)):
        for gateway in (False, True):
            with contextlib.suppress(CollimateError):
                decode_answer(call, status, content, gateway=gateway)


@FUZZ
@given(st.binary(max_size=300))
def test_a_download_frame_round_trips_exactly(data: bytes) -> None:
    frame = download_command("/task/out.bin")
    stdout = (
        f"noise\n{frame.sentinel}-BEGIN {len(data)} {hashlib.sha256(data).hexdigest()}\n"
        f"{base64.b64encode(data).decode()}\n{frame.sentinel}-END\n"
    )
    assert parse_download(frame, {"exit_code": 0, "stdout": stdout}) == data


@FUZZ
@given(st.binary(min_size=1, max_size=200), st.integers(0, 10_000), st.characters())
def test_a_corrupted_download_frame_is_never_wrong_bytes(
    data: bytes, where: int, char: str
) -> None:
    frame = download_command("/task/out.bin")
    stdout = (
        f"{frame.sentinel}-BEGIN {len(data)} {hashlib.sha256(data).hexdigest()}\n"
        f"{base64.b64encode(data).decode()}\n{frame.sentinel}-END\n"
    )
    at = where % len(stdout)
    broken = stdout[:at] + char + stdout[at + 1 :]
    try:
        got = parse_download(frame, {"exit_code": 0, "stdout": broken})
    except CollimateTaskError:
        return
    assert got == data  # a change that kept the frame valid kept the bytes too


@FUZZ
@given(st.text(max_size=400), json_values)
def test_a_download_of_any_answer_is_bytes_or_a_task_error(stdout: str, code: Any) -> None:
    frame = download_command("/task/out.bin")
    with contextlib.suppress(CollimateTaskError):
        assert isinstance(parse_download(frame, {"exit_code": code, "stdout": stdout}), bytes)


fences = st.lists(
    st.tuples(
        st.sampled_from(["", "python", "py", "bash", "Python3", "text x"]),
        st.text(max_size=60),
    ),
    max_size=4,
).map(lambda blocks: "".join(f"```{info}\n{body}\n```\n" for info, body in blocks))


@FUZZ
@given(st.text(max_size=300) | fences, st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True))
def test_extract_code_returns_text_of_the_completion(completion: str, entry: str) -> None:
    code = extract_code(completion, entry)
    assert isinstance(code, str)
    assert code == code.strip()
    assert "<think>" not in code or "<think>" in completion


@FUZZ
@given(st.text(max_size=400), st.text(alphabet="0123456789abcdef", min_size=1, max_size=32))
def test_verdict_readers_never_raise(stdout: str, nonce: str) -> None:
    framed = read_frames(stdout, nonce)
    assert framed.verdict is None or isinstance(framed.verdict, dict)
    found = last_verdict_any_nonce(stdout)
    assert found is None or isinstance(found, dict)
    reward = parse_reward_text(stdout)
    assert 0.0 <= reward <= 1.0


@FUZZ
@given(json_values | st.text(max_size=30))
def test_a_reward_is_always_clamped_and_finite(value: Any) -> None:
    reward = clamp_reward(value)
    assert math.isfinite(reward) and 0.0 <= reward <= 1.0


KINDS = sorted(reward_kind_registry())


@FUZZ_GT
@given(st.one_of(json_values, wire_objects, wire_objects.map(json.dumps)))
def test_a_ground_truth_is_a_spec_or_a_clear_error(gt: Any) -> None:
    try:
        spec = from_gt(gt)
    except (ValueError, TypeError) as exc:
        assert str(exc)  # says what was wrong
        return
    assert isinstance(spec, RewardSpec)


@pytest.mark.parametrize("kind", KINDS)
@FUZZ_GT
@given(gt=wire_objects)
def test_every_reward_kind_parses_or_gives_a_clear_error(kind: str, gt: dict[str, Any]) -> None:
    try:
        spec = from_gt({**gt, "kind": kind})
    except (ValueError, TypeError) as exc:
        assert str(exc)
        return
    assert isinstance(spec, RewardSpec)


_TEMPLATES = [
    TemplateSpec(id="net", kind="python", networked=True),
    TemplateSpec(id="vsock", kind="python", networked=False),
]


@FUZZ
@given(st.one_of(json_values, wire_objects))
def test_an_egress_policy_is_decided_or_refused_400(policy: Any) -> None:
    for template in _TEMPLATES:
        try:
            decision = decide_egress(policy, template)
        except WireError as err:
            assert err.status == 400 and err.message
            continue
        assert decision is None or decision.enforced in ("open", "none")


@FUZZ
@given(st.one_of(json_values, wire_objects))
def test_an_exec_body_is_a_job_or_a_4xx(body: Any) -> None:
    try:
        job = parse_exec_body(body)
    except WireError as err:
        assert 400 <= err.status < 500 and err.message
        return
    assert 0 < job.timeout_s <= 3600 and math.isfinite(job.timeout_s)
    assert "\0" not in job.source


@FUZZ
@given(st.binary(max_size=300))
def test_a_request_body_is_json_or_a_400(body: bytes) -> None:
    request = Request("POST", "/v1/exec", "", {}, body, "127.0.0.1")
    try:
        request.json()
    except WireError as err:
        assert err.status == 400


_SPECS = [
    StdioReward([{"input": "3 4\n", "output": "7"}]),
    PropertyReward(reference="    return x", generator="random.randint(0, 9)", k=2),
]
_VERDICT_KEYS = ["reward", "verdict", "passed", "total", "failed", "timeout", "error", "detail"]
verdicts = st.dictionaries(st.sampled_from(_VERDICT_KEYS), json_values, max_size=5)


@FUZZ
@given(
    st.sampled_from(range(len(_SPECS))),
    st.lists(
        st.one_of(
            st.text(max_size=60),
            st.just("hello"),
            verdicts.map(json.dumps),
            st.text(max_size=40).map(lambda t: "{" + t),
        ),
        max_size=5,
    ),
    st.booleans(),
    json_values,
)
def test_a_verdict_of_any_shape_is_a_bounded_reward_or_infra(
    which: int, payloads: list[str], framed: bool, exit_code: Any
) -> None:
    """Whatever a guest prints under the grade's own nonce (or not), the
    reading is a reward in [0, 1] with a three-way verdict."""
    spec = _SPECS[which]
    prepared = prepare_grade(spec, "print(1)\n", seed=None, timeout_seconds=5)
    head = f"{VERDICT_MARKER}{prepared.ctx.nonce} " if framed else ""
    stdout = "\n".join(head + p for p in payloads)
    result = result_from_response(spec, prepared, {"stdout": stdout, "exit_code": exit_code})
    assert math.isfinite(result.reward) and 0.0 <= result.reward <= 1.0
    assert result.verdict in ("passed", "failed", "infra_error")
    if result.infra_error:
        assert result.verdict == "infra_error"
