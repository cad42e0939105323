"""Home snapshots (docs/snapshots.md): POST /v1/snapshot/save and /v1/snapshot/restore against the
real server, with real trees in its HOME, read back by Python's tarfile and the zstd tool.

A raw HTTP/1.1 client reads the chunked save stream and its trailers (http.client does not
show trailers) and counts and hashes exactly the body bytes, as a real client must.
"""
import hashlib
import io
import json
import os
import socket
import stat
import subprocess
import tarfile
import threading
import time
import unittest

from harness import Server, wait_until

TOKEN = "snap-token"


class Stream:
    """One HTTP/1.1 exchange on a raw socket, read as it arrives."""

    def __init__(self, port, timeout=60):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data if isinstance(data, bytes) else data.encode())

    def _fill(self):
        chunk = self.sock.recv(262144)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def _line(self):
        while b"\r\n" not in self.buf:
            if not self._fill():
                raise EOFError("connection closed")
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode("latin-1")

    def head(self):
        status_line = self._line()
        status = int(status_line.split()[1])
        headers = {}
        while True:
            line = self._line()
            if not line:
                break
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        return status, headers

    def _exact(self, n):
        while len(self.buf) < n:
            if not self._fill():
                raise EOFError("connection closed")
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def chunked(self):
        """(body bytes, trailers dict, clean end?)"""
        body = bytearray()
        try:
            while True:
                size = int(self._line().split(";")[0], 16)
                if size == 0:
                    break
                body += self._exact(size)
                self._exact(2)
            trailers = {}
            while True:
                line = self._line()
                if not line:
                    break
                k, v = line.split(":", 1)
                trailers[k.strip().lower()] = v.strip()
            return bytes(body), trailers, True
        except (EOFError, ConnectionResetError):
            return bytes(body), {}, False

    def sized(self, headers):
        return self._exact(int(headers.get("content-length", "0")))


def post(port, path, body=b"", token=None, chunked=False, extra=""):
    s = Stream(port)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    if chunked:
        s.send(f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}{extra}Transfer-Encoding: chunked\r\n\r\n")
        if body:
            s.send(f"{len(body):x}\r\n".encode() + body + b"\r\n")
        s.send(b"0\r\n\r\n")
    else:
        s.send(f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}{extra}Content-Length: {len(body)}\r\n\r\n".encode()
               + body)
    return s


def save(server, excludes=None, raw=None):
    """(status, headers, body, trailers, clean) of one save."""
    body = raw if raw is not None else (json.dumps({"excludes": excludes}).encode()
                                        if excludes is not None else b"")
    s = post(server.port, "/v1/snapshot/save", body, server.token)
    try:
        status, headers = s.head()
        if status != 200:
            return status, headers, json.loads(s.sized(headers)), {}, True
        data, trailers, clean = s.chunked()
        return status, headers, data, trailers, clean
    finally:
        s.close()


def restore(server, archive, chunked=False):
    s = post(server.port, "/v1/snapshot/restore", archive, server.token, chunked=chunked)
    try:
        status, headers = s.head()
        return status, json.loads(s.sized(headers))
    finally:
        s.close()


