"""GET /v1/jobs/{id}/stream (docs/api.md "Live output stream"): the job's output as server-sent
events on /wait's offsets, pushed as it is written, ending with an `exit` event; resumable with
Last-Event-ID; many at once; bounded for a reader that stops reading."""
import http.client
import json
import os
import socket
import threading
import time
import unittest

from harness import Server, wait_until

TOKEN = "stream-token"


class Events:
    """A stream read incrementally (http.client undoes the chunking)."""

    def __init__(self, server, job_id, offset=None, last_event_id=None, timeout=120):
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
        path = f"/v1/jobs/{job_id}/stream" + (f"?offset={offset}" if offset is not None else "")
        headers = {"Authorization": f"Bearer {TOKEN}"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self.conn.request("GET", path, headers=headers)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = {k.lower(): v for k, v in self.resp.getheaders()}

    def next(self):
        """The next event as (name, id, data), ("comment", None, text), or None at the end."""
        fields = {}
        while True:
            line = self.resp.readline()
            if not line:
                return None
            line = line.decode().rstrip("\n")
            if line == "":
                if fields:
                    return fields.get("event"), int(fields["id"]), json.loads(fields["data"])
                continue
            if line.startswith(":"):
                return "comment", None, line[1:].strip()
            name, _, value = line.partition(": ")
            fields[name] = value

    def read_all(self):
        """(outputs, exit data) until the stream ends."""
        outputs, exit_data = [], None
        while True:
            ev = self.next()
            if ev is None:
                return outputs, exit_data
            name, ident, data = ev
            if name == "output":
                self.check_id(ident, data)
                outputs.append(data)
            elif name == "exit":
                assert ident == data["offset"], (ident, data)
                exit_data = data

    @staticmethod
    def check_id(ident, data):
        assert ident == data["next_offset"], (ident, data)

    def close(self):
        self.conn.close()


def joined(outputs, start=0):
    """The text of contiguous output events; fails on a gap or an overlap."""
    at = start
    for o in outputs:
        assert o["offset"] == at, (o["offset"], at)
        assert o["next_offset"] > o["offset"], o
        at = o["next_offset"]
    return "".join(o["output"] for o in outputs), at


# 20 MB of mixed text: ASCII, 2-, 3- and 4-byte characters, and lone invalid bytes (each
# shown as one U+FFFD, which is what Python's "replace" makes of a lone byte too).
MIXED_SCRIPT = r"""python3 - <<'PY'
import os, sys
piece = ("ascii line %d\n" + "é ü ß ☃ € 😀 日本語 " + "\n").encode()
out = sys.stdout.buffer
n = 0
i = 0
while n < 20 * 1024 * 1024:
    chunk = (b"abc %d " % i) + piece.replace(b"%d", b"%d" % i) + (b"\xff" if i % 7 == 0 else b"") + (b"\xfe\n" if i % 11 == 0 else b"")
    out.write(chunk)
    n += len(chunk)
    i += 1
    if i % 5000 == 0:
        out.flush()
PY"""


class StreamTest(unittest.TestCase):
    def setUp(self):
        self.server = Server(token=TOKEN)

    def tearDown(self):
        self.server.close()

    def log_bytes(self, job_id):
        with open(os.path.join(self.server.job_dir(job_id), "output.log"), "rb") as f:
            return f.read()

    def test_20_mb_of_mixed_utf8_arrive_exactly_on_wait_offsets(self):
        s = self.server
        job = s.run(MIXED_SCRIPT, mode="stdio", timeout=0.1)["job_id"]
        ev = Events(s, job)
        self.assertEqual(ev.status, 200)
        self.assertEqual(ev.headers["content-type"], "text/event-stream")
        outputs, exit_data = ev.read_all()
        ev.close()
        text, end = joined(outputs)
        log = self.log_bytes(job)
        self.assertGreaterEqual(len(log), 20 * 1024 * 1024)
        self.assertEqual(end, len(log))
        self.assertEqual(text, log.decode("utf-8", "replace"))
        self.assertEqual(exit_data, {"job_id": job, "status": "exited", "done": True, "exit_code": 0,
                                     "offset": len(log)})

    def test_output_is_pushed_as_it_is_written(self):
        s = self.server
        job = s.run("echo first; read _; echo second", timeout=0.5)["job_id"]
        ev = Events(s, job)
        name, _, data = ev.next()
        self.assertEqual(name, "output")
        self.assertIn("first", data["output"])
        s.ok("POST", f"/v1/jobs/{job}/input", {"text": "go\n", "timeout": 0.1})
        seen = data["output"]
        while "second" not in seen:
            name, _, data = ev.next()
            self.assertEqual(name, "output")
            seen += data["output"]
        outputs, exit_data = ev.read_all()
        self.assertEqual((exit_data["status"], exit_data["exit_code"]), ("exited", 0))
        ev.close()

    def test_resume_with_last_event_id_loses_and_repeats_nothing(self):
        s = self.server
        job = s.run("for i in $(seq 1 20000); do echo line-$i-padding-padding; done", mode="stdio",
                    timeout=30)["job_id"]
        s.wait_done(job)
        log = self.log_bytes(job)
        self.assertGreater(len(log), 5 * 64 * 1024)  # several events
        # Read three events, then go away.
        first = Events(s, job)
        got = []
        while len(got) < 3:
            name, ident, data = first.next()
            if name == "output":
                got.append(data)
        last_id = ident
        first.close()
        second = Events(s, job, offset=0, last_event_id=last_id)  # the header wins
        rest, exit_data = second.read_all()
        second.close()
        text, end = joined(got + rest)
        self.assertEqual((text.encode(), end), (log, len(log)))
        self.assertEqual(exit_data["offset"], len(log))
        # ?offset=N alone starts there too.
        third = Events(s, job, offset=last_id)
        rest3, _ = third.read_all()
        third.close()
        self.assertEqual(joined(rest3, last_id)[0].encode(), log[last_id:])

    def test_bad_offsets_and_unknown_jobs_are_refused_before_the_stream(self):
        s = self.server
        job = s.run_to_completion("printf abc", mode="stdio")[0]["job_id"]
        for path, want in ((f"/v1/jobs/{job}/stream?offset=4", (400, "invalid_offset")),
                           (f"/v1/jobs/{job}/stream?offset=-1", (400, "invalid_request")),
                           (f"/v1/jobs/{job}/stream?offset=x", (400, "invalid_request")),
                           ("/v1/jobs/0123456789abcdef/stream", (404, "job_not_found"))):
            status, _, body = s.request("GET", path)
            self.assertEqual((status, body["error"]["code"]), want, path)
        status, _, body = s.request("GET", f"/v1/jobs/{job}/stream", auth=False)
        self.assertEqual(status, 401)
        ev = Events(s, job, offset=3)  # at the end: only the exit event
        self.assertEqual(ev.read_all(), ([], {"job_id": job, "status": "exited", "done": True,
                                              "exit_code": 0, "offset": 3}))
        ev.close()

    def test_a_hundred_streams_on_one_job(self):
        s = self.server
        job = s.run("for i in $(seq 1 200); do echo row-$i; sleep 0.005; done", mode="stdio",
                    timeout=0.1)["job_id"]
        results = [None] * 100
        errors = []

        def follow(i):
            try:
                ev = Events(s, job)
                results[i] = ev.read_all()
                ev.close()
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=follow, args=(i,)) for i in range(100)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        log = self.log_bytes(job)
        for outputs, exit_data in results:
            self.assertEqual(joined(outputs)[0].encode(), log)
            self.assertEqual((exit_data["status"], exit_data["offset"]), ("exited", len(log)))

    def test_a_reader_that_stops_reading_does_not_grow_the_server(self):
        s = self.server

        def rss():
            with open(f"/proc/{s.pid}/status") as f:
                return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) * 1024

        baseline = rss()
        job = s.run("head -c 100000000 /dev/zero | tr '\\0' x", mode="stdio", timeout=0.1)["job_id"]
        sock = socket.create_connection(("127.0.0.1", s.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(f"GET /v1/jobs/{job}/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
        sock.recv(1024)  # the head and a first event; then nothing is read

        s.wait_done(job, deadline=120)
        time.sleep(1)  # the stream would be reading and queueing now if it did not wait
        # The log is 100 MB; a stream that queued it would hold all of it.
        grown = rss() - baseline
        self.assertLess(grown, 16 << 20, f"RSS grew by {grown} bytes")
        sock.close()
        # Closing ends the stream: the job can be deleted, its stream actor gone.
        wait_until(lambda: s.request("DELETE", f"/v1/jobs/{job}")[0] == 200, 20, 0.1, "delete")

    def test_every_ending_ends_the_stream_with_exit(self):
        s = self.server
        # terminated
        job = s.run("echo t; sleep 300", timeout=0.5)["job_id"]
        ev = Events(s, job)
        s.ok("POST", f"/v1/jobs/{job}/terminate", {"grace_seconds": 1})
        outputs, exit_data = ev.read_all()
        ev.close()
        self.assertEqual((exit_data["status"], exit_data["exit_code"], exit_data["done"]),
                         ("terminated", None, True))
        self.assertIn("t", joined(outputs)[0])
        # deleted while it runs (force)
        job = s.run("echo d; sleep 300", mode="stdio", timeout=0.5)["job_id"]
        ev = Events(s, job)
        s.ok("DELETE", f"/v1/jobs/{job}?force=true&grace_seconds=1")
        outputs, exit_data = ev.read_all()
        ev.close()
        self.assertEqual((exit_data["done"], exit_data["job_id"]), (True, job))
        self.assertEqual(exit_data["status"], "terminated")
        # exited with a code
        job = s.run("echo e; exit 9", mode="stdio", timeout=0.5)["job_id"]
        ev = Events(s, job)
        _, exit_data = ev.read_all()
        ev.close()
        self.assertEqual((exit_data["status"], exit_data["exit_code"]), ("exited", 9))

    def test_keepalive_on_a_quiet_job(self):
        s = self.server
        job = s.run("sleep 300", mode="stdio", timeout=0.1)["job_id"]
        ev = Events(s, job, timeout=40)
        self.assertEqual(ev.next(), ("comment", None, "keepalive"))  # after 15 s
        ev.close()
        s.ok("DELETE", f"/v1/jobs/{job}?force=true&grace_seconds=1")


if __name__ == "__main__":
    unittest.main(verbosity=2)
