"""Shared by bench/systemone/vs-llamacpp and bench/systemone/debias-shuffles (Python 3.11 stdlib):
start and stop a server (Readout or llama-server), run a closed-loop load on POST /v1/systemone
with load.py's connection, RSS sampler and percentile, and describe the machine and the files.

A load run: `clients` threads each keep one HTTP/1.1 connection and take the next body from a
shared queue until it is empty (at most `clients` requests in flight). Latency is measured per
request from just before it is sent to the end of reading its body. RSS: load.py's Sampler reads
/proc/PID/status every 50 ms while the run lasts (peak VmRSS seen), and VmHWM (the kernel's peak
RSS of the process since it started) is read at the end.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import load  # noqa: E402  (load.py: Conn, Sampler, percentile, read_status_kb)

ROOT = HERE.parents[1]
RESULTS = ROOT / "bench" / "results" / "systemone"
MEASURED = "MEASURED"


def sh(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return (r.stdout + r.stderr).strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"({type(e).__name__}: {e})"


def machine() -> dict:
    info = {}
    for line in sh(["lscpu"]).splitlines():
        k, _, v = line.partition(":")
        info[k.strip()] = v.strip()
    flags = info.get("Flags", "").split()
    mem_kb = None
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    return {
        "cpu_model_name": info.get("Model name"),
        "cpus": int(info["CPU(s)"]) if info.get("CPU(s)", "").isdigit() else info.get("CPU(s)"),
        "threads_per_core": info.get("Thread(s) per core"),
        "cores_per_socket": info.get("Core(s) per socket"),
        "sockets": info.get("Socket(s)"),
        "nproc": os.cpu_count(),
        "avx512_flags": sorted(f for f in flags if f.startswith("avx512")),
        "amx_flags": sorted(f for f in flags if f.startswith("amx")),
        "avx_vnni": "avx_vnni" in flags,
        "mem_total_gib": round(mem_kb / 2**20, 1) if mem_kb else None,
        "kernel": sh(["uname", "-r"]),
        "python": sys.version.split()[0],
    }


def load_average() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


_SHA_CACHE = Path("/tmp/sysone-bench-sha256-cache.json")


def sha256(path: str | Path) -> str:
    """sha256 of a file, cached (outside the clone) by path, size and mtime."""
    p = Path(path).resolve()
    st = p.stat()
    key = f"{p}|{st.st_size}|{st.st_mtime_ns}"
    try:
        cache = json.loads(_SHA_CACHE.read_text())
    except (OSError, ValueError):
        cache = {}
    if key not in cache:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
        cache[key] = h.hexdigest()
        _SHA_CACHE.write_text(json.dumps(cache))
    return cache[key]


def file_info(path: str | Path) -> dict:
    p = Path(path)
    return {"path": str(p), "bytes": p.stat().st_size, "sha256": sha256(p)}


def git_commit() -> str:
    c = sh(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    dirty = sh(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])
    return c + ("+dirty" if dirty else "")


def status_kb(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:", "RssAnon:", "RssFile:", "RssShmem:")):
                    k, v = line.split(":", 1)
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_json(url: str, method: str, path: str, body=None, timeout: float = 30):
    u = url.split("://", 1)[1]
    host, _, port = u.partition(":")
    c = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        c.request(method, path, body=None if body is None else json.dumps(body).encode(),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        try:
            return r.status, json.loads(data)
        except ValueError:
            return r.status, data.decode(errors="replace")
    finally:
        c.close()


class Server:
    """A server process started from `cmd`, its output in `log`; ready once `url` answers
    GET /health with 200 (Readout's URL is read from its stderr line `listening on http://…`)."""

    def __init__(self, name: str, cmd: list[str], log: Path, port: int | None = None, env: dict | None = None):
        self.name, self.cmd, self.log = name, cmd, log
        self.url = f"http://127.0.0.1:{port}" if port else None
        self.t_start = time.time()
        self.logf = open(log, "w")
        self.p = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
        self.pid = self.p.pid
        self.ready_s = None

    def wait_ready(self, timeout: float = 900) -> None:
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.p.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.p.returncode}; see {self.log}")
            if self.url is None:
                m = re.search(r"listening on (http://\S+)", self.log.read_text(errors="replace"))
                if m:
                    self.url = m.group(1).rstrip("/")
            if self.url:
                try:
                    st, _ = http_json(self.url, "GET", "/health", timeout=5)
                    if st == 200:
                        self.ready_s = time.time() - self.t_start
                        return
                except OSError:
                    pass
            time.sleep(0.5)
        raise RuntimeError(f"{self.name} not ready after {timeout}s; see {self.log}")

    def stop(self) -> int | None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.logf.close()
        return self.p.returncode


def post_once(url: str, body: dict, timeout: float = 3600):
    c = load.Conn(url, None, timeout)
    try:
        t0 = time.perf_counter()
        st, data = c.post("/v1/systemone", json.dumps(body, ensure_ascii=False).encode())
        return st, json.loads(data) if data else None, time.perf_counter() - t0
    finally:
        c.close()


