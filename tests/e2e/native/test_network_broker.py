"""A native scope's brokered network (docs/native-scopes.md "The network broker", S21-S24;
component tier: isolation): the real supervisor (through shellctl-native-harness, as the
unprivileged test user from its delegated unit cgroup), its real net_broker, the real worker's
proxy at 127.0.0.1:3128 and real jobs, over real sockets.

All traffic stays inside a network namespace this test creates (`ip netns add`): the test
process enters it before anything starts, so the supervisor, its workers and the test's own
servers live there. Its loopback also carries 203.0.113.7 (TEST-NET-3: not one of the denied
ranges, so it stands for a public address without leaving the machine), and 127.0.0.1 serves
as the administrator's mediator.

Covered: targets resolved and pinned at creation, with private, loopback, metadata and
mapped addresses denied unless they are exactly the mediator; a job reaching its targets
only through the proxy (CONNECT and absolute-form http), with 403 for anything else and no
direct route (ENETUNREACH); the proxy variables forced into the job's environment; a foreign
peer on broker.sock refused; the byte budget stopping a transfer and later dials; the
connection units; four connections at once and a fifth refused (503); the 60 s cap;
destruction closing the broker's connections; a supervisor restart keeping the budget.
Root is required (the fixture makes the namespace, the cgroups and the test user)."""
import ctypes
import os
import socket
import subprocess
import sys
import threading
import time
import unittest
import uuid

from harness import wait_until

sys.path.insert(0, os.path.dirname(__file__))
from test_supervisor import LIMITS, Supervisor, SupervisorFixture, utc  # noqa: E402

PUBLIC = "203.0.113.7"
CLONE_NEWNET = 0x40000000


def enter_test_netns():
    """A fresh network namespace with `lo` up and PUBLIC on it; this process enters it."""
    name = "shellctl-broker-" + uuid.uuid4().hex[:8]
    for cmd in (["ip", "netns", "add", name],
                ["ip", "-n", name, "link", "set", "lo", "up"],
                ["ip", "-n", name, "addr", "add", PUBLIC + "/32", "dev", "lo"]):
        subprocess.run(cmd, check=True, capture_output=True)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
    finally:
        os.close(fd)
    return name


class Server:
    """A TCP server in the test namespace: `echo`, `flood` (sends `size` bytes), `http` (one
    answer) or `hold` (keeps each connection open and notes when the peer closes it)."""

    def __init__(self, host, mode, size=0):
        self.mode, self.size = mode, size
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.closed_by_peer = 0
        self.sent = []
        self.lock = threading.Lock()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn):
        try:
            if self.mode == "echo":
                while True:
                    data = conn.recv(65536)
                    if not data:
                        break
                    conn.sendall(data)
            elif self.mode == "flood":
                sent, chunk = 0, b"x" * 65536
                try:
                    while sent < self.size:
                        sent += conn.send(chunk[: min(len(chunk), self.size - sent)])
                except OSError:
                    pass
                with self.lock:
                    self.sent.append(sent)
            elif self.mode == "http":
                head = b""
                while b"\r\n\r\n" not in head:
                    c = conn.recv(4096)
                    if not c:
                        return
                    head += c
                line = head.split(b"\r\n")[0].decode()
                body = ("hello-from-target " + line).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            elif self.mode == "hold":
                while conn.recv(65536):
                    pass
                with self.lock:
                    self.closed_by_peer += 1
        except OSError:
            if self.mode == "hold":
                with self.lock:
                    self.closed_by_peer += 1
        finally:
            conn.close()

    def close(self):
        self.sock.close()


# What a job runs: python3 from the image, talking to the proxy itself (so that each case
# sees exactly what the proxy answers).
JOB_LIB = r'''
import errno, os, socket, sys, time
PROXY = ("127.0.0.1", 3128)
def tunnel(host, port, keep=False):
    s = socket.create_connection(PROXY, timeout=90)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            break
        head += c
    status = head.split(b" ")[1].decode() if head.count(b" ") else "none"
    if not keep:
        rest = b""
        if status != "200":
            s.settimeout(5)
            try:
                while True:
                    c = s.recv(4096)
                    if not c:
                        break
                    rest += c
            except OSError:
                pass
            s.close()
            return status, rest.decode(errors="replace")
    return status, s
def read_all(s):
    n = 0
    while True:
        c = s.recv(65536)
        if not c:
            return n
        n += len(c)
def direct(host, port):
    try:
        socket.create_connection((host, port), timeout=5).close()
        return "connected"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
'''


