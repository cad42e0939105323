#!/usr/bin/env python3
"""HTTP front benchmark: shellctl vs nginx on loopback, measured with wrk.

Runs `shellctl serve` (with a token) and a private non-daemon nginx serving a small static
file, then measures requests/s and p50/p99 latency for
  * shellctl GET /healthz (open route),
  * shellctl authenticated GET of an unknown route (404 not_found, through auth + route match),
  * nginx GET of a static file,
at 1, 16 and 64 connections. Prints a table and the ratio to nginx. Then the cost of the
check that refuses jobs' connections (G5: the peer socket's cgroup, asked of the kernel at
every accept): a new connection per GET /healthz (connect, request, answer, close), 2000
times on a server with the check and one without it (--cgroup-root none: no job cgroups,
no check), interleaved, p50 of each and the difference. Never asserts times.

Usage: http_bench.py [path/to/shellctl]   (default: $SHELLCTL_BIN_DIR/shellctl)
Environment: HTTP_BENCH_DURATION (seconds per run, default 5).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from bench_setup import start_nginx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))

TOKEN = "bench-token"
DURATION = int(os.environ.get("HTTP_BENCH_DURATION", "5"))
CONNECTIONS = (1, 16, 64)


def start_static_nginx(tmp):
    root = os.path.join(tmp, "www")
    os.makedirs(root)
    with open(os.path.join(root, "healthz"), "w") as f:
        f.write('{"status":"ok"}\n')
    return start_nginx(tmp, root, http_extra="default_type application/json;\n  keepalive_requests 1000000;")


def to_ms(value, unit):
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(url, conns, auth=False):
    cmd = ["wrk", f"-t{1 if conns == 1 else 2}", f"-c{conns}", f"-d{DURATION}s", "--latency"]
    if auth:
        cmd += ["-H", f"Authorization: Bearer {TOKEN}"]
    out = subprocess.run(cmd + [url], capture_output=True, text=True).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    if not rps:
        return None
    return {"rps": float(rps.group(1)),
            "p50": to_ms(*p50.groups()) if p50 else float("nan"),
            "p99": to_ms(*p99.groups()) if p99 else float("nan"),
            "non2xx": int(non2xx.group(1)) if non2xx else 0}


def main():
    shellctl = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.environ.get("SHELLCTL_BIN_DIR", os.path.join(HERE, "..", "build", "bin")), "shellctl")
    if not shutil.which("wrk"):
        print("wrk not installed: skipping")
        return 0
    os.environ["SHELLCTL_BIN_DIR"] = os.path.dirname(os.path.abspath(shellctl))
    import harness  # after SHELLCTL_BIN_DIR is set: it reads it at import
    harness.SHELLCTL = os.path.abspath(shellctl)
    harness.BIN_DIR = os.path.dirname(harness.SHELLCTL)

    tmp = tempfile.mkdtemp(prefix="http-bench-")
    srv = nginx = None
    rows = []
    try:
        srv = harness.Server(token=TOKEN)
        nginx, nport = start_static_nginx(tmp)
        targets = [
            ("shellctl GET /healthz", f"http://127.0.0.1:{srv.port}/healthz", False),
            ("shellctl auth 404", f"http://127.0.0.1:{srv.port}/v1/no/such/route", True),
            ("nginx static file", f"http://127.0.0.1:{nport}/healthz", False),
        ]
        results = {}
        for name, url, auth in targets:
            for c in CONNECTIONS:
                results[(name, c)] = wrk(url, c, auth)
        print(f"\nwrk, {DURATION}s per run, loopback, {os.cpu_count()} CPUs (shared with wrk)")
        print(f"{'target':<24}{'conns':>6}{'req/s':>12}{'p50 ms':>10}{'p99 ms':>10}"
              f"{'vs nginx':>10}")
        for name, _, _ in targets:
            for c in CONNECTIONS:
                r = results[(name, c)]
                base = results[("nginx static file", c)]
                if r is None:
                    print(f"{name:<24}{c:>6}{'failed':>12}")
                    continue
                ratio = r["rps"] / base["rps"] if base else float("nan")
                note = f"  ({r['non2xx']} non-2xx)" if r["non2xx"] and "404" not in name else ""
                print(f"{name:<24}{c:>6}{r['rps']:>12.0f}{r['p50']:>10.3f}{r['p99']:>10.3f}"
                      f"{ratio:>9.2f}x{note}")
                rows.append((name, c, r))
        new_connection_cost(harness)
    finally:
        if srv is not None:
            srv.close()
        if nginx is not None:
            nginx.terminate()
            nginx.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def new_connection_cost(harness, n=2000):
    """p50 of connect + GET /healthz + close, with and without the peer check, interleaved."""
    import socket
    checked = harness.Server(token=TOKEN)
    plain = harness.Server(token=TOKEN, args=["--cgroup-root", "none"])
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    times = {checked.port: [], plain.port: []}
    try:
        for i in range(n):
            for port in (checked.port, plain.port) if i % 2 == 0 else (plain.port, checked.port):
                t = time.perf_counter()
                with socket.create_connection(("127.0.0.1", port)) as c:
                    c.sendall(request)
                    while c.recv(4096):
                        pass
                times[port].append((time.perf_counter() - t) * 1e6)
        p50 = {port: sorted(v)[len(v) // 2] for port, v in times.items()}
        print(f"\nnew connection + GET /healthz + close, p50 of {n}, interleaved:")
        print(f"  with the check on jobs' connections (sock_diag)   {p50[checked.port]:8.1f} us")
        print(f"  without it (--cgroup-root none)                   {p50[plain.port]:8.1f} us")
        print(f"  the check costs a connection                      {p50[checked.port] - p50[plain.port]:+8.1f} us")
    finally:
        checked.close()
        plain.close()


if __name__ == "__main__":
    sys.exit(main())
