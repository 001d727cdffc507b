"""Protocol tier: the operator's API client over HTTP to a scripted apiserver on loopback.

What a user would notice: a stalled apiserver fails a request instead of hanging a handler; the
apiserver's refusal reaches conditions with its own message; a rotated service-account token
and an expiring exec-plugin credential (EKS) are picked up without a restart. The real
apiserver (TLS, client certificates, service-account tokens) is in
e2e/local/tests/test_operator_credentials.py.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import urllib3

from mongobench.k8s import client as kube
from mongobench.k8s.api import KubeClient
from mongobench.k8s.conditions import NORMAL, WARNING
from mongobench.k8s.credentials import Credentials, ExecPlugin, refreshed

pytestmark = pytest.mark.protocol

Answer = Callable[[str, str, dict[str, str]], tuple[int, Any] | None]


@dataclass
class StubApiserver:
    """Answers each request with answer(method, path, headers): (status, JSON body), or None to
    never answer (until stopped). Records every request."""

    answer: Answer = lambda method, path, headers: (200, {"kind": "Secret"})
    seen: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    url: str = ""


@pytest.fixture
def apiserver() -> Iterator[StubApiserver]:
    stub = StubApiserver()

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k: v for k, v in self.headers.items()}
            stub.seen.append((self.command, self.path, headers, body))
            answer = stub.answer(self.command, self.path, headers)
            if answer is None:
                stub.stop.wait(10)
                return
            status, data = answer
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_PATCH = do_DELETE = do_POST = _any

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield stub
    finally:
        stub.stop.set()
        server.shutdown()
        server.server_close()


def test_apply_is_a_server_side_apply_by_the_operator(apiserver: StubApiserver) -> None:
    api = kube.ApiClient(Credentials(server=apiserver.url, token="t0"))
    obj = {"kind": "Secret", "metadata": {"namespace": "ns", "name": "s"}}
    assert KubeClient(api).apply(obj) == {"kind": "Secret"}
    method, path, headers, body = apiserver.seen[0]
    assert (method, path) == (
        "PATCH",
        "/api/v1/namespaces/ns/secrets/s?fieldManager=mongobench&force=true",
    )
    assert headers["Content-Type"] == "application/apply-patch+yaml"
    assert headers["User-Agent"] == kube.USER_AGENT
    assert headers["Authorization"] == "Bearer t0"
    assert json.loads(body) == obj


def test_refusals_carry_the_apiservers_message(apiserver: StubApiserver) -> None:
    status = {"kind": "Status", "message": 'Service "my.cluster" is invalid: metadata.name'}
    apiserver.answer = lambda m, p, h: (404, {}) if m in ("GET", "DELETE") else (422, status)
    api = kube.ApiClient(Credentials(server=apiserver.url))
    with pytest.raises(kube.ApiError) as refused:
        api.request("POST", "/api/v1/namespaces/ns/services", body={})
    assert refused.value.status == 422
    assert refused.value.message == status["message"]
    assert status["message"] in str(refused.value)
    assert KubeClient(api).get("Service", "ns", "gone") is None
    assert KubeClient(api).delete("Service", "ns", "gone") is False


def test_a_stalled_apiserver_fails_the_request_instead_of_hanging_it(
    apiserver: StubApiserver,
) -> None:
    apiserver.answer = lambda m, p, h: None
    api = kube.ApiClient(Credentials(server=apiserver.url), timeout=(1.0, 0.2))
    with pytest.raises(urllib3.exceptions.HTTPError):
        api.request("GET", "/api/v1/namespaces/ns/secrets/s")
    assert kube.ApiClient(Credentials(server="http://x")).timeout.read_timeout == 30.0


def test_a_rotated_token_file_is_read_again_on_401(
    apiserver: StubApiserver, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("old\n")
    apiserver.answer = lambda m, p, h: (
        (200, {}) if h["Authorization"] == "Bearer new" else (401, {})
    )
    api = kube.ApiClient(Credentials(server=apiserver.url, token_file=token))
    with pytest.raises(kube.ApiError) as denied:
        api.request("GET", "/api")  # 401, read again: still old
    assert denied.value.status == 401
    token.write_text("new\n")  # the kubelet rotated it
    assert api.request("GET", "/api") == {}
    assert [h["Authorization"] for _, _, h, _ in apiserver.seen] == ["Bearer old"] * 3 + [
        "Bearer new"
    ]


def exec_plugin(tmp_path: Path, lifetime_seconds: int) -> ExecPlugin:
    """A plugin that hands out token-1, token-2, ... each valid `lifetime_seconds`, and
    records what kubectl's protocol gives it (KUBERNETES_EXEC_INFO, env from the kubeconfig)."""
    script = tmp_path / "plugin.py"
    script.write_text(
        "import datetime, json, os, pathlib\n"
        f"count = pathlib.Path({str(tmp_path / 'count')!r})\n"
        "n = int(count.read_text()) + 1 if count.exists() else 1\n"
        "count.write_text(str(n))\n"
        f"pathlib.Path({str(tmp_path / 'info')!r}).write_text(\n"
        "    os.environ['KUBERNETES_EXEC_INFO'] + '\\n' + os.environ['REGION'])\n"
        "expiry = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds="
        f"{lifetime_seconds})\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1',\n"
        "  'kind': 'ExecCredential', 'status': {'token': f'token-{n}',\n"
        "  'expirationTimestamp': expiry.strftime('%Y-%m-%dT%H:%M:%SZ')}}))\n"
    )
    return ExecPlugin(command=sys.executable, args=(str(script),), env=(("REGION", "eu-1"),))