def job_script(body):
    return "python3 - <<'PY'\n" + JOB_LIB + body + "\nPY\n"


class NetworkBroker(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.netns = enter_test_netns()
        cls.echo = Server(PUBLIC, "echo")
        cls.http = Server(PUBLIC, "http")
        cls.hold = Server(PUBLIC, "hold")
        cls.other = Server(PUBLIC, "echo")  # never a target
        cls.mediated = Server("127.0.0.1", "echo")
        cls.fx = SupervisorFixture()
        cls.sv = Supervisor(cls.fx, ["--native-mediator", f"127.0.0.1:{cls.mediated.port}"])
        try:
            cls.sv.start()
            cls.digest = cls.sv.request("GET", "/v1/native-test/capabilities")[1]["capability_digest"]
        except BaseException:
            cls.sv.stop()
            cls.fx.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.sv.stop()
        cls.fx.close()
        subprocess.run(["ip", "netns", "delete", cls.netns], capture_output=True)

    # -- helpers ----------------------------------------------------------------------------
    def body(self, scope_id, targets, net_bytes=1 << 20, conns=16, **over):
        limits = dict(LIMITS, network_bytes=net_bytes, network_connections=conns)
        b = {"scope_id": scope_id, "generation": 1, "binding_ref": "binding-net",
             "base_snapshot_ref": "canary", "input_file_refs": [], "capability_digest": self.digest,
             "deadline": utc(3600), "network_targets": targets, "limits": limits}
        b.update(over)
        return b

    def create(self, scope_id, targets, **kw):
        status, view = self.sv.request("POST", "/v1/test-scopes", self.body(scope_id, targets, **kw))
        self.assertEqual(status, 201, view)
        # The supervisor of the moment (a restart replaces it).
        self.addCleanup(lambda: type(self).sv.request("DELETE", f"/v1/test-scopes/{scope_id}",
                                                      headers={"X-Scope-Generation": "1"}))
        return view

    def inspect(self, scope_id):
        status, view = self.sv.request("GET", f"/v1/test-scopes/{scope_id}", headers={"X-Scope-Generation": "1"})
        self.assertEqual(status, 200, view)
        return view

    def scoped(self, view, method, path, body=None):
        return self.sv.request(method, view["transport"]["base_path"] + path, body,
                               headers={"X-Scope-Generation": "1", "X-Scope-Token": view["transport"]["scope_token"]})

    def start_job(self, view, script, **fields):
        status, res = self.scoped(view, "POST", "/jobs/run", dict({"script": script, "timeout_seconds": 0}, **fields))
        self.assertEqual(status, 200, res)
        return res

    def finish(self, view, res, timeout=120):
        out, offset, done = res["output"], res["offset"], res["done"]
        deadline = time.monotonic() + timeout
        while not done and time.monotonic() < deadline:
            status, w = self.scoped(view, "POST", f"/jobs/{res['job_id']}/wait", {"offset": offset, "timeout": 10})
            self.assertEqual(status, 200, w)
            out, offset, done = out + w["output"], w["offset"], w["done"]
        self.assertTrue(done, out)
        return out

    def run_py(self, view, body, **fields):
        return self.finish(view, self.start_job(view, job_script(body), **fields))

    def results(self, out):
        """Lines `key=value` the job printed."""
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line and not line.startswith(" "))

    def error_code(self, answer):
        status, body = answer
        return status, body.get("error", {}).get("code") if isinstance(body, dict) else body

    # -- creation: resolve once, pin, deny ------------------------------------------------------
    def test_targets_are_resolved_pinned_and_private_ones_denied(self):
        med = self.mediated.port
        v = self.create("pins", [{"host": PUBLIC, "port": self.echo.port},
                                 {"host": "localhost", "port": med}])
        self.assertEqual(v["network_targets"], [
            {"host": PUBLIC, "port": self.echo.port, "addresses": [PUBLIC]},
            # localhost is 127.0.0.1 and ::1: only the mediator's exact IP:port is kept.
            {"host": "localhost", "port": med, "addresses": ["127.0.0.1"]}])
        self.assertEqual(v["usage"]["network_bytes"], 0)
        self.assertEqual(v["usage"]["network_connections"], 0)
        denied = {
            "loopback, not the mediator's port": ("127.0.0.1", med + 1 if med < 65535 else med - 1),
            "private": ("10.1.2.3", 80),
            "metadata": ("169.254.169.254", 80),
            "shared address space": ("100.64.0.1", 443),
            "mapped loopback": ("::ffff:127.0.0.1", med + 1 if med < 65535 else med - 1),
            "mapped private": ("::ffff:10.1.2.3", 80),
            "NAT64 metadata": ("64:ff9b::a9fe:a9fe", 80),
            "unique local": ("fd00:ec2::254", 80),
            "IPv6 loopback": ("::1", med),
            "multicast": ("224.0.0.1", 80),
            "does not resolve": ("no-such-host.invalid", 443),
        }
        for what, (host, port) in denied.items():
            answer = self.sv.request("POST", "/v1/test-scopes", self.body("denied", [{"host": host, "port": port}]))
            self.assertEqual(self.error_code(answer), (422, "network_target_denied"), what)
        # A denied target among allowed ones refuses the whole scope, and leaves nothing.
        answer = self.sv.request("POST", "/v1/test-scopes", self.body(
            "denied", [{"host": PUBLIC, "port": 1}, {"host": "10.0.0.1", "port": 1}]))
        self.assertEqual(self.error_code(answer), (422, "network_target_denied"))
        self.assertEqual(self.error_code(self.sv.request("GET", "/v1/test-scopes/denied",
                                                         headers={"X-Scope-Generation": "1"})),
                         (404, "scope_not_found"))

    # -- the job's side -------------------------------------------------------------------------
    def test_a_job_reaches_its_targets_only_through_the_proxy(self):
        v = self.create("reach", [{"host": PUBLIC, "port": self.echo.port},
                                  {"host": PUBLIC, "port": self.http.port}])
        out = self.run_py(v, f'''
for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
    print(f"env_{{k}}={{os.environ.get(k)}}")
status, s = tunnel("{PUBLIC}", {self.echo.port}, keep=True)
print(f"connect={{status}}")
s.sendall(b"ping-through-the-broker")
print(f"echo={{s.recv(100).decode()}}")
s.close()
s = socket.create_connection(PROXY, timeout=30)
s.sendall(b"GET http://{PUBLIC}:{self.http.port}/some/path?q=1 HTTP/1.1\\r\\nHost: {PUBLIC}:{self.http.port}\\r\\n\\r\\n")
print("http=" + b"".join(iter(lambda: s.recv(4096), b"")).decode().split("\\r\\n\\r\\n", 1)[1])
print(f"other={{tunnel('{PUBLIC}', {self.other.port})[0]}}")
print(f"mediator_not_a_target={{tunnel('127.0.0.1', {self.mediated.port})[0]}}")
s = socket.create_connection(PROXY, timeout=30)
s.sendall(b"GET /relative HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
print("origin_form=" + s.recv(100).decode().split(" ")[1])
s = socket.create_connection(PROXY, timeout=30)
s.sendall(b"nonsense\\r\\n\\r\\n")
print("garbage=" + s.recv(100).decode().split(" ")[1])
print(f"direct_public={{direct('{PUBLIC}', {self.echo.port})}}")
print(f"direct_mediator={{direct('127.0.0.1', {self.mediated.port})}}")
print(f"direct_elsewhere={{direct('192.0.2.1', 80)}}")
''', env={"HTTP_PROXY": "http://evil.example:1", "https_proxy": "http://evil.example:1"})
        r = self.results(out)
        for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            self.assertEqual(r.get("env_" + k), "http://127.0.0.1:3128", out)
        self.assertEqual(r.get("connect"), "200", out)
        self.assertEqual(r.get("echo"), "ping-through-the-broker", out)
        # Absolute form is sent on in origin form.
        self.assertEqual(r.get("http"), "hello-from-target GET /some/path?q=1 HTTP/1.1", out)
        self.assertEqual(r.get("other"), "403", out)
        self.assertEqual(r.get("mediator_not_a_target"), "403", out)
        self.assertEqual(r.get("origin_form"), "403", out)
        self.assertEqual(r.get("garbage"), "400", out)
        # No route out of the scope's namespace: only lo is there.
        self.assertEqual(r.get("direct_public"), "ENETUNREACH", out)
        self.assertEqual(r.get("direct_elsewhere"), "ENETUNREACH", out)
        self.assertEqual(r.get("direct_mediator"), "ECONNREFUSED", out)  # its own lo
        self.assertEqual(self.other.accepted, 0)
        usage = self.inspect("reach")["usage"]
        self.assertEqual(usage["network_connections"], 2, usage)  # the two dials that went out
        self.assertGreater(usage["network_bytes"], 0)

    def test_a_bulk_echo_flows_both_ways_at_once(self):
        """Both directions move independently: 8 MiB sent to an echo while reading it back
        (a relay that blocked writing one way while the other filled up would stall here)."""
        size = 8 << 20
        v = self.create("bulk", [{"host": PUBLIC, "port": self.echo.port}], net_bytes=256 << 20)
        out = self.run_py(v, f'''
import threading
status, s = tunnel("{PUBLIC}", {self.echo.port}, keep=True)
print(f"connect={{status}}")
def send():
    s.sendall(b"e" * {size})
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=send, daemon=True).start()
t0 = time.monotonic()
print(f"echoed={{read_all(s)}}")
print(f"seconds={{time.monotonic() - t0:.1f}}")
''')
        r = self.results(out)
        self.assertEqual(r.get("connect"), "200", out)
        self.assertEqual(int(r.get("echoed", -1)), size, out)
        self.assertLess(float(r["seconds"]), 55.0, "not rescued by the 60 s cap")

    def test_a_foreign_peer_on_the_broker_socket_is_refused(self):
        v = self.create("peer", [{"host": PUBLIC, "port": self.echo.port}])
        path = os.path.join(self.fx.state, "native", "scopes", "peer.g1", "broker.sock")
        self.assertTrue(os.path.exists(path))
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(path)
        s.sendall(b"DIAL 0\n")
        self.assertEqual(s.recv(100), b"ERR peer_refused\n")
        s.close()
        self.assertEqual(self.inspect("peer")["usage"]["network_connections"], 0)
        # The job's root holds no broker socket (S14).
        out = self.run_py(v, 'print(f"host_dir={os.path.exists(\'/run/dify-native/host\')}")\n'
                             'print(f"run={sorted(os.listdir(\'/run\'))}")')
        self.assertEqual(self.results(out).get("host_dir"), "False", out)

    # -- budgets --------------------------------------------------------------------------------
    def test_the_byte_budget_stops_a_transfer_and_later_dials(self):
        limit = 300_000
        # Far more than the socket buffers on the way hold (loopback autotuning reaches a few
        # MiB), so that the target's side is seen cut short rather than merely buffered.
        flood_size = 64 << 20
        flood = Server(PUBLIC, "flood", size=flood_size)
        self.addCleanup(flood.close)
        v = self.create("bytes", [{"host": PUBLIC, "port": flood.port}], net_bytes=limit, conns=8)
        out = self.run_py(v, f'''
status, s = tunnel("{PUBLIC}", {flood.port}, keep=True)
print(f"connect={{status}}")
print(f"received={{read_all(s)}}")
print(f"again={{tunnel('{PUBLIC}', {flood.port})}}")
''')
        r = self.results(out)
        self.assertEqual(r.get("connect"), "200", out)
        received = int(r["received"])
        self.assertGreater(received, 0, out)
        self.assertLessEqual(received, limit, out)
        self.assertIn("429", r.get("again", ""), out)
        self.assertIn("network_bytes_exhausted", r.get("again", ""), out)
        usage = self.inspect("bytes")["usage"]
        self.assertEqual(usage["network_bytes"], limit, usage)
        self.assertEqual(usage["network_connections"], 1, usage)  # the refused dial cost nothing
        wait_until(lambda: flood.sent, timeout=10, what="the flood server's end")
        self.assertLess(flood.sent[0], flood_size, "the broker closed the target's side too")

    def test_each_dial_costs_a_connection_unit(self):
        v = self.create("units", [{"host": PUBLIC, "port": self.echo.port}], conns=2)
        out = self.run_py(v, f'''
for i in range(3):
    print(f"dial{{i}}={{tunnel('{PUBLIC}', {self.echo.port})}}")
''')
        r = self.results(out)
        self.assertTrue(r["dial0"].startswith("('200'"), out)
        self.assertTrue(r["dial1"].startswith("('200'"), out)
        self.assertIn("429", r["dial2"], out)
        self.assertIn("network_connections_exhausted", r["dial2"], out)
        self.assertEqual(self.inspect("units")["usage"]["network_connections"], 2)

    def test_at_most_four_connections_at_once(self):
        v = self.create("four", [{"host": PUBLIC, "port": self.hold.port}], conns=16)
        out = self.run_py(v, f'''
held = [tunnel("{PUBLIC}", {self.hold.port}, keep=True) for _ in range(4)]
print("held=" + ",".join(st for st, _ in held))
print(f"fifth={{tunnel('{PUBLIC}', {self.hold.port})}}")
held[0][1].close()
# The slot frees once that connection's links have ended (asynchronously): ask until it has.
for _ in range(40):
    status, s = tunnel("{PUBLIC}", {self.hold.port}, keep=True)
    if status == "200":
        break
    time.sleep(0.25)
print(f"after_one_closed={{status}}")
''')
        r = self.results(out)
        self.assertEqual(r.get("held"), "200,200,200,200", out)
        self.assertIn("503", r.get("fifth", ""), out)
        self.assertEqual(r.get("after_one_closed"), "200", out)

    def test_a_connection_is_closed_at_60_seconds(self):
        v = self.create("cap60", [{"host": PUBLIC, "port": self.hold.port}])
        closed_before = self.hold.closed_by_peer
        out = self.run_py(v, f'''
t0 = time.monotonic()
status, s = tunnel("{PUBLIC}", {self.hold.port}, keep=True)
print(f"connect={{status}}")
s.settimeout(120)
print(f"eof={{s.recv(1) == b''}}")
print(f"after={{time.monotonic() - t0:.1f}}")
''')
        r = self.results(out)
        self.assertEqual(r.get("connect"), "200", out)
        self.assertEqual(r.get("eof"), "True", out)
        self.assertGreaterEqual(float(r["after"]), 59.0, out)
        self.assertLess(float(r["after"]), 75.0, out)
        wait_until(lambda: self.hold.closed_by_peer > closed_before, timeout=10,
                   what="the target's side closed as well")

    # -- destruction and restart ----------------------------------------------------------------
    def test_destruction_closes_the_broker_connections(self):
        v = self.create("ends", [{"host": PUBLIC, "port": self.hold.port}])
        accepted, closed = self.hold.accepted, self.hold.closed_by_peer
        self.start_job(v, job_script(f'''
status, s = tunnel("{PUBLIC}", {self.hold.port}, keep=True)
print(f"connect={{status}}", flush=True)
time.sleep(300)
'''))
        wait_until(lambda: self.hold.accepted > accepted, timeout=30, what="the job's connection at its target")
        status, _ = self.sv.request("DELETE", "/v1/test-scopes/ends", headers={"X-Scope-Generation": "1"})
        self.assertEqual(status, 200)
        wait_until(lambda: self.hold.closed_by_peer > closed, timeout=5, what="the target's side closed")
        self.assertFalse(os.path.exists(os.path.join(self.fx.state, "native", "scopes", "ends.g1")))

    def test_a_restart_keeps_the_budget(self):
        v = self.create("durable", [{"host": PUBLIC, "port": self.echo.port}], net_bytes=1 << 20, conns=5)
        self.run_py(v, f'''
status, s = tunnel("{PUBLIC}", {self.echo.port}, keep=True)
s.sendall(b"y" * 50000)
got = 0
while got < 50000:
    got += len(s.recv(65536))
# Half-close and read to EOF: that EOF comes only once the broker's link has closed, so
# every reservation of this connection (the reads that find EOF reserve too) is committed.
s.shutdown(socket.SHUT_WR)
print(f"echoed={{got + read_all(s)}}")
''')
        before = self.inspect("durable")["usage"]
        self.assertEqual(before["network_connections"], 1)
        self.assertGreaterEqual(before["network_bytes"], 100000)  # both ways, reserved before each read
        self.sv.kill9()
        self.sv = Supervisor(self.fx, ["--native-mediator", f"127.0.0.1:{self.mediated.port}"])
        type(self).sv = self.sv
        self.sv.start()
        after = self.inspect("durable")
        self.assertEqual(after["state"], "ready", after)
        self.assertEqual(after["usage"]["network_bytes"], before["network_bytes"])
        self.assertEqual(after["usage"]["network_connections"], 1)
        self.assertEqual(after["network_targets"], v["network_targets"])
        # The re-adopted scope's broker serves again, and its units go on from there.
        out = self.run_py(after, f'print(f"again={{tunnel(\'{PUBLIC}\', {self.echo.port})[0]}}")')
        self.assertEqual(self.results(out).get("again"), "200", out)
        self.assertEqual(self.inspect("durable")["usage"]["network_connections"], 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
