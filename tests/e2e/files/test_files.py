"""The file API (docs/api.md "Files") against the real server: real files in its HOME and in a
granted tree, real HTTP on loopback, symlinks made by real jobs.

Every escape is checked twice: the answer (403/400 with the API's code), and the disk (nothing
written, read, moved or deleted outside the roots)."""
import hashlib
import http.client
import json
import os
import socket
import stat
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse

from harness import Server, TmpfsCase, wait_until

TOKEN = "files-token"


def q(path):
    return urllib.parse.quote(path, safe="")


class Files:
    """The file API's routes over one server."""

    def __init__(self, server):
        self.s = server

    def get(self, path, headers=None, method="GET"):
        """(status, headers, body): the body as bytes on success, parsed JSON on an error."""
        conn = http.client.HTTPConnection("127.0.0.1", self.s.port, timeout=120)
        try:
            conn.request(method, f"/v1/files/content?path={q(path)}",
                         headers={"Authorization": "Bearer " + TOKEN, **(headers or {})})
            resp = conn.getresponse()
            payload = resp.read()
            rh = {k.lower(): v for k, v in resp.getheaders()}
            if resp.status >= 300 and rh.get("content-type") == "application/json":
                payload = json.loads(payload)
            return resp.status, rh, payload
        finally:
            conn.close()

    def put(self, path, data, query=""):
        return self.s.request("PUT", f"/v1/files/content?path={q(path)}{query}", raw_body=data)

    def stat(self, path):
        return self.s.request("GET", f"/v1/files/stat?path={q(path)}")

    def list(self, path, limit=None):
        extra = f"&limit={limit}" if limit is not None else ""
        return self.s.request("GET", f"/v1/files/list?path={q(path)}{extra}")

    def mkdir(self, path, **kw):
        return self.s.request("POST", "/v1/files/mkdir", dict(path=path, **kw))

    def delete(self, path, recursive=False):
        extra = "&recursive=true" if recursive else ""
        return self.s.request("DELETE", f"/v1/files?path={q(path)}{extra}")

    def move(self, src, dst, overwrite=False):
        return self.s.request("POST", "/v1/files/move", {"from": src, "to": dst, "overwrite": overwrite})


def error_code(body):
    return body["error"]["code"] if isinstance(body, dict) and "error" in body else body


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(field)