def members(archive):
    raw = subprocess.run(["zstd", "-q", "-d", "-c"], input=archive, capture_output=True,
                         check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as t:
        return t.getmembers()


def names(archive):
    return [m.name + ("/" if m.isdir() else "") for m in members(archive)]


def write(root, rel, data=b"", mode=0o644):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    return path


class SaveTests(unittest.TestCase):
    def setUp(self):
        self.server = Server(token=TOKEN, start=False)
        # The server's own state inside Home, where it lives by default.
        self.server.state_dir = os.path.join(self.server.home, ".local", "share", "shellctl")
        self.server.start()
        self.home = self.server.home

    def tearDown(self):
        self.server.close()

    def test_auth_before_anything(self):
        for path in ("/v1/snapshot/save", "/v1/snapshot/restore"):
            s = post(self.server.port, path, b"garbage")
            status, headers = s.head()
            self.assertEqual(status, 401)
            self.assertEqual(json.loads(s.sized(headers))["error"]["code"], "unauthorized")
            s.close()

    def test_save_streams_a_tar_zstd_with_trailers(self):
        write(self.home, "a.txt", b"hello\n")
        write(self.home, "bin/tool.sh", b"#!/bin/sh\n", 0o755)
        write(self.home, "bin/.local/share/shellctl/keep.txt", b"ordinary\n")
        write(self.home, ".local/bin/agent-tool", b"tool\n", 0o755)
        write(self.home, "workspace/notes.txt", b"notes\n")
        os.makedirs(os.path.join(self.home, "emptydir"))
        os.symlink("bin/tool.sh", os.path.join(self.home, "tool-link"))
        os.mkfifo(os.path.join(self.home, "pipe"))
        self.server.run("echo a job, so the state dir has content")
        status, headers, data, trailers, clean = save(self.server)
        self.assertEqual(status, 200)
        self.assertTrue(clean)
        self.assertEqual(headers["content-type"], "application/octet-stream")
        self.assertEqual(headers["transfer-encoding"], "chunked")
        self.assertNotIn("content-length", headers)
        self.assertEqual(headers["trailer"], "X-Snapshot-Status, X-Snapshot-Sha256, X-Snapshot-Bytes")
        self.assertEqual(trailers["x-snapshot-status"], "ok")
        self.assertEqual(trailers["x-snapshot-sha256"], hashlib.sha256(data).hexdigest())
        self.assertEqual(int(trailers["x-snapshot-bytes"]), len(data))
        got = names(data)
        for n in ("a.txt", "bin/", "bin/tool.sh", "bin/.local/share/shellctl/keep.txt",
                  ".local/", ".local/share/", ".local/bin/agent-tool", "workspace/notes.txt",
                  "emptydir/", "tool-link"):
            self.assertIn(n, got)
        self.assertFalse([n for n in got if n.startswith(".local/share/shellctl")])
        self.assertNotIn("pipe", got)
        # Depth first, a directory before its children, names in byte order.
        self.assertLess(got.index(".local/bin/agent-tool"), got.index("a.txt"))
        self.assertLess(got.index("bin/"), got.index("bin/tool.sh"))
        for m in members(data):
            self.assertEqual((m.uid, m.gid, m.uname, m.gname), (0, 0, "", ""), m.name)
            self.assertEqual(m.mtime, int(m.mtime))
        link = [m for m in members(data) if m.name == "tool-link"][0]
        self.assertTrue(link.issym())
        self.assertEqual(link.linkname, "bin/tool.sh")
        self.assertEqual([m for m in members(data) if m.name == "bin/tool.sh"][0].mode, 0o755)

    def test_excludes(self):
        write(self.home, ".cache/junk", b"j")
        write(self.home, ".cache/keep-me", b"k")
        write(self.home, "src/app/node_modules/x.js", b"x")
        write(self.home, "var/app.log", b"l")
        write(self.home, "var/app.txt", b"t")
        write(self.home, "build/out", b"o")
        write(self.home, "src/build/out", b"o")
        status, _, data, trailers, _ = save(self.server, [
            ".cache/**", "!.cache/keep-me", "node_modules", "*.log", "/build", "  ",
            "!.local/share/shellctl", "!/.local/share/shellctl/**"])
        self.assertEqual(status, 200)
        self.assertEqual(trailers["x-snapshot-status"], "ok")
        got = names(data)
        self.assertIn(".cache/", got)  # the dir-glob rule: .cache/** is not .cache itself
        self.assertIn(".cache/keep-me", got)
        self.assertNotIn(".cache/junk", got)
        self.assertFalse([n for n in got if "node_modules" in n])
        self.assertNotIn("var/app.log", got)
        self.assertIn("var/app.txt", got)
        self.assertNotIn("build/", got)
        self.assertIn("src/build/out", got)
        self.assertFalse([n for n in got if n.startswith(".local/share/shellctl")])

    def test_bodies(self):
        for raw in (b"", b"   \n", b"null", b"{}", b'{"excludes":null}', b'{"other":1}',
                    b'{"excludes":[]} trailing bytes ignored'):
            status, _, _, trailers, _ = save(self.server, raw=raw)
            self.assertEqual(status, 200, raw)
            self.assertEqual(trailers.get("x-snapshot-status"), "ok")
        for raw in (b'{"excludes":"x"}', b"{not json", b'{"excludes":[1]}',
                    b'{"excludes":["' + b"a" * 70000 + b'"]}'):  # cut at 64 KiB
            status, _, body, _, _ = save(self.server, raw=raw)
            self.assertEqual(status, 400, raw[:40])
            self.assertEqual(body["error"]["code"], "invalid_request")

    def test_empty_home_is_an_archive_with_no_entries(self):
        import shutil
        for entry in os.listdir(self.home):
            if entry != ".local":
                shutil.rmtree(os.path.join(self.home, entry), ignore_errors=True)
        status, _, data, trailers, _ = save(self.server, [".local"])
        self.assertEqual(status, 200)
        self.assertGreater(len(data), 0)
        self.assertEqual(members(data), [])
        self.assertEqual(trailers["x-snapshot-status"], "ok")

    def test_http_1_0_gets_the_stream_without_trailers(self):
        write(self.home, "f", b"x")
        s = Stream(self.server.port)
        s.send(f"POST /v1/snapshot/save HTTP/1.0\r\nAuthorization: Bearer {TOKEN}\r\n"
               "Content-Length: 0\r\n\r\n")
        status, headers = s.head()
        self.assertEqual(status, 200)
        self.assertNotIn("transfer-encoding", headers)
        self.assertNotIn("trailer", headers)
        data = s.buf
        while s._fill():
            data = s.buf
        s.close()
        self.assertIn("f", names(data))


class HomeTests(unittest.TestCase):
    def test_home_unavailable(self):
        for home in ("", "/nonexistent/home", "/etc/passwd"):
            with Server(env={"HOME": home}) as server:
                for path in ("/v1/snapshot/save", "/v1/snapshot/restore"):
                    s = post(server.port, path)
                    status, headers = s.head()
                    body = json.loads(s.sized(headers))
                    s.close()
                    self.assertEqual(status, 500, (home, path))
                    self.assertEqual(body["error"]["code"], "home_unavailable")

    def test_symlinked_home_is_saved(self):
        # Unlike the original, the real Home is walked, not an empty archive.
        with Server(start=False) as server:
            real = os.path.join(server.tmp, "real-home")
            os.makedirs(real)
            write(real, "inside.txt", b"x")
            link = os.path.join(server.tmp, "home-link")
            os.symlink(real, link)
            server.extra_env["HOME"] = link
            server.start()
            status, _, data, trailers, _ = save(server)
            self.assertEqual(status, 200)
            self.assertIn("inside.txt", names(data))

    def test_unreadable_file_never_yields_an_ok_stream(self):
        nobody = (65534, 65534)
        with Server(user=nobody) as server:
            write(server.home, "big.bin", os.urandom(65536))
            locked = write(server.home, "zz-locked.txt", b"secret", 0o000)
            os.chown(locked, *nobody)
            os.chown(os.path.join(server.home, "big.bin"), *nobody)
            status, _, data, trailers, clean = save(server)
            if status == 200:
                self.assertFalse(clean and trailers.get("x-snapshot-status") == "ok")
            else:
                self.assertEqual(status, 500)
                self.assertEqual(data["error"]["code"], "snapshot_failed")
                self.assertIn("zz-locked.txt", data["error"]["message"])


class RestoreTests(unittest.TestCase):
    def setUp(self):
        self.src = Server(token=TOKEN)
        self.dst = Server(token=TOKEN)

    def tearDown(self):
        self.src.close()
        self.dst.close()

    def test_round_trip(self):
        h = self.src.home
        write(h, "a.txt", b"hello\n")
        write(h, "suid", b"s", 0o4755)
        write(h, "ünï/çødé.txt", "unicode".encode())
        write(h, "d" * 120 + "/" + "e" * 90 + "/f.txt", b"long names\n")
        write(h, "big.bin", os.urandom(3 << 20))
        os.makedirs(os.path.join(h, "ro"))
        write(h, "ro/child.txt", b"child\n")
        os.chmod(os.path.join(h, "ro"), 0o555)
        os.makedirs(os.path.join(h, "emptydir"))
        os.symlink("a.txt", os.path.join(h, "link"))
        status, _, data, trailers, _ = save(self.src)
        os.chmod(os.path.join(h, "ro"), 0o755)
        self.assertEqual(trailers["x-snapshot-status"], "ok")
        for chunked in (False, True):
            status, body = restore(self.dst, data, chunked=chunked)
            self.assertEqual(status, 200, body)
            self.assertEqual(body["entries"], len(members(data)))
            self.assertEqual(body["bytes_written"], sum(m.size for m in members(data) if m.isfile()))
            d = self.dst.home
            with open(os.path.join(d, "big.bin"), "rb") as f1, open(os.path.join(h, "big.bin"), "rb") as f2:
                self.assertEqual(f1.read(), f2.read())
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(d, "suid")).st_mode), 0o755)
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(d, "ro")).st_mode), 0o555)
            self.assertEqual(os.readlink(os.path.join(d, "link")), "a.txt")
            self.assertTrue(os.path.isdir(os.path.join(d, "emptydir")))
            with open(os.path.join(d, "ünï/çødé.txt"), "rb") as f:
                self.assertEqual(f.read(), b"unicode")
            os.chmod(os.path.join(d, "ro"), 0o755)

    def test_gnu_tar_archive(self):
        write(self.src.home, "x/y.txt", b"from gnu tar\n")
        data = subprocess.run(f"tar -C '{self.src.home}' -cf - . | zstd -q -c", shell=True,
                              capture_output=True, check=True).stdout
        status, body = restore(self.dst, data)
        self.assertEqual(status, 200, body)
        with open(os.path.join(self.dst.home, "x/y.txt"), "rb") as f:
            self.assertEqual(f.read(), b"from gnu tar\n")

    def test_a_gnu_sparse_pax_record_is_malformed(self):
        # Any PAX record whose key starts with GNU.sparse. refuses the entry
        # (the original does), even one from which no sparse map follows.
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            info = tarfile.TarInfo("sparse-name")
            info.pax_headers = {"GNU.sparse.name": "sparse-name", "GNU.sparse.realsize": "0"}
            t.addfile(info, io.BytesIO(b""))
        data = subprocess.run(["zstd", "-q", "-c"], input=buf.getvalue(), capture_output=True,
                              check=True).stdout
        status, body = restore(self.dst, data)
        self.assertEqual(status, 400, body)
        self.assertEqual(body["error"]["code"], "archive_malformed")
        self.assertIn("sparse", body["error"]["message"])
        self.assertFalse(os.path.lexists(os.path.join(self.dst.home, "sparse-name")))

    def test_malformed_and_escapes(self):
        outside = os.path.join(self.dst.tmp, "outside")
        os.makedirs(outside)
        gz = subprocess.run(f"tar -C '{self.src.home}' -czf - .", shell=True,
                            capture_output=True, check=True).stdout

        def hostile(build):
            raw = io.BytesIO()
            with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
                build(t)
            return subprocess.run(["zstd", "-q", "-c"], input=raw.getvalue(), capture_output=True,
                                  check=True).stdout

        def add(t, name, data=b"", **kw):
            info = tarfile.TarInfo(name)
            for k, v in kw.items():
                setattr(info, k, v)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))

        cases = [
            b"garbage", gz,
            hostile(lambda t: add(t, "/abs", b"x")),
            hostile(lambda t: add(t, "../outside/evil", b"x")),
            hostile(lambda t: (add(t, "sneaky", type=tarfile.SYMTYPE, linkname="../"),
                               add(t, "sneaky/outside/pwned", b"x"))),
            hostile(lambda t: add(t, "h", type=tarfile.LNKTYPE, linkname="../outside/x")),
            hostile(lambda t: add(t, "dev", type=tarfile.CHRTYPE, devmajor=1, devminor=3)),
            hostile(lambda t: add(t, "fifo", type=tarfile.FIFOTYPE)),
        ]
        for archive in cases:
            status, body = restore(self.dst, archive)
            self.assertEqual(status, 400, body)
            self.assertEqual(body["error"]["code"], "archive_malformed")
            self.assertTrue(body["error"]["message"].startswith("archive malformed: "))
        self.assertEqual(os.listdir(outside), [])
        # A 128 MiB window is refused.
        write(self.src.home, "w", os.urandom(1 << 20))
        wide = subprocess.run(f"tar -C '{self.src.home}' -cf - w | zstd -q -c --long=27",
                              shell=True, capture_output=True, check=True).stdout
        status, body = restore(self.dst, wide)
        self.assertEqual(status, 400)
        # An empty body is an empty archive.
        status, body = restore(self.dst, b"")
        self.assertEqual((status, body), (200, {"entries": 0, "bytes_written": 0}))


