"""Result sinks: file, termination log, and ConfigMaps through a Kubernetes-like API on loopback."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mongobench_runner.sinks import (
    ConfigMapSink,
    FileSink,
    KubeApi,
    SinkError,
    parse_output,
    write_termination_log,
)

pytestmark = pytest.mark.unit

OWNER = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "name": "run-1-a",
    "uid": "1234",
    "controller": True,
}


class FakeApi:
    """Records every request; ConfigMaps that exist answer 409 to POST, like kube-apiserver."""

    def __init__(self, fail_with: int | None = None, fail_first: int = 0, port: int = 0):
        self.requests: list[tuple[str, str, str | None, dict | None]] = []
        self.store: dict[str, dict] = {}
        self.fail_with = fail_with
        self.fail_first = fail_first  # answer 503 this many times first, as a starting apiserver
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length)) if length else None
                api.requests.append(
                    (self.command, self.path, self.headers.get("Authorization"), body)
                )
                if api.fail_with:
                    return self._reply(api.fail_with, {"message": "forbidden: no RBAC"})
                if api.fail_first > 0:
                    api.fail_first -= 1
                    return self._reply(503, {"message": "not all HTTP paths installed yet"})
                name = body["metadata"]["name"] if body else None
                if self.command == "POST":
                    if name in api.store:
                        return self._reply(409, {"message": "already exists"})
                    api.store[name] = body
                    return self._reply(201, body)
                if self.command == "PUT" and self.path.endswith("/" + name):
                    api.store[name] = body
                    return self._reply(200, body)
                return self._reply(400, {"message": "unexpected"})

            do_POST = do_PUT = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api(tmp_path):
    fake = FakeApi()
    yield fake
    fake.close()


def _kube(fake, tmp_path, **kw):
    token = tmp_path / "token"
    token.write_text("tok-123\n")
    return KubeApi(base_url=fake.url, token_path=token, ca_path=None, **kw)


DOC = {"apiVersion": "mongobench.io/result/v1", "status": "Succeeded", "blob": "x" * 2500}


def test_a_small_document_is_one_labelled_owned_configmap(api, tmp_path):
    sink = ConfigMapSink("bench", "run-1-a", _kube(api, tmp_path), owner_ref=OWNER)
    assert sink.write(DOC) == "1 ConfigMap(s) bench/run-1-a-p*"
    assert len(api.requests) == 1
    method, path, auth, body = api.requests[0]
    assert (method, path, auth) == ("POST", "/api/v1/namespaces/bench/configmaps", "Bearer tok-123")
    assert body["metadata"] == {
        "name": "run-1-a-p0",
        "namespace": "bench",
        "labels": {
            "mongobench.io/result-of": "run-1-a",
            "mongobench.io/result-set": "run-1-a",
            "mongobench.io/part": "0",
            "mongobench.io/parts": "1",
        },
        "ownerReferences": [OWNER],
    }
    assert json.loads(body["data"]["result.json"]) == DOC


def test_a_large_document_is_split_into_parts_that_reassemble(api, tmp_path):
    sink = ConfigMapSink("bench", "big", _kube(api, tmp_path), part_bytes=1000)
    sink.write(DOC)
    names = [r[3]["metadata"]["name"] for r in api.requests]
    assert names == ["big-p0", "big-p1", "big-p2"]
    assert all(r[3]["metadata"]["labels"]["mongobench.io/parts"] == "3" for r in api.requests)
    assert all(len(r[3]["data"]["result.json"].encode()) <= 1000 for r in api.requests)
    text = "".join(api.store[n]["data"]["result.json"] for n in names)
    assert json.loads(text) == DOC


def test_a_retried_pod_replaces_its_own_parts(api, tmp_path):
    sink = ConfigMapSink("bench", "run-1-a", _kube(api, tmp_path))
    sink.write({**DOC, "status": "Failed"})
    sink.write(DOC)
    assert [(m, p) for m, p, _, _ in api.requests] == [
        ("POST", "/api/v1/namespaces/bench/configmaps"),
        ("POST", "/api/v1/namespaces/bench/configmaps"),
        ("PUT", "/api/v1/namespaces/bench/configmaps/run-1-a-p0"),
    ]
    assert json.loads(api.store["run-1-a-p0"]["data"]["result.json"])["status"] == "Succeeded"


def test_an_api_refusal_is_a_clear_error(tmp_path):
    fake = FakeApi(fail_with=403)
    try:
        with pytest.raises(SinkError, match="HTTP 403: forbidden: no RBAC"):
            ConfigMapSink("bench", "x", _kube(fake, tmp_path)).write(DOC)
    finally:
        fake.close()


def test_a_result_survives_an_apiserver_that_is_down_then_starting(tmp_path):
    # The port refuses connections for a second (apiserver restarting), then answers 503 twice
    # (not ready yet): the client keeps its result and writes it once the API is back.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kube = KubeApi(
        base_url=f"http://127.0.0.1:{port}",
        token_path=tmp_path / "token",
        ca_path=None,
        retry_pause_s=0.1,
    )
    (tmp_path / "token").write_text("tok\n")
    servers: list[FakeApi] = []
    later = threading.Timer(1.0, lambda: servers.append(FakeApi(fail_first=2, port=port)))
    later.start()
    try:
        assert ConfigMapSink("bench", "r", kube).write(DOC) == "1 ConfigMap(s) bench/r-p*"
        later.join()
        assert [m for m, *_ in servers[0].requests] == ["POST", "POST", "POST"]
        assert json.loads(servers[0].store["r-p0"]["data"]["result.json"]) == DOC
    finally:
        later.join()
        for server in servers:
            server.close()


def test_an_apiserver_that_stays_away_is_an_error_after_the_budget(tmp_path):
    fake = FakeApi(fail_first=1000)
    try:
        with pytest.raises(SinkError, match="HTTP 503"):
            ConfigMapSink(
                "bench", "x", _kube(fake, tmp_path, unavailable_s=0.5, retry_pause_s=0.1)
            ).write(DOC)
        assert 3 <= len(fake.requests) <= 6  # retried with backoff, then gave up
    finally:
        fake.close()


def test_a_client_result_names_its_step_as_its_set(api, tmp_path):
    # The Job's clients write `<step job>-c<index>`: the operator lists one step by this label.
    ConfigMapSink("bench", "r1-s3-run-a-c12", _kube(api, tmp_path)).write(DOC)
    labels = api.requests[0][3]["metadata"]["labels"]
    assert labels["mongobench.io/result-set"] == "r1-s3-run-a"


def test_output_specs(tmp_path, monkeypatch):
    assert isinstance(parse_output(f"file:{tmp_path}/r.json"), FileSink)
    monkeypatch.setenv("MONGOBENCH_KUBE_API", "http://127.0.0.1:1")
    monkeypatch.setenv("MONGOBENCH_SA_DIR", str(tmp_path))
    monkeypatch.setenv("MONGOBENCH_OWNER_REF", json.dumps(OWNER))
    sink = parse_output("configmap:ns1/res")
    assert isinstance(sink, ConfigMapSink)
    assert (sink.namespace, sink.name, sink.owner_ref) == ("ns1", "res", OWNER)
    assert sink.api.token_path == tmp_path / "token"
    for bad in ("configmap:nonamespace", "s3://bucket", "file:"):
        with pytest.raises(ValueError):
            parse_output(bad)
    monkeypatch.delenv("MONGOBENCH_KUBE_API")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(SinkError, match="KUBERNETES_SERVICE_HOST"):
        parse_output("configmap:ns/n")


def test_file_sink_and_termination_log(tmp_path):
    FileSink(tmp_path / "out" / "r.json").write(DOC)
    assert json.loads((tmp_path / "out" / "r.json").read_text()) == DOC
    log = tmp_path / "termination-log"
    assert write_termination_log("x", log) is False  # only when the kubelet created it
    log.touch()
    assert write_termination_log("Failed: " + "y" * 5000, log) is True
    assert log.read_text().startswith("Failed: ") and len(log.read_bytes()) <= 4000


def test_part_size_can_be_lowered_but_not_raised_past_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("MONGOBENCH_KUBE_API", "http://127.0.0.1:1")
    monkeypatch.setenv("MONGOBENCH_SA_DIR", str(tmp_path))
    monkeypatch.setenv("MONGOBENCH_RESULT_PART_BYTES", "4096")
    assert parse_output("configmap:ns/n").part_bytes == 4096
    for bad in ("12", "10000000", "lots"):
        monkeypatch.setenv("MONGOBENCH_RESULT_PART_BYTES", bad)
        with pytest.raises(ValueError, match="MONGOBENCH_RESULT_PART_BYTES"):
            parse_output("configmap:ns/n")