def pattern(n, seed=0):
    """n deterministic bytes (every value, not a repeating short period)."""
    block = hashlib.sha256(str(seed).encode()).digest() * 2048 + bytes(range(256)) * 64  # 81920 bytes
    return (block * (n // len(block) + 1))[:n]


class FileApiBase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.outside = tempfile.mkdtemp(prefix="shellctl-outside-")
        with open(os.path.join(cls.outside, "secret"), "w") as f:
            f.write("outside secret\n")
        cls.granted = tempfile.mkdtemp(prefix="shellctl-granted-")
        cls.server = Server(token=TOKEN, env={"SHELLCTL_LANDLOCK_RW_PATHS": cls.granted})
        cls.home = cls.server.home
        cls.f = Files(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        subprocess.run(["rm", "-rf", cls.outside, cls.granted])

    def assert_error(self, answer, status, code):
        st, _, body = answer
        self.assertEqual((st, error_code(body)), (status, code), body)

    def outside_unchanged(self):
        self.assertEqual(sorted(os.listdir(self.outside)), ["secret"])
        with open(os.path.join(self.outside, "secret")) as f:
            self.assertEqual(f.read(), "outside secret\n")

    def job(self, script):
        res, out = self.server.run_to_completion(script)
        self.assertEqual(res["exit_code"], 0, out)
        return out


class RoundTrips(FileApiBase):
    def round_trip(self, name, data, **kw):
        st, _, body = self.f.put(name, data, **kw)
        self.assertEqual(st, 200, body)
        self.assertEqual(body, {"path": os.path.join(self.home, name), "size": len(data),
                                "sha256": hashlib.sha256(data).hexdigest()})
        st, h, got = self.f.get(name)
        self.assertEqual(st, 200)
        self.assertEqual(got if isinstance(got, bytes) else None, data)
        self.assertEqual(h["content-length"], str(len(data)))
        self.assertEqual(h["x-file-size"], str(len(data)))
        self.assertEqual(h["content-type"], "application/octet-stream")
        return h

    def test_empty_one_byte_and_every_byte_value(self):
        self.round_trip("empty", b"")
        self.round_trip("one", b"x")
        data = bytes(range(256)) * 1000
        h = self.round_trip("all-bytes.bin", data)
        self.assertEqual(h["x-file-mode"], "0644")
        with open(os.path.join(self.home, "all-bytes.bin"), "rb") as f:
            self.assertEqual(f.read(), data)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.home, "all-bytes.bin")).st_mode), 0o644)
        self.assertIn("GMT", h["last-modified"])

    def test_mode_parents_and_kept_mode(self):
        st, _, body = self.f.put("deep/er/run.sh", b"#!/bin/sh\necho hi\n", query="&parents=true&mode=0755")
        self.assertEqual(st, 200, body)
        p = os.path.join(self.home, "deep/er/run.sh")
        self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o755)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(p)).st_mode), 0o755)
        # A replacement without mode keeps the file's mode (a script stays runnable).
        self.assertEqual(self.f.put("deep/er/run.sh", b"#!/bin/sh\necho again\n")[0], 200)
        self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o755)
        self.assertEqual(self.job("sh ~/deep/er/run.sh"), "again\n")
        # Without parents a missing directory is 404; a set-id mode is refused.
        self.assert_error(self.f.put("nowhere/x", b"1"), 404, "file_not_found")
        self.assert_error(self.f.put("suid", b"1", query="&mode=4755"), 400, "invalid_request")
        self.assert_error(self.f.put("badmode", b"1", query="&mode=rwx"), 400, "invalid_request")
        self.assertFalse(os.path.exists(os.path.join(self.home, "suid")))

    def test_ranges(self):
        data = pattern(100000, seed=3)
        self.assertEqual(self.f.put("ranged", data)[0], 200)
        for header, start, end in (("bytes=0-9", 0, 9), ("bytes=5000-5999", 5000, 5999),
                                   ("bytes=-10", 99990, 99999), ("bytes=99990-", 99990, 99999),
                                   ("bytes=99000-200000", 99000, 99999)):
            st, h, body = self.f.get("ranged", headers={"Range": header})
            self.assertEqual(st, 206, header)
            self.assertEqual(body, data[start:end + 1], header)
            self.assertEqual(h["content-range"], f"bytes {start}-{end}/100000")
            self.assertEqual(h["content-length"], str(end - start + 1))
        for header in ("bytes=100000-", "bytes=100000-100005", "bytes=-0"):
            st, h, body = self.f.get("ranged", headers={"Range": header})
            self.assertEqual((st, error_code(body)), (416, "range_not_satisfiable"), header)
            self.assertEqual(h["content-range"], "bytes */100000")
        # Malformed, several ranges, or another unit: ignored, the whole file.
        for header in ("bytes=a-b", "bytes=0-1,5-6", "items=0-1", "bytes=9-3"):
            st, _, body = self.f.get("ranged", headers={"Range": header})
            self.assertEqual((st, body), (200, data), header)
        self.round_trip("empty-ranged", b"")
        st, _, body = self.f.get("empty-ranged", headers={"Range": "bytes=0-"})
        self.assertEqual((st, error_code(body)), (416, "range_not_satisfiable"))

    def test_head_and_chunked_upload(self):
        data = pattern(300000, seed=4)
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        conn.request("PUT", "/v1/files/content?path=chunked.bin", body=iter([data[:1000], data[1000:]]),
                     headers={"Authorization": "Bearer " + TOKEN}, encode_chunked=True)
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200, resp.read())
        resp.read()
        conn.request("HEAD", "/v1/files/content?path=chunked.bin", headers={"Authorization": "Bearer " + TOKEN})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.getheader("Content-Length"), str(len(data)))
        self.assertEqual(resp.read(), b"")
        # The connection still serves requests after a HEAD.
        conn.request("GET", "/v1/files/content?path=chunked.bin", headers={"Authorization": "Bearer " + TOKEN})
        resp = conn.getresponse()
        self.assertEqual(resp.read(), data)
        conn.close()

    def test_needs_the_token(self):
        st, _, body = self.server.request("GET", "/v1/files/stat?path=x", auth=False)
        self.assertEqual((st, error_code(body)), (401, "unauthorized"))
        st, _, body = self.server.request("PUT", "/v1/files/content?path=x", auth=False, raw_body=b"abc")
        self.assertEqual(st, 401)
        self.assertFalse(os.path.exists(os.path.join(self.home, "x")))

    def test_granted_tree_is_a_root(self):
        target = os.path.join(self.granted, "out.txt")
        st, _, body = self.f.put(target, b"granted")
        self.assertEqual(st, 200, body)
        with open(target, "rb") as f:
            self.assertEqual(f.read(), b"granted")
        self.assertEqual(self.f.move(target, "moved-from-granted")[0], 200)
        self.assertTrue(os.path.exists(os.path.join(self.home, "moved-from-granted")))