def test_an_exec_plugin_credential_is_renewed_before_it_expires(
    apiserver: StubApiserver, tmp_path: Path
) -> None:
    # 10 s left is inside the renewal margin: every request renews it.
    api = kube.ApiClient(
        refreshed(Credentials(server=apiserver.url, exec_plugin=exec_plugin(tmp_path, 10)))
    )
    api.request("GET", "/api")
    api.request("GET", "/api")
    assert [h["Authorization"] for _, _, h, _ in apiserver.seen] == [
        "Bearer token-2",
        "Bearer token-3",
    ]
    info, region = (tmp_path / "info").read_text().split("\n")
    assert json.loads(info)["spec"] == {"interactive": False} and region == "eu-1"


def test_a_long_lived_exec_credential_is_obtained_once_and_again_on_401(
    apiserver: StubApiserver, tmp_path: Path
) -> None:
    creds = refreshed(Credentials(server=apiserver.url, exec_plugin=exec_plugin(tmp_path, 900)))
    api = kube.ApiClient(creds)
    for _ in range(3):
        api.request("GET", "/api")
    apiserver.answer = lambda m, p, h: (
        (200, {}) if h["Authorization"] == "Bearer token-2" else (401, {})
    )
    api.request("GET", "/api")  # revoked: the plugin runs again
    assert [h["Authorization"] for _, _, h, _ in apiserver.seen] == ["Bearer token-1"] * 4 + [
        "Bearer token-2"
    ]
    assert api.renewed_credentials().token == "token-3"  # kopf's login renews too


def test_basic_auth_is_sent_and_never_passed_off_as_a_token(apiserver: StubApiserver) -> None:
    api = kube.ApiClient(Credentials(server=apiserver.url, username="u", password="p"))
    api.request("GET", "/api")
    assert apiserver.seen[0][2]["Authorization"] == "Basic dTpw"
    renewed = api.renewed_credentials()
    assert (renewed.token, renewed.username, renewed.password) == (None, "u", "p")


# --- Events: the operator's own, with its own client ------------------------------------------

RUN = {
    "apiVersion": "mongobench.io/v1alpha1",
    "kind": "BenchmarkRun",
    "metadata": {"namespace": "ns", "name": "r", "uid": "u-1"},
}


def test_an_event_names_its_object_and_the_operator_and_a_repeat_is_counted(
    apiserver: StubApiserver,
) -> None:
    """kubectl describe finds an Event by its object's kind, name and uid; the same Event again
    raises its count instead of adding another."""
    apiserver.answer = lambda m, p, h: (201, {"metadata": {"name": "r.1"}})
    events = KubeClient(kube.ApiClient(Credentials(server=apiserver.url)))
    events.event(RUN, NORMAL, "StepStarted", "load: Job r-load")
    events.event(RUN, NORMAL, "StepStarted", "load: Job r-load")
    events.event(RUN, WARNING, "StepFailed", "load: no client reported a result")
    (m1, p1, _, b1), (m2, p2, h2, b2), (m3, _, _, b3) = apiserver.seen
    assert (m1, p1) == ("POST", "/api/v1/namespaces/ns/events")
    posted = json.loads(b1)
    assert posted["involvedObject"] == {
        "apiVersion": "mongobench.io/v1alpha1",
        "kind": "BenchmarkRun",
        "namespace": "ns",
        "name": "r",
        "uid": "u-1",
    }
    assert (posted["type"], posted["reason"], posted["message"]) == (
        "Normal",
        "StepStarted",
        "load: Job r-load",
    )
    assert posted["reportingComponent"] == posted["source"]["component"] == "mongobench-operator"
    assert posted["count"] == 1 and posted["firstTimestamp"] == posted["lastTimestamp"]
    assert posted["metadata"]["name"].startswith("r.")
    assert (m2, p2) == ("PATCH", "/api/v1/namespaces/ns/events/r.1")
    assert h2["Content-Type"] == "application/merge-patch+json"
    assert json.loads(b2)["count"] == 2
    assert (m3, json.loads(b3)["reason"]) == ("POST", "StepFailed")  # another Event: a new one


def test_an_event_that_cannot_be_posted_fails_nothing(apiserver: StubApiserver) -> None:
    """An Event is news, not state: a refusal is logged and the work that caused it goes on;
    an expired one (404 on its count) is posted anew."""
    apiserver.answer = lambda m, p, h: (403, {"message": "forbidden"})
    events = KubeClient(kube.ApiClient(Credentials(server=apiserver.url)))
    events.event(RUN, NORMAL, "Started", "6 steps")  # no exception
    apiserver.answer = lambda m, p, h: (201, {"metadata": {"name": "r.1"}})
    events.event(RUN, NORMAL, "Started", "6 steps")
    apiserver.answer = lambda m, p, h: (
        (404, {}) if m == "PATCH" else (201, {"metadata": {"name": "r.2"}})
    )
    events.event(RUN, NORMAL, "Started", "6 steps")
    assert [m for m, *_ in apiserver.seen] == ["POST", "POST", "PATCH", "POST"]
