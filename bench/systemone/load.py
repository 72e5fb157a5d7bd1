#!/usr/bin/env python3
"""Closed-loop load generator for POST /v1/systemone (Python 3.11 stdlib only).

    python3 bench/systemone/load.py --url http://127.0.0.1:8080 \
        --requests bench/systemone/requests-authored144.jsonl --clients 4 \
        [--key SECRET] [--pid PID] [--warmup 2] [--out result.json] [--label llama.cpp]

Each of --clients threads keeps one HTTP/1.1 connection (re-opened after an error) and takes
the next body from a shared queue until the queue is empty, so at most --clients requests are
in flight. Latency is measured per request from just before the request is sent to the end of
reading the response body. With --pid, a sampler thread reads /proc/PID/status every
--sample-ms: peak VmRSS seen while the run lasts, and VmHWM (the kernel's peak RSS since the
process started) at the end.

Prints a summary and writes (--out) a JSON with: p50/p90/p99/mean/min/max latency (seconds,
linear interpolation between order statistics), wall time, requests/s, errors, status counts,
peak RSS, and every response (index in the request file, status, latency, body) in request
order, so the answers of two servers can be compared.
"""
from __future__ import annotations

import argparse
import http.client
import json
import queue
import sys
import threading
import time
import urllib.parse
from pathlib import Path


def percentile(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def read_status_kb(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    k, v = line.split(":", 1)
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


class Sampler(threading.Thread):
    def __init__(self, pid: int, every_s: float):
        super().__init__(daemon=True)
        self.pid, self.every_s = pid, every_s
        self.stop = threading.Event()
        self.peak_rss_kb = 0
        self.start_kb = read_status_kb(pid)
        self.n = 0

    def run(self) -> None:
        while not self.stop.is_set():
            st = read_status_kb(self.pid)
            if "VmRSS" in st:
                self.peak_rss_kb = max(self.peak_rss_kb, st["VmRSS"])
                self.n += 1
            self.stop.wait(self.every_s)


class Conn:
    def __init__(self, url: str, key: str | None, timeout: float):
        u = urllib.parse.urlsplit(url)
        self.https = u.scheme == "https"
        self.host, self.port = u.hostname, u.port or (443 if self.https else 80)
        self.prefix = u.path.rstrip("/")
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Connection": "keep-alive"}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        self.c = None

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        for attempt in (0, 1):
            if self.c is None:
                cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
                self.c = cls(self.host, self.port, timeout=self.timeout)
            try:
                self.c.request("POST", self.prefix + path, body=body, headers=self.headers)
                r = self.c.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.close()
                return r.status, data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # a kept-alive connection the server had closed: retry once on a new one
                self.close()
                if attempt:
                    raise
        raise AssertionError

    def close(self) -> None:
        if self.c is not None:
            self.c.close()
            self.c = None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="base URL, e.g. http://127.0.0.1:8080")
    ap.add_argument("--path", default="/v1/systemone")
    ap.add_argument("--key", help="bearer key (Authorization: Bearer KEY)")
    ap.add_argument("--requests", required=True, type=Path, help="JSONL, one request body a line")
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--pid", type=int, help="server PID to sample for RSS")
    ap.add_argument("--sample-ms", type=float, default=50)
    ap.add_argument("--warmup", type=int, default=0, help="send the first N bodies once, untimed, before the run")
    ap.add_argument("--limit", type=int, help="only the first N bodies")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--label", default="")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--no-responses", action="store_true", help="leave the response bodies out of --out")
    args = ap.parse_args()

    bodies = [line.encode() for line in args.requests.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.limit:
        bodies = bodies[: args.limit]

    if args.warmup:
        w = Conn(args.url, args.key, args.timeout)
        for b in bodies[: args.warmup]:
            w.post(args.path, b)
        w.close()

    q: queue.Queue[int] = queue.Queue()
    for i in range(len(bodies)):
        q.put(i)
    results: list[dict | None] = [None] * len(bodies)

    def worker() -> None:
        conn = Conn(args.url, args.key, args.timeout)
        while True:
            try:
                i = q.get_nowait()
            except queue.Empty:
                break
            t0 = time.perf_counter()
            try:
                status, data = conn.post(args.path, bodies[i])
                err = None
            except Exception as e:  # noqa: BLE001 - record every failure
                status, data, err = 0, b"", f"{type(e).__name__}: {e}"
                conn.close()
            t1 = time.perf_counter()
            try:
                body = json.loads(data) if data else None
            except ValueError:
                body = data.decode(errors="replace")
            results[i] = {"index": i, "status": status, "latency_s": t1 - t0, "start_s": t0, "body": body,
                          **({"error": err} if err else {})}
        conn.close()

    sampler = Sampler(args.pid, args.sample_ms / 1000) if args.pid else None
    if sampler:
        sampler.start()
    threads = [threading.Thread(target=worker) for _ in range(max(1, args.clients))]
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
        end = read_status_kb(args.pid)
        mem = {"pid": args.pid, "peak_rss_kb_sampled": sampler.peak_rss_kb, "vmhwm_kb_end": end.get("VmHWM"),
               "vmrss_kb_end": end.get("VmRSS"), "vmrss_kb_start": sampler.start_kb.get("VmRSS"),
               "vmhwm_kb_start": sampler.start_kb.get("VmHWM"), "samples": sampler.n}

    lat = [r["latency_s"] for r in results if r and r["status"] == 200]
    statuses: dict[str, int] = {}
    for r in results:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    errors = sum(1 for r in results if r["status"] != 200)
    in_tok = sum((r["body"] or {}).get("usage", {}).get("input_tokens", 0) for r in results
                 if r["status"] == 200 and isinstance(r["body"], dict))
    summary = {
        "label": args.label, "url": args.url, "path": args.path, "requests_file": str(args.requests),
        "n_requests": len(bodies), "clients": args.clients, "warmup": args.warmup,
        "wall_s": wall, "requests_per_s": len(bodies) / wall if wall else None,
        "ok": len(lat), "errors": errors, "statuses": statuses,
        "latency_s": {"p50": percentile(lat, 50), "p90": percentile(lat, 90), "p99": percentile(lat, 99),
                      "mean": sum(lat) / len(lat) if lat else None,
                      "min": min(lat) if lat else None, "max": max(lat) if lat else None},
        "usage_input_tokens_total": in_tok,
        "input_tokens_per_s": in_tok / wall if wall else None,
        "memory": mem,
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        for r in results:
            r["start_s"] -= t_start
            if args.no_responses:
                r.pop("body", None)
        args.out.write_text(json.dumps({**summary, "responses": results}, ensure_ascii=False))
        print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
