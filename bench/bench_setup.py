"""What every benchmark starts with: `[path/to/shellctl] [--quick]` from the command line,
the test harness (tests/support/harness.py) importable, a percentile helper, and a private
nginx to measure against."""
import os
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
QUICK = "--quick" in sys.argv
if ARGS:
    os.environ["SHELLCTL_BIN_DIR"] = os.path.dirname(os.path.abspath(ARGS[0]))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))


def pct(values, p):
    """The p-th percentile (nearest rank) of `values`."""
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def start_nginx(tmp, root, http_extra="", server_extra="", body_temp=None):
    """A private, non-daemon nginx serving `root` on a free loopback port, its files under
    `tmp`; `http_extra` and `server_extra` are added to its http and server blocks. Returns
    (process, port) once it accepts connections."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.makedirs(os.path.join(tmp, "logs"), exist_ok=True)
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""
daemon off;
master_process off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {body_temp or tmp + "/body"};
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  {http_extra}
  server {{
    listen 127.0.0.1:{port};
    root {root};
    location / {{ }}
    {server_extra}
  }}
}}
""")
    proc = subprocess.Popen([nginx, "-p", tmp, "-c", conf], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"nginx did not start on {port}")
