"""Run by the published ``collimate-rl==0.8.0``'s interpreter (its own venv):
its client's connect-from-outside surface against our local backend.

    python peer_tunnel.py BASE_URL PRO_KEY DEMO_KEY WEB_PORT

Its ``Session.port_forward`` and ``Sandbox.port_forward`` reach the HTTP
server of our ``svc-web`` app template through the tunnel, unchanged; its
``connect_url`` gets the answer it expects; its refusals (an unexposed port,
a demo key) are the errors it raises. Prints one ``ok  <check>`` per check,
then ``all checks passed``; any failure exits non-zero.
"""

import json
import sys
import urllib.request

import collimate_rl
from collimate_rl import PortForward, Sandbox
from collimate_rl.gateway import GatewayClient, GatewayError
from collimate_rl.template import Session

base_url, pro_key, demo_key, web_port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
assert collimate_rl.__version__ == "0.8.0", collimate_rl.__version__


def ok(name):
    print("ok  " + name, flush=True)


def get(url):
    with urllib.request.urlopen(url, timeout=60) as answer:
        return answer.read().decode()


pro = GatewayClient(api_key=pro_key, base_url=base_url)

with Session(pro, "svc-web") as sess:
    minted = pro.connect_url(sess.id, web_port, ttl_seconds=120)
    assert minted["url"].startswith("ws://") and "/connect?port=" in minted["url"], minted
    assert minted["expires_at"], minted
    ok("GatewayClient.connect_url answers {url, expires_at}")

    url = sess.connect_url(web_port)
    assert url.startswith("ws://"), url
    ok("Session.connect_url answers the url")

    with sess.port_forward(web_port) as fwd:
        assert isinstance(fwd, PortForward)
        for path in ("/health", "/from-peer-080"):
            body = get(fwd.url + path)
            assert body == "hello from " + path, body
    ok("Session.port_forward carries HTTP to the guest port")

    try:
        pro.connect_url(sess.id, web_port + 1)
    except GatewayError as exc:
        assert exc.status == 409 and exc.code == "port_not_exposed", (exc.status, exc.code)
    else:
        raise AssertionError("an unexposed port was minted")
    ok("an unexposed port is 409 port_not_exposed")

sb = Sandbox("svc-web", client=pro)
try:
    with sb.port_forward(web_port) as fwd:
        assert get(fwd.url + "/sandbox") == "hello from /sandbox"
finally:
    sb.close()
ok("Sandbox.port_forward carries HTTP to the guest port")

demo = GatewayClient(api_key=demo_key, base_url=base_url)
with Session(demo, "py") as sess:
    try:
        sess.connect_url(web_port)
    except GatewayError as exc:
        assert exc.status == 403 and "pro" in str(exc).lower(), (exc.status, str(exc))
        print(json.dumps({"demo_error_code": exc.code}))
    else:
        raise AssertionError("a demo key minted a connect URL")
ok("a demo key gets the tier error")

print("all checks passed")
