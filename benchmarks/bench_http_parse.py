"""Why the SDK keeps its own HTTP/1.1 answer parser, and calls its transports
directly (not a test).

1. **Parsing one answer**, in the process, no I/O: the SDK's parser
   (``collimate_rl._transport.h1.parse_response``) against h11, on a lone
   exec's answer (about 1 KB of JSON) and a pack's (about 1 MB). h11 is
   driven as a client does for each request: a connection state machine,
   the request sent, the answer received.
2. **One request end to end** against the local backend (``GET
   /v1/health``, keep-alive), CPU of this process per request: the lean
   transport called directly (what the SDK does), the same transport mounted
   on an ``httpx.Client``, and httpx's own ``HTTPTransport`` (h11 under
   httpcore) called directly.

The parser earns its code when (1) shows it several times faster than h11
and (2) shows that difference as a real share of a request.

    python benchmarks/bench_http_parse.py [--requests 2000]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import h11
import httpx
from _results import add_out_option, write_results

from collimate_rl._transport.h1 import parse_response
from collimate_rl._transport.h1_sync import H1Transport
from collimate_rl.local_backend import LocalCollimateBackend

REQUEST = httpx.Request("POST", "http://127.0.0.1:8080/v1/exec", content=b"{}")


def answer(body: bytes) -> bytes:
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\nserver: collimate-rl\r\n\r\n" % len(body)
    )
    return head + body


def lone_body() -> bytes:
    return json.dumps(
        {
            "stdout": "x" * 600,
            "stderr": "",
            "exit_code": 0,
            "fork_time_ms": 0.4,
            "exec_time_ms": 3.1,
            "total_time_ms": 3.9,
            "seed": "ab" * 32,
            "seed_ack": "verified",
            "truncated": False,
        }
    ).encode()


def ours(raw: bytes) -> None:
    parser = parse_response(REQUEST)
    need = next(parser)
    at = 0
    while True:
        kind, arg = need
        if kind == "until":
            assert isinstance(arg, bytes)
            end = raw.index(arg, at) + len(arg)
        elif kind == "exactly":
            assert isinstance(arg, int)
            end = at + arg
        else:
            end = len(raw)
        data, at = raw[at:end], end
        try:
            need = parser.send(data)
        except StopIteration:
            return


def with_h11(raw: bytes) -> None:
    conn = h11.Connection(h11.CLIENT)
    conn.send(
        h11.Request(
            method="POST", target="/v1/exec", headers=[("host", "x"), ("content-length", "2")]
        )
    )
    conn.send(h11.Data(data=b"{}"))
    conn.send(h11.EndOfMessage())
    conn.receive_data(raw)
    parts = []
    while True:
        event = conn.next_event()
        if isinstance(event, h11.Data):
            parts.append(event.data)
        elif isinstance(event, h11.EndOfMessage):
            break
    b"".join(parts)


def per_call_us(fn: Callable[[], object], n: int) -> float:
    fn()
    t0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t0) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2000)
    add_out_option(ap)
    args = ap.parse_args()
    parse_us: dict[str, dict[str, float]] = {}
    request_cpu_us: dict[str, float] = {}

    print("1. parsing one answer (CPU per answer, us)")
    print(f"   {'answer':<10}{'ours':>10}{'h11':>10}{'h11/ours':>10}")
    for name, raw, n in (
        ("1 KB", answer(lone_body()), 5000),
        ("1 MB", answer(b"y" * (1 << 20)), 300),
    ):
        a = per_call_us(lambda raw=raw: ours(raw), n)
        b = per_call_us(lambda raw=raw: with_h11(raw), n)
        parse_us[name] = {"ours": a, "h11": b}
        print(f"   {name:<10}{a:>10.1f}{b:>10.1f}{b / a:>9.1f}x")

    print("2. one request to the local backend (GET /v1/health; CPU of this process, us)")
    with LocalCollimateBackend() as backend:
        url = backend.base_url
        request = httpx.Request("GET", url + "/v1/health")
        lean = H1Transport(url)
        mounted = httpx.Client(transport=H1Transport(url))
        theirs = httpx.HTTPTransport()

        def direct(t: httpx.BaseTransport) -> Callable[[], None]:
            def call() -> None:
                response = t.handle_request(request)
                response.read()
                response.close()

            return call

        rows = [
            ("lean transport, called directly (the SDK)", direct(lean)),
            ("lean transport, mounted on httpx.Client", lambda: mounted.send(request).read()),
            ("httpx.HTTPTransport (httpcore + h11), directly", direct(theirs)),
        ]
        results = {name: [] for name, _ in rows}
        for _ in range(3):  # rounds interleaved: the machine is shared
            for name, fn in rows:
                results[name].append(per_call_us(fn, args.requests // 3))
        base = min(results[rows[0][0]])
        for name, values in results.items():
            best = min(values)
            request_cpu_us[name] = best
            print(f"   {name:<50}{best:>8.0f} us  {best / base:>5.2f}x")
        lean.close()
        mounted.close()
        theirs.close()
    write_results(__file__, args, {"parse_us": parse_us, "request_cpu_us": request_cpu_us}, [])


if __name__ == "__main__":
    main()