class GateTests(unittest.TestCase):
    def test_one_operation_at_a_time_and_released_when_the_client_goes(self):
        with Server(token=TOKEN, env={"SHELLCTL_SNAPSHOT_TIMEOUT": "60s"}) as server:
            write(server.home, "big.bin", os.urandom(32 << 20))
            # A save whose client reads nothing: it holds the gate.
            held = post(server.port, "/v1/snapshot/save", b"", TOKEN)
            status, _ = held.head()
            self.assertEqual(status, 200)
            for path in ("/v1/snapshot/save", "/v1/snapshot/restore"):
                s = post(server.port, path, b"", TOKEN)
                code, headers = s.head()
                body = json.loads(s.sized(headers))
                s.close()
                self.assertEqual(code, 409, path)
                self.assertEqual(body["error"], {"code": "snapshot_busy",
                                                 "message": "another snapshot operation is in progress"})
            # Job routes do not touch the gate; a bad save body is 400 even now.
            self.assertTrue(server.run("echo hi")["job_id"])
            code, _, body, _, _ = save(server, raw=b'{"excludes":"x"}')
            self.assertEqual(code, 400)
            held.close()  # the peer goes: the gate is free as soon as the op notices
            wait_until(lambda: save(server)[0] == 200, timeout=30, what="the gate to be free")

    def test_the_gate_is_free_once_an_answer_is_read(self):
        # A client that has read a whole answer and asks again must not be told 409: the
        # gate opens with the op's answer (it once waited for the op's exit, which a loaded
        # machine delivered after the client's next request).
        with Server(token=TOKEN) as server:
            write(server.home, "a.txt", b"a")
            for i in range(40):
                status, _, data, trailers, _ = save(server)
                self.assertEqual((status, trailers.get("x-snapshot-status")), (200, "ok"), i)
                status, body = restore(server, data)
                self.assertEqual(status, 200, (i, body))

    def test_stalled_reader_releases_the_gate_at_the_deadline(self):
        with Server(token=TOKEN, env={"SHELLCTL_SNAPSHOT_TIMEOUT": "1s"}) as server:
            write(server.home, "big.bin", os.urandom(32 << 20))
            held = post(server.port, "/v1/snapshot/save", b"", TOKEN)
            self.assertEqual(held.head()[0], 200)
            # Never read: after the deadline the save is cut and the gate freed.
            wait_until(lambda: save(server, [".local", "big.bin"])[0] == 200, timeout=30,
                       what="the gate to be free after the deadline")
            data, trailers, clean = held.chunked()
            self.assertFalse(clean and trailers.get("x-snapshot-status") == "ok")
            held.close()

    def test_stalled_restore_releases_the_gate(self):
        # The total deadline (docs/api.md "Home snapshots"): a partial chunk, then nothing;
        # timeout 300 ms; free 2 s later.
        with Server(token=TOKEN, env={"SHELLCTL_SNAPSHOT_TIMEOUT": "300ms"}) as server:
            write(server.home, "f", os.urandom(1 << 20))
            archive = save(server)[2]
            s = Stream(server.port)
            # A chunk announced as 4 KiB, of which 100 bytes of a good archive come.
            s.send(f"POST /v1/snapshot/restore HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n1000\r\n".encode() + archive[:100])
            # Its answer first: a probe sent before the stalled restore reached the gate
            # could take the gate itself (requests on two connections have no order).
            status, headers = s.head()
            self.assertEqual(status, 500)
            self.assertEqual(json.loads(s.sized(headers))["error"]["code"], "restore_failed")
            wait_until(lambda: restore(server, b"")[0] == 200, timeout=30,
                       what="the gate to be free after the restore's deadline")
            s.close()


