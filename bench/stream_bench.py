#!/usr/bin/env python3
"""Live output stream latency (docs/api.md "Live output stream"; figures printed, nothing asserted).

A stdio job writes a line holding the wall time every 20 ms. Three readers follow it at
once, side by side in one run:
  stream     GET /v1/jobs/{id}/stream (server-sent events)
  long-poll  POST /v1/jobs/{id}/wait in a loop (timeout 10 s, idle flush 5 ms)
  tail -F    coreutils tail following output.log (inotify; no server at all: the floor)
Latency = when a reader sees a line - when the job wrote it (one machine, one clock).

Usage: stream_bench.py [path/to/shellctl] [--quick]
"""
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time

from bench_setup import QUICK, pct  # noqa: E402  (argv, the harness on sys.path)
from harness import Server  # noqa: E402

LINES = 100 if QUICK else 400
TOKEN = "bench"
WRITER = (f"python3 -c 'import time,sys\n"
          f"for i in range({LINES}):\n"
          f"    sys.stdout.write(\"%d %d\\n\" % (i, time.time_ns())); sys.stdout.flush(); time.sleep(0.02)'")


def lines_seen(text_chunks, seen):
    """Appends (index, latency ms) for each complete line in the text, keeping the rest."""
    now = time.time_ns()
    buf = seen.setdefault("buf", "") + text_chunks
    *complete, seen["buf"] = buf.split("\n")
    for line in complete:
        i, t = line.split()
        seen.setdefault("lat", []).append((now - int(t)) / 1e6)


def follow_stream(port, job, out):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", f"/v1/jobs/{job}/stream", headers={"Authorization": f"Bearer {TOKEN}"})
    resp = conn.getresponse()
    event = None
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: ") and event == "output":
            lines_seen(json.loads(line[6:])["output"], out)
        elif line.startswith("data: ") and event == "exit":
            break
    conn.close()


def follow_wait(port, job, out):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    offset = 0
    while True:
        body = json.dumps({"offset": offset, "timeout": 10, "idle_flush_seconds": 0.005})
        conn.request("POST", f"/v1/jobs/{job}/wait", body=body,
                     headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        r = json.loads(conn.getresponse().read())
        if r["output"]:
            lines_seen(r["output"], out)
        offset = r["offset"]
        if r["done"] and not r["truncated"]:
            break
    conn.close()


def follow_tail(path, out, stop):
    while not os.path.exists(path):
        time.sleep(0.001)
    p = subprocess.Popen(["tail", "-F", "-n", "+1", "-s", "0.01", path], stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        lines_seen(line, out)
        if len(out.get("lat", [])) >= LINES:
            break
    p.kill()
    p.wait()


def main():
    with Server(token=TOKEN) as s:
        job = s.run(WRITER, mode="stdio", timeout=0.1)["job_id"]
        log = os.path.join(s.job_dir(job), "output.log")
        results = {"stream": {}, "long-poll": {}, "tail -F": {}}
        threads = [threading.Thread(target=follow_stream, args=(s.port, job, results["stream"])),
                   threading.Thread(target=follow_wait, args=(s.port, job, results["long-poll"])),
                   threading.Thread(target=follow_tail, args=(log, results["tail -F"], None))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    # The first lines were written before some readers attached: they measure catching up.
    skip = 5
    figures = {}
    for name, r in results.items():
        lat = r.get("lat", [])[skip:]
        figures[name] = (pct(lat, 50), pct(lat, 95), len(lat))
    print(f"stream latency, {LINES} lines 20 ms apart, three readers side by side:")
    for name, (p50, p95, n) in figures.items():
        print(f"  {name:<10} p50 {p50:6.2f} ms   p95 {p95:6.2f} ms   ({n} lines)")
    base = figures["tail -F"][0]
    print(f"  stream p50 / tail -F p50 = {figures['stream'][0] / base:.2f}x; "
          f"long-poll p50 / tail -F p50 = {figures['long-poll'][0] / base:.2f}x; "
          f"goal: stream p50 <= 2 ms ({'met' if figures['stream'][0] <= 2 else 'not met'})")


if __name__ == "__main__":
    main()
