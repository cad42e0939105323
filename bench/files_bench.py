#!/usr/bin/env python3
"""File API benchmark (docs/api.md "Files"), side by side in one run:

  * download MB/s of one large file (1 GiB; 256 MiB with --quick): `curl` from
    `GET /v1/files/content` next to `curl` from nginx serving the same file (sendfile on);
  * upload MB/s: `curl -T` to `PUT /v1/files/content` (written to a temporary file, fsynced,
    renamed) next to `curl -T` to nginx's WebDAV PUT (a temporary file, renamed; no fsync),
    and the floor without a network: `cat file > copy` on the same disk, and with an fsync;
  * one 6 MiB file moved up and down with the file API next to the way the current client
    moves it today: base64 inside a job's `script`, and base64 read back through
    PTY paging between sentinel lines, 16 KiB windows;
  * a small file's round trip (GET /v1/files/stat then GET /v1/files/content of 1 KiB on
    one keep-alive connection): p50 and p95, and with `--compare DIR` the same against
    another build's shellctl (DIR holds it and its helpers), interleaved, and the
    difference (what the confined file worker adds, for instance).

Usage: python3 bench/files_bench.py [path/to/shellctl] [--quick] [--compare DIR]. Prints
figures; never asserts times (machines differ: compare the ratios)."""
import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

from bench_setup import QUICK, start_nginx
from harness import Server

TOKEN = "bench-token"
RUNS = 3


def timed(cmd, **kw):
    t = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.monotonic() - t


def clock(fn):
    t = time.monotonic()
    fn()
    return time.monotonic() - t


def best(fn):
    """The fastest of RUNS runs of fn, in seconds."""
    return min(clock(fn) for _ in range(RUNS))