class LargeTests(unittest.TestCase):
    def test_a_gigabyte_streams_with_flat_memory(self):
        with Server(token=TOKEN) as server, Server(token=TOKEN) as dst:
            big = os.path.join(server.home, "sparse.bin")
            with open(big, "wb") as f:
                f.truncate(1 << 30)  # 1 GiB (reads as zeros)
            write(server.home, "noise.bin", os.urandom(16 << 20))
            s = post(server.port, "/v1/snapshot/save", b"", TOKEN)
            self.assertEqual(s.head()[0], 200)
            # Read and hash as it comes, keeping only what restore needs.
            digest = hashlib.sha256()
            data, trailers, clean = s.chunked()
            s.close()
            digest.update(data)
            self.assertTrue(clean)
            self.assertEqual(trailers["x-snapshot-sha256"], digest.hexdigest())
            with open(f"/proc/{server.proc.pid}/status") as f:
                hwm = [l for l in f if l.startswith("VmHWM")][0]
            peak_kib = int(hwm.split()[1])
            self.assertLess(peak_kib, 96 * 1024, hwm)  # a 1 GiB file never sits in memory
            status, body = restore(dst, data, chunked=True)
            self.assertEqual(status, 200, body)
            self.assertEqual(os.path.getsize(os.path.join(dst.home, "sparse.bin")), 1 << 30)
            with open(f"/proc/{dst.proc.pid}/status") as f:
                hwm = [l for l in f if l.startswith("VmHWM")][0]
            self.assertLess(int(hwm.split()[1]), 96 * 1024, hwm)


if __name__ == "__main__":
    unittest.main(verbosity=2)