def run_load(url: str, bodies: list[dict], clients: int, pid: int | None, label: str = "",
             timeout: float = 3600, sample_ms: float = 50) -> tuple[dict, list[dict]]:
    """Closed loop: `clients` threads, each with one load.Conn, take the next body until none are
    left. Returns (summary, results in body order)."""
    raw = [json.dumps(b, ensure_ascii=False).encode() for b in bodies]
    q: queue.Queue[int] = queue.Queue()
    for i in range(len(raw)):
        q.put(i)
    results: list[dict | None] = [None] * len(raw)

    def worker() -> None:
        conn = load.Conn(url, None, timeout)
        while True:
            try:
                i = q.get_nowait()
            except queue.Empty:
                break
            t0 = time.perf_counter()
            try:
                status, data = conn.post("/v1/systemone", raw[i])
                err = None
            except Exception as e:  # noqa: BLE001 - record every failure
                status, data, err = 0, b"", f"{type(e).__name__}: {e}"
                conn.close()
            t1 = time.perf_counter()
            try:
                body = json.loads(data) if data else None
            except ValueError:
                body = data.decode(errors="replace")
            results[i] = {"index": i, "status": status, "latency_s": t1 - t0, "t0": t0, "t1": t1, "body": body,
                          **({"error": err} if err else {})}
        conn.close()

    sampler = load.Sampler(pid, sample_ms / 1000) if pid else None
    hwm_start = status_kb(pid).get("VmHWM") if pid else None
    if sampler:
        sampler.start()
    la0 = load_average()
    threads = [threading.Thread(target=worker) for _ in range(max(1, clients))]
    t_start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t_start
    mem = {}
    if sampler:
        sampler.stop.set()
        sampler.join()
        end = status_kb(pid)
        mem = {"peak_vmrss_kb_sampled_during_run": sampler.peak_rss_kb, "vmhwm_kb_at_start": hwm_start,
               "vmhwm_kb_at_end": end.get("VmHWM"), "vmrss_kb_at_end": end.get("VmRSS"),
               "rss_anon_kb_at_end": end.get("RssAnon"), "rss_file_kb_at_end": end.get("RssFile"),
               "samples": sampler.n}
    ok = [r for r in results if r["status"] == 200 and isinstance(r["body"], dict) and "answers" in r["body"]]
    lat = [r["latency_s"] for r in ok]
    statuses: dict[str, int] = {}
    for r in results:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    in_tok = sum(r["body"].get("usage", {}).get("input_tokens", 0) for r in ok)
    last_end = max(r["t1"] for r in results)
    summary = {
        "label": label, "figures_are": MEASURED,
        "n_requests": len(raw), "clients": clients,
        "wall_s": round(wall, 4), "requests_per_s": round(len(raw) / wall, 5) if wall else None,
        "ok": len(ok), "errors": len(raw) - len(ok), "statuses": statuses,
        "latency_s": {k: (round(v, 4) if v is not None else None) for k, v in {
            "p50": load.percentile(lat, 50), "p90": load.percentile(lat, 90), "p99": load.percentile(lat, 99),
            "mean": sum(lat) / len(lat) if lat else None,
            "min": min(lat) if lat else None, "max": max(lat) if lat else None}.items()},
        "percentile_method": "linear interpolation between order statistics (load.percentile)",
        "usage_input_tokens_total": in_tok,
        "input_tokens_per_s": round(in_tok / wall, 2) if wall else None,
        "memory": mem,
        "load_average_before": la0, "load_average_after": load_average(),
    }
    for r in results:
        r["start_s"] = round(r.pop("t0") - t_start, 4)
        r.pop("t1")
        r["latency_s"] = round(r["latency_s"], 4)
    summary["_last_end_perf"] = last_end
    return summary, results


def rss_after(pid: int, last_end_perf: float, wait_s: float = 5.0) -> dict:
    """VmRSS `wait_s` seconds after the end of the last request (perf_counter time)."""
    delay = last_end_perf + wait_s - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
    st = status_kb(pid)
    return {"figures_are": MEASURED, "seconds_after_last_request": round(time.perf_counter() - last_end_perf, 2),
            "vmrss_kb": st.get("VmRSS"), "vmhwm_kb": st.get("VmHWM"), "rss_anon_kb": st.get("RssAnon"),
            "rss_file_kb": st.get("RssFile")}


def wait_for_file(path: str, every_s: float = 30) -> float:
    t0 = time.time()
    while not os.path.exists(path):
        print(f"waiting for {path} ({time.strftime('%H:%M:%S', time.gmtime())} UTC)", file=sys.stderr, flush=True)
        time.sleep(every_s)
    return time.time() - t0


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S', time.gmtime())}] {msg}", file=sys.stderr, flush=True)