def make_file(path, size):
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(size // len(block)):
            f.write(block)
    os.sync()


def job_upload(server, path, data):
    """The current client's upload: the file base64-encoded inside the script."""
    b64 = base64.b64encode(data).decode()
    script = f"set -eu\nmkdir -p \"$(dirname -- '{path}')\"\nprintf %s '{b64}' | base64 -d > '{path}'\n"
    res, _ = server.run_to_completion(script, timeout=60, output_limit=16384)
    server.request("DELETE", f"/v1/jobs/{res['job_id']}?force=true")
    assert res["exit_code"] == 0, res


def job_download(server, path):
    """The current client's download: base64 between sentinels, paged in 16 KiB windows."""
    script = (f"set -eu\npath='{path}'\n[ -f \"$path\" ] || exit 66\n"
              "printf '%s\\n' '<<<DIFY_SHELL_FILE_BEGIN>>>'\nbase64 < \"$path\" | tr -d \"\\n\"\n"
              "printf '\\n%s\\n' '<<<DIFY_SHELL_FILE_END>>>'\n")
    res, out = server.run_to_completion(script, timeout=60, output_limit=16384)
    server.request("DELETE", f"/v1/jobs/{res['job_id']}?force=true")
    body = out.split("<<<DIFY_SHELL_FILE_BEGIN>>>", 1)[1].split("<<<DIFY_SHELL_FILE_END>>>", 1)[0]
    return base64.b64decode("".join(body.split()), validate=True)


def api_upload(server, path, data):
    st, _, body = server.request("PUT", f"/v1/files/content?path={path}", raw_body=data)
    assert st == 200, body


def api_download(server, path):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("GET", f"/v1/files/content?path={path}", headers={"Authorization": "Bearer " + TOKEN})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    assert resp.status == 200
    return data


def small_round_trips(servers, n):
    """Per server: the round-trip times (ms) of stat + GET of a 1 KiB file, interleaved."""
    import http.client
    conns = []
    for server in servers:
        with open(os.path.join(server.home, "small.txt"), "wb") as f:
            f.write(os.urandom(1024))
        conns.append(http.client.HTTPConnection("127.0.0.1", server.port, timeout=30))
    times = [[] for _ in servers]
    hdrs = {"Authorization": "Bearer " + TOKEN}
    for i in range(n):
        for k, conn in enumerate(conns):
            t = time.monotonic()
            conn.request("GET", "/v1/files/stat?path=small.txt", headers=hdrs)
            r = conn.getresponse()
            r.read()
            assert r.status == 200
            conn.request("GET", "/v1/files/content?path=small.txt", headers=hdrs)
            r = conn.getresponse()
            body = r.read()
            assert r.status == 200 and len(body) == 1024
            if i >= 20:  # the first ones start the worker and warm the caches
                times[k].append((time.monotonic() - t) * 1000)
    for conn in conns:
        conn.close()
    return times


def main():
    size = (256 if QUICK else 1024) << 20
    mb = size / 1e6
    tmp = tempfile.mkdtemp(prefix="shellctl-files-bench-", dir="/var/tmp")
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    server = Server(token=TOKEN, home=os.path.join(tmp, "home"))
    # sendfile on: nginx's standard way to serve files; WebDAV PUT into a temporary file on
    # the same disk, renamed over the target (as the file API does, minus the fsync).
    nginx, nport = start_nginx(
        tmp, www, http_extra="sendfile on;\n  default_type application/octet-stream;",
        server_extra="client_max_body_size 0;\n    location /put/ { dav_methods PUT; create_full_put_path on; }",
        body_temp=os.path.join(www, ".body"))
    try:
        src = os.path.join(www, "big.bin")
        make_file(src, size)
        os.link(src, os.path.join(server.home, "big.bin"))  # the same bytes, the same cache
        auth = ["-H", f"Authorization: Bearer {TOKEN}"]
        api_get = ["curl", "-sf", "-o", "/dev/null", *auth, f"http://127.0.0.1:{server.port}/v1/files/content?path=big.bin"]
        ngx_get = ["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{nport}/big.bin"]
        timed(ngx_get)  # warm the page cache once
        down_api, down_ngx = [], []
        for _ in range(RUNS):  # interleaved, so drift hits both alike
            down_api.append(timed(api_get))
            down_ngx.append(timed(ngx_get))
        api_put = ["curl", "-sf", "-o", "/dev/null", *auth, "-T", src,
                   f"http://127.0.0.1:{server.port}/v1/files/content?path=up.bin"]
        ngx_put = ["curl", "-sf", "-o", "/dev/null", "-T", src, f"http://127.0.0.1:{nport}/put/up.bin"]
        copy = os.path.join(tmp, "copy.bin")
        up_api, up_ngx, up_cat, up_cat_sync = [], [], [], []
        for _ in range(RUNS):
            up_api.append(timed(api_put))
            up_ngx.append(timed(ngx_put))
            up_cat.append(timed(["sh", "-c", f"cat '{src}' > '{copy}'"]))
            os.unlink(copy)
            up_cat_sync.append(timed(["sh", "-c", f"cat '{src}' > '{copy}' && sync '{copy}'"]))
            os.unlink(copy)
        with open(os.path.join(server.home, "up.bin"), "rb") as a, open(src, "rb") as b:
            assert hashlib.sha256(a.read()).digest() == hashlib.sha256(b.read()).digest()

        small = os.urandom(6 << 20)
        t_job_up = clock(lambda: job_upload(server, "six-job.bin", small))
        got = []
        t_job_down = clock(lambda: got.append(job_download(server, "six-job.bin")))
        assert got[0] == small
        t_api_up = best(lambda: api_upload(server, "six-api.bin", small))
        t_api_down = best(lambda: api_download(server, "six-api.bin"))
        assert api_download(server, "six-api.bin") == small

        rate = lambda secs: mb / min(secs)  # noqa: E731
        print(f"file API benchmark: {size >> 20} MiB file, best of {RUNS}, loopback, one machine")
        print(f"{'measure':58} {'figure':>14} {'ratio':>8}")
        print(f"{'download: GET /v1/files/content (curl)':58} {rate(down_api):10.0f} MB/s {rate(down_api) / rate(down_ngx):7.2f}x")
        print(f"{'download: nginx static file, sendfile (curl)':58} {rate(down_ngx):10.0f} MB/s {1:7.2f}x")
        print(f"{'upload: PUT /v1/files/content (curl -T; fsync + rename)':58} {rate(up_api):10.0f} MB/s {rate(up_api) / rate(up_ngx):7.2f}x")
        print(f"{'upload: nginx WebDAV PUT (curl -T; temp file + rename)':58} {rate(up_ngx):10.0f} MB/s {1:7.2f}x")
        print(f"{'upload floor, no network: cat file > copy':58} {rate(up_cat):10.0f} MB/s {rate(up_cat) / rate(up_ngx):7.2f}x")
        print(f"{'upload floor, no network: cat file > copy && sync copy':58} {rate(up_cat_sync):10.0f} MB/s {rate(up_cat_sync) / rate(up_ngx):7.2f}x")
        print(f"{'6 MiB up: base64 in a job script':58} {t_job_up * 1000:11.1f} ms {t_job_up / t_api_up:7.1f}x")
        print(f"{'6 MiB up: PUT /v1/files/content':58} {t_api_up * 1000:11.1f} ms {1:7.1f}x")
        print(f"{'6 MiB down: base64 through PTY paging (16 KiB windows)':58} {t_job_down * 1000:11.1f} ms {t_job_down / t_api_down:7.1f}x")
        print(f"{'6 MiB down: GET /v1/files/content':58} {t_api_down * 1000:11.1f} ms {1:7.1f}x")
        print(f"6 MiB round trip: file API {(t_api_up + t_api_down) * 1000:.1f} ms, through jobs "
              f"{(t_job_up + t_job_down) * 1000:.1f} ms: {(t_job_up + t_job_down) / (t_api_up + t_api_down):.1f}x faster")
        servers = [server]
        if "--compare" in sys.argv:
            other = Server(token=TOKEN, home=os.path.join(tmp, "home-compare"),
                           bin_dir=os.path.abspath(sys.argv[sys.argv.index("--compare") + 1]))
            servers.append(other)
        try:
            times = small_round_trips(servers, 200 if QUICK else 1000)
        finally:
            for other in servers[1:]:
                other.close()
        from bench_setup import pct
        p50 = [pct(t, 50) for t in times]
        print(f"{'small file round trip (stat + GET, 1 KiB, keep-alive): p50':58} {p50[0]:11.2f} ms")
        print(f"{'small file round trip: p95':58} {pct(times[0], 95):11.2f} ms")
        if len(servers) > 1:
            print(f"{'  the compared build: p50':58} {p50[1]:11.2f} ms")
            print(f"{'  the compared build: p95':58} {pct(times[1], 95):11.2f} ms")
            print(f"{'  added by this build (p50)':58} {p50[0] - p50[1]:+11.2f} ms")
    finally:
        nginx.terminate()
        nginx.wait()
        server.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