class Large(FileApiBase):
    SIZE = 200 * 1000 * 1000

    def test_200mb_streams_with_flat_memory(self):
        pid = self.server.proc.pid
        piece = pattern(1 << 20, seed=5)
        count = self.SIZE // len(piece)
        expected = hashlib.sha256()
        for _ in range(count):
            expected.update(piece)
        # The upload, as a client streaming from disk would send it (sized, in pieces).
        base = rss_kib(pid)
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM: the peak below is this transfer's
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=300)
        conn.putrequest("PUT", "/v1/files/content?path=big.bin")
        conn.putheader("Authorization", "Bearer " + TOKEN)
        conn.putheader("Content-Length", str(count * len(piece)))
        conn.endheaders()
        for _ in range(count):
            conn.send(piece)
        resp = conn.getresponse()
        body = resp.read()
        self.assertEqual(resp.status, 200, body)
        self.assertIn(expected.hexdigest().encode(), body)
        up_peak = rss_kib(pid, "VmHWM") - base
        # The download, read as it comes.
        base = rss_kib(pid)
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        conn.request("GET", "/v1/files/content?path=big.bin", headers={"Authorization": "Bearer " + TOKEN})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        got = hashlib.sha256()
        n = 0
        while True:
            chunk = resp.read(1 << 20)
            if not chunk:
                break
            got.update(chunk)
            n += len(chunk)
        conn.close()
        down_peak = rss_kib(pid, "VmHWM") - base
        self.assertEqual(n, count * len(piece))
        self.assertEqual(got.hexdigest(), expected.hexdigest())
        print(f"200 MB: server RSS growth upload {up_peak} KiB, download {down_peak} KiB")
        self.assertLessEqual(up_peak, 16 * 1024)
        self.assertLessEqual(down_peak, 16 * 1024)

    def test_replace_while_reading_is_old_or_new_whole(self):
        a, b = b"A" * (8 << 20), b"B" * (5 << 20)
        self.assertEqual(self.f.put("swapped", a)[0], 200)
        results, errors = [], []

        def reader():
            try:
                for _ in range(6):
                    st, _, body = self.f.get("swapped")
                    results.append((st, body))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=reader) for _ in range(3)]
        for t in threads:
            t.start()
        for i in range(6):
            self.assertEqual(self.f.put("swapped", b if i % 2 == 0 else a)[0], 200)
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(results), 18)
        for st, body in results:
            self.assertEqual(st, 200)
            self.assertIn(body, (a, b), f"a mix of {len(body)} bytes")
        # A reader that opened the old file keeps reading it across the rename.
        self.assertEqual(self.f.put("swapped", a)[0], 200)
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        conn.request("GET", "/v1/files/content?path=swapped", headers={"Authorization": "Bearer " + TOKEN})
        resp = conn.getresponse()
        first = resp.read(1000)
        self.assertEqual(self.f.put("swapped", b)[0], 200)
        rest = resp.read()
        conn.close()
        self.assertEqual(first + rest, a)

    def test_interrupted_upload_keeps_the_old_file(self):
        self.assertEqual(self.f.put("precious", b"old content")[0], 200)
        sock = socket.create_connection(("127.0.0.1", self.server.port))
        sock.sendall(b"PUT /v1/files/content?path=precious HTTP/1.1\r\nHost: x\r\n"
                     b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 10000000\r\n\r\n")
        sock.sendall(b"N" * 3000000)
        time.sleep(0.3)
        sock.close()
        # The op sees the body cut and drops its unnamed temporary file.
        time.sleep(0.5)
        with open(os.path.join(self.home, "precious"), "rb") as f:
            self.assertEqual(f.read(), b"old content")
        self.assertEqual([n for n in os.listdir(self.home) if n.startswith(".shellctl-upload")], [])
        st, _, body = self.f.get("precious")
        self.assertEqual((st, body), (200, b"old content"))


class Escapes(FileApiBase):
    def test_dot_dot_and_absolute_elsewhere(self):
        rel = os.path.relpath(os.path.join(self.outside, "secret"), self.home)
        os.makedirs(os.path.join(self.home, "a"), exist_ok=True)
        self.assertTrue(rel.startswith("../"))
        for path in (rel, os.path.join(self.outside, "secret"), "/etc/passwd", "a/../../x",
                     "/proc/self/root/etc/passwd", "/proc/self/root" + self.home + "/x"):
            self.assert_error(self.f.get(path), 403, "path_denied")
            self.assert_error(self.f.stat(path), 403, "path_denied")
        new = os.path.join(os.path.dirname(rel), "created")
        self.assert_error(self.f.put(new, b"no"), 403, "path_denied")
        self.assert_error(self.f.put(os.path.join(self.outside, "created"), b"no"), 403, "path_denied")
        self.assert_error(self.f.mkdir(os.path.join(self.outside, "d")), 403, "path_denied")
        self.assert_error(self.f.delete(os.path.join(self.outside, "secret")), 403, "path_denied")
        self.assert_error(self.f.delete(rel), 403, "path_denied")
        self.assert_error(self.f.move(rel, "stolen"), 403, "path_denied")
        self.assert_error(self.f.list(self.outside), 403, "path_denied")
        self.assert_error(self.f.list(".."), 403, "path_denied")
        self.assertFalse(os.path.exists(os.path.join(self.home, "stolen")))
        self.outside_unchanged()

    def test_symlink_made_by_a_job(self):
        self.job(f"ln -s {self.outside} ~/jl && ln -s ../../../../../../../..{self.outside} ~/jrel "
                 f"&& ln -s /proc/self/root ~/jproc")
        for link in ("jl", "jrel", "jproc"):
            inner = "secret" if link != "jproc" else self.outside.lstrip("/") + "/secret"
            self.assert_error(self.f.get(f"{link}/{inner}"), 403, "path_denied")
            self.assert_error(self.f.stat(f"{link}/{inner}"), 403, "path_denied")
            self.assert_error(self.f.list(link), 403, "path_denied")
            self.assert_error(self.f.put(f"{link}/created", b"no"), 403, "path_denied")
            self.assert_error(self.f.put(f"{link}/sub/created", b"no", query="&parents=true"), 403, "path_denied")
            self.assert_error(self.f.mkdir(f"{link}/d"), 403, "path_denied")
            self.assert_error(self.f.mkdir(f"{link}/d/e", parents=True), 403, "path_denied")
            self.assert_error(self.f.delete(f"{link}/{inner}"), 403, "path_denied")
            self.assert_error(self.f.move(f"{link}/{inner}", "stolen"), 403, "path_denied")
            self.assert_error(self.f.move("stolen-src", f"{link}/planted"), 403, "path_denied")
            # The link itself is an entry of HOME: reported by lstat, never followed.
            st, _, body = self.f.stat(link)
            self.assertEqual((st, body["type"]), (200, "symlink"), body)
        self.assertEqual(self.f.stat("jl")[2]["target"], self.outside)
        # A final symlink that leads out is not read through either.
        self.job(f"ln -s {self.outside}/secret ~/jfile")
        self.assert_error(self.f.get("jfile"), 403, "path_denied")
        # A write to the link's name replaces the link (never writes through it).
        self.assertEqual(self.f.put("jfile", b"replaced")[0], 200)
        self.assertFalse(os.path.islink(os.path.join(self.home, "jfile")))
        # A recursive delete of a tree holding links that lead out removes the links only.
        self.job(f"mkdir -p ~/tree/a && ln -s {self.outside} ~/tree/a/out && ln -s {self.outside}/secret ~/tree/f")
        self.assertEqual(self.f.delete("tree", recursive=True)[0], 200)
        self.assertFalse(os.path.lexists(os.path.join(self.home, "tree")))
        self.assertEqual(self.f.delete("jl")[0], 200)  # the link, not its target
        self.outside_unchanged()

    def test_symlink_swapped_between_requests(self):
        os.makedirs(os.path.join(self.home, "swap"))
        with open(os.path.join(self.home, "swap", "secret"), "w") as f:
            f.write("inside\n")
        st, _, body = self.f.get("swap/secret")
        self.assertEqual((st, body), (200, b"inside\n"))
        # A job swaps the directory for a link out between the two requests.
        self.job(f"mv ~/swap ~/swap.old && ln -s {self.outside} ~/swap")
        self.assert_error(self.f.get("swap/secret"), 403, "path_denied")
        self.assert_error(self.f.put("swap/secret", b"overwrite"), 403, "path_denied")
        self.assert_error(self.f.delete("swap/secret"), 403, "path_denied")
        self.outside_unchanged()

    def test_invalid_paths(self):
        for raw in ("", "%00", "a%00b", "%FF", "%C3%28", q("x" * 4097)):
            st, _, body = self.server.request("GET", f"/v1/files/stat?path={raw}")
            self.assertEqual((st, error_code(body)), (400, "invalid_path"), raw)
            st, _, body = self.server.request("PUT", f"/v1/files/content?path={raw}", raw_body=b"z")
            self.assertEqual((st, error_code(body)), (400, "invalid_path"), raw)
        self.assert_error(self.server.request("GET", "/v1/files/stat"), 400, "invalid_path")
        self.assert_error(self.f.mkdir(""), 400, "invalid_path")
        self.assert_error(self.f.move("", "x"), 400, "invalid_path")
        self.assert_error(self.f.delete("a/.."), 400, "invalid_path")
        st, _, body = self.server.request("POST", "/v1/files/mkdir", raw_body=b"{not json")
        self.assertEqual((st, error_code(body)), (400, "invalid_request"))
        st, _, body = self.server.request("POST", "/v1/files/move", raw_body=b'{"from": 3}')
        self.assertEqual((st, error_code(body)), (400, "invalid_request"))
        # 4096 bytes is still a path (here: one that does not exist).
        long_ok = "d/" * 2040 + "x" * (4096 - 4080 - len(self.home) - 1)
        self.assertLessEqual(len(os.path.join(self.home, long_ok)), 4096 + len(self.home))
        st, _, body = self.f.stat(long_ok)
        self.assertIn(st, (404, 400), body)

    def test_roots_themselves(self):
        self.assert_error(self.f.delete(self.home, recursive=True), 403, "path_denied")
        self.assert_error(self.f.delete(self.granted, recursive=True), 403, "path_denied")
        self.assert_error(self.f.move(self.home, "x"), 403, "path_denied")
        self.assert_error(self.f.put(self.home, b"x"), 409, "is_a_directory")
        self.assertTrue(os.path.isdir(self.home) and os.path.isdir(self.granted))


class StateDirInsideHome(unittest.TestCase):
    """The state dir under HOME (the default layout of many images) is never reachable."""

    def setUp(self):
        self.outer = tempfile.mkdtemp(prefix="shellctl-e2e-")
        os.chmod(self.outer, 0o755)
        self.home = os.path.join(self.outer, "home")
        state = os.path.join(self.home, ".local", "share", "shellctl")
        os.makedirs(state)
        self.state = state
        self.server = Server(token=TOKEN, home=self.home, state_dir=state)
        self.f = Files(self.server)

    def tearDown(self):
        self.server.close()
        subprocess.run(["rm", "-rf", self.outer])

    def test_state_dir_refused_by_name_link_and_ancestor(self):
        res, _ = self.server.run_to_completion("echo hi; ln -s .local/share/shellctl ~/st; ln -s .local/share ~/sh")
        db = os.path.join(self.state, "shellctl.db")
        self.assertTrue(os.path.exists(db))
        for path in (".local/share/shellctl/shellctl.db", db, "st/shellctl.db", "sh/shellctl/shellctl.db",
                     ".local/share/shellctl", "st", "sh/shellctl"):
            st, _, body = self.f.get(path)
            self.assertEqual((st, error_code(body)), (403, "path_denied"), path)
            if path != "st":  # the link itself is an entry of HOME: stat reports it (below)
                st, _, body = self.f.stat(path)
                self.assertEqual((st, error_code(body)), (403, "path_denied"), path)
            st, _, body = self.f.list(path)
            self.assertIn((st, error_code(body)), ((403, "path_denied"), (409, "not_a_directory")), path)
        for path in (".local/share/shellctl/shellctl.db", "st/shellctl.db", "sh/shellctl/jobs/x"):
            st, _, body = self.f.put(path, b"corrupt")
            self.assertEqual((st, error_code(body)), (403, "path_denied"), path)
        # Deleting or moving a tree that holds the state dir would take the database with it.
        for path in (".local", ".local/share", ".local/share/shellctl", "sh/shellctl"):
            st, _, body = self.f.delete(path, recursive=True)
            self.assertEqual((st, error_code(body)), (403, "path_denied"), path)
            st, _, body = self.f.move(path, "elsewhere")
            self.assertEqual((st, error_code(body)), (403, "path_denied"), path)
        st, _, body = self.f.stat("st")
        self.assertEqual((st, body["type"], body["target"]), (200, "symlink", ".local/share/shellctl"))
        st, _, body = self.f.move("st", "st2")  # the link itself is an ordinary entry
        self.assertEqual(st, 200, body)
        st, _, body = self.f.mkdir(".local/share/shellctl/jobs/evil")
        self.assertEqual((st, error_code(body)), (403, "path_denied"))
        # The server still works: its files are intact.
        st, _, body = self.server.request("GET", f"/v1/jobs/{res['job_id']}")
        self.assertEqual(st, 200, body)
        self.assertEqual(self.server.run_to_completion("echo still")[1], "still\n")
        # The rest of HOME stays usable.
        self.assertEqual(self.f.put(".local/share/other.txt", b"fine")[0], 200)


class Operations(FileApiBase):
    def test_stat_types(self):
        os.makedirs(os.path.join(self.home, "sd"))
        with open(os.path.join(self.home, "sd", "f"), "wb") as f:
            f.write(b"12345")
        os.symlink("f", os.path.join(self.home, "sd", "l"))
        os.mkfifo(os.path.join(self.home, "sd", "fifo"))
        st, _, body = self.f.stat("sd/f")
        self.assertEqual(st, 200)
        self.assertEqual(set(body), {"path", "type", "size", "mode", "mtime"})
        self.assertEqual((body["type"], body["size"], body["mode"]), ("file", 5, "0644"))
        self.assertRegex(body["mtime"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(self.f.stat("sd")[2]["type"], "dir")
        self.assertEqual(self.f.stat("sd/l")[2], {**self.f.stat("sd/l")[2], "type": "symlink", "target": "f"})
        self.assertEqual(self.f.stat("sd/fifo")[2]["type"], "other")
        self.assert_error(self.f.stat("sd/missing"), 404, "file_not_found")
        self.assert_error(self.f.stat("sd/f/x"), 409, "not_a_directory")
        # A FIFO is not opened (that would block): refused at once.
        self.assert_error(self.f.get("sd/fifo"), 403, "path_denied")
        self.assert_error(self.f.get("sd"), 409, "is_a_directory")
        self.assert_error(self.f.put("sd", b"x"), 409, "is_a_directory")
        st, _, body = self.f.get("sd/l")  # a symlink inside the root is followed for reading
        self.assertEqual((st, body), (200, b"12345"))
        self.assertEqual(self.f.stat(os.path.join(self.home, "sd", "f"))[2]["path"], os.path.join(self.home, "sd/f"))

    def test_list_sorted_limited(self):
        d = os.path.join(self.home, "many")
        os.makedirs(d)
        names = [f"n{i:04d}" for i in range(1500)] + ["B", "a", "_", "\u00e9"]
        for n in names:
            open(os.path.join(d, n), "w").close()
        os.makedirs(os.path.join(d, "zdir"))
        st, _, body = self.f.list("many")
        self.assertEqual(st, 200)
        expect = sorted(names + ["zdir"], key=lambda s: s.encode())
        self.assertEqual([e["name"] for e in body["entries"]], expect[:1000])
        self.assertTrue(body["truncated"])
        self.assertEqual(body["path"], d)
        self.assertEqual(set(body["entries"][0]), {"name", "type", "size", "mode", "mtime"})
        st, _, body = self.f.list("many", limit=20000)
        self.assertEqual([e["name"] for e in body["entries"]], expect)
        self.assertFalse(body["truncated"])
        self.assertEqual(body["entries"][-1]["type"], "file")
        self.assertEqual([e["type"] for e in body["entries"] if e["name"] == "zdir"], ["dir"])
        st, _, body = self.f.list("many", limit=3)
        self.assertEqual([e["name"] for e in body["entries"]], expect[:3])
        self.assert_error(self.f.list("many/a"), 409, "not_a_directory")
        self.assert_error(self.f.list("nothere"), 404, "file_not_found")

    def test_mkdir(self):
        st, _, body = self.f.mkdir("md")
        self.assertEqual((st, body), (200, {"path": os.path.join(self.home, "md")}))
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.home, "md")).st_mode), 0o755)
        self.assert_error(self.f.mkdir("md"), 409, "file_exists")
        self.assertEqual(self.f.mkdir("md", parents=True)[0], 200)
        self.assert_error(self.f.mkdir("md2/a/b"), 404, "file_not_found")
        st, _, body = self.f.mkdir("md2/a/b", parents=True, mode="0775")
        self.assertEqual(st, 200, body)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.home, "md2/a/b")).st_mode), 0o775)
        open(os.path.join(self.home, "md", "file"), "w").close()
        self.assert_error(self.f.mkdir("md/file"), 409, "file_exists")
        self.assert_error(self.f.mkdir("md/file", parents=True), 409, "file_exists")
        self.assert_error(self.f.mkdir("md/file/x", parents=True), 409, "not_a_directory")
        self.assert_error(self.f.mkdir("md/sg", mode="2755"), 400, "invalid_request")

    def test_delete(self):
        os.makedirs(os.path.join(self.home, "del/sub/deeper"))
        for p in ("del/a", "del/sub/b", "del/sub/deeper/c"):
            open(os.path.join(self.home, p), "w").close()
        os.symlink(self.outside, os.path.join(self.home, "del/sub/out"))
        self.assert_error(self.f.delete("del"), 409, "directory_not_empty")
        st, _, body = self.f.delete("del/a")
        self.assertEqual((st, body), (200, {"path": os.path.join(self.home, "del/a"), "deleted": True}))
        self.assertEqual(self.f.delete("del", recursive=True)[0], 200)
        self.assertFalse(os.path.exists(os.path.join(self.home, "del")))
        self.assert_error(self.f.delete("del"), 404, "file_not_found")
        os.makedirs(os.path.join(self.home, "emptydir"))
        self.assertEqual(self.f.delete("emptydir")[0], 200)
        self.outside_unchanged()

    def test_move(self):
        with open(os.path.join(self.home, "m1"), "w") as f:
            f.write("one")
        with open(os.path.join(self.home, "m2"), "w") as f:
            f.write("two")
        self.assert_error(self.f.move("m1", "m2"), 409, "file_exists")
        st, _, body = self.f.move("m1", "m2", overwrite=True)
        self.assertEqual((st, body), (200, {"path": os.path.join(self.home, "m2")}))
        with open(os.path.join(self.home, "m2")) as f:
            self.assertEqual(f.read(), "one")
        self.assert_error(self.f.move("m1", "m3"), 404, "file_not_found")
        os.makedirs(os.path.join(self.home, "mdir/full"))
        open(os.path.join(self.home, "mdir/full/x"), "w").close()
        os.makedirs(os.path.join(self.home, "mdir/empty"))
        self.assert_error(self.f.move("mdir/empty", "mdir/full", overwrite=True), 409, "directory_not_empty")
        self.assert_error(self.f.move("m2", "mdir/empty", overwrite=True), 409, "is_a_directory")
        self.assert_error(self.f.move("mdir/empty", "m2", overwrite=True), 409, "not_a_directory")
        self.assertEqual(self.f.move("mdir", "mdir2")[0], 200)
        self.assertTrue(os.path.isfile(os.path.join(self.home, "mdir2/full/x")))


class DiskFull(TmpfsCase):
    tmpfs_size = "2m"

    def test_upload_on_a_full_disk_fails_and_keeps_the_old_file(self):
        self.server = Server(token=TOKEN, env={"SHELLCTL_LANDLOCK_RW_PATHS": self.mnt})
        f = Files(self.server)
        keep = os.path.join(self.mnt, "keep")
        self.assertEqual(f.put(keep, b"old and small")[0], 200)
        before = os.statvfs(self.mnt)
        for target in (os.path.join(self.mnt, "big"), keep):
            st, _, body = f.put(target, b"x" * (4 << 20))
            self.assertEqual((st, error_code(body)), (500, "file_io_failed"), body)
            self.assertIn("No space left on device", body["error"]["message"])
        with open(keep, "rb") as fh:
            self.assertEqual(fh.read(), b"old and small")
        self.assertEqual(sorted(os.listdir(self.mnt)), ["keep"])
        after = os.statvfs(self.mnt)
        self.assertEqual(after.f_bfree, before.f_bfree)  # the partial temporary files are gone
        # With room again, uploads work.
        self.assertEqual(f.put(os.path.join(self.mnt, "small"), b"y" * 1000)[0], 200)


if __name__ == "__main__":
    unittest.main(verbosity=2)
