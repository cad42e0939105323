"""Safe retries: POST /v1/jobs/run with an `Idempotency-Key` header, over real HTTP, tmux and
the server's SQLite file.

A backend whose run request timed out on the network does not know whether the job started.
With a key, a repeat with the same key and the same body answers for the job the first
request started (as a wait from offset 0 with the repeat's own fields) and never starts a
second; the same key with another body is `422 validation_error`; a key lives as long as its
job (a restart keeps it: it is in the database; a delete frees it). Without the header,
nothing changes."""
import concurrent.futures
import json
import os
import sqlite3
import unittest
import uuid

from harness import Server, wait_until
from jobs_common import RESULT_KEYS

TOKEN = "idempotency-token"


def key():
    return "retry-" + uuid.uuid4().hex


class Idempotency(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(token=TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def run_keyed(self, body, k, server=None):
        return (server or self.server).request("POST", "/v1/jobs/run", body,
                                               headers={"Idempotency-Key": k})

    def job_ids(self):
        return {j["job_id"] for j in self.server.ok("GET", "/v1/jobs?limit=200")["jobs"]}

    def counter_file(self):
        return os.path.join(self.server.home, "runs-" + uuid.uuid4().hex)

    def test_fifty_concurrent_repeats_start_one_job(self):
        counter = self.counter_file()
        body = {"script": f"echo ran >> {counter}; echo started", "timeout": 10}
        k = key()
        before = self.job_ids()
        with concurrent.futures.ThreadPoolExecutor(50) as pool:
            answers = list(pool.map(lambda _: self.run_keyed(body, k), range(50)))
        for status, _, res in answers:
            self.assertEqual(status, 200, res)
            self.assertEqual(set(res), RESULT_KEYS)  # the ordinary JobResult, nothing added
        ids = {res["job_id"] for _, _, res in answers}
        self.assertEqual(len(ids), 1, ids)
        self.assertEqual(self.job_ids() - before, ids)
        (job_id,) = ids
        wait_until(lambda: self.server.ok("GET", f"/v1/jobs/{job_id}")["done"], what="done")
        with open(counter) as f:
            self.assertEqual(f.read(), "ran\n")  # the script ran once
        # Every answer that came after the end holds the output from offset 0.
        for _, _, res in answers:
            if res["done"]:
                self.assertIn("started", res["output"])

    def test_a_repeat_answers_as_a_wait_from_offset_zero_with_its_own_fields(self):
        k = key()
        script = "echo first-line; sleep 1; echo last-line"
        status, _, first = self.run_keyed({"script": script, "timeout": 0}, k)
        self.assertEqual(status, 200, first)
        self.assertFalse(first["done"])
        # The retry waits longer (its own timeout, output_limit, idle flush): the same job, its
        # output from offset 0, never from where the first answer stopped.
        status, _, again = self.run_keyed({"script": script, "timeout": 20, "output_limit": 4096,
                                              "idle_flush_seconds": 10}, k)
        self.assertEqual(status, 200, again)
        self.assertEqual(again["job_id"], first["job_id"])
        self.assertTrue(again["done"])
        self.assertEqual(again["exit_code"], 0)
        self.assertTrue(again["output"].startswith("first-line"), again["output"])
        self.assertIn("last-line", again["output"])
        # The env object's order is not part of the job: the same env in another order is
        # the same request.
        k2 = key()
        status, _, a = self.run_keyed({"script": "echo e", "env": {"A": "1", "B": "2"}}, k2)
        self.assertEqual(status, 200, a)
        raw = ('{"script": "echo e", "env": {"B": "2", "A": "1"}}').encode()
        status, _, b = self.server.request("POST", "/v1/jobs/run", raw_body=raw,
                                           headers={"Idempotency-Key": k2,
                                                    "Content-Type": "application/json"})
        self.assertEqual(status, 200, b)
        self.assertEqual(b["job_id"], a["job_id"])

    def test_the_same_key_for_another_job_is_refused_and_starts_nothing(self):
        k = key()
        status, _, first = self.run_keyed({"script": "echo one", "timeout": 5}, k)
        self.assertEqual(status, 200, first)
        before = self.job_ids()
        for other in ({"script": "echo two", "timeout": 5},
                      {"script": "echo one", "timeout": 5, "env": {"A": "1"}},
                      {"script": "echo one", "timeout": 5, "cwd": "/tmp"},
                      {"script": "echo one", "timeout": 5, "mode": "stdio"},
                      {"script": "echo one", "timeout": 5, "terminal": {"cols": 80, "rows": 24}}):
            status, _, res = self.run_keyed(other, k)
            self.assertEqual(status, 422, res)
            self.assertEqual(res["error"]["code"], "validation_error")
            self.assertIn("Idempotency-Key", res["error"]["message"])
            self.assertIn(first["job_id"], res["error"]["message"])
        self.assertEqual(self.job_ids(), before)

    def test_without_a_key_each_run_is_a_job(self):
        counter = self.counter_file()
        body = {"script": f"echo ran >> {counter}", "timeout": 10}
        a = self.server.ok("POST", "/v1/jobs/run", body)
        b = self.server.ok("POST", "/v1/jobs/run", body)
        self.assertNotEqual(a["job_id"], b["job_id"])
        for j in (a, b):
            wait_until(lambda: self.server.ok("GET", f"/v1/jobs/{j['job_id']}")["done"], what="done")
        with open(counter) as f:
            self.assertEqual(f.read(), "ran\nran\n")

    def test_keys_that_are_not_1_to_255_printable_ascii_are_refused(self):
        before = self.job_ids()
        # " " is empty once the head's surrounding blanks are stripped (RFC 9110).
        for bad in ("", " ", "x" * 256, "caf\u00e9", "tab\there"):
            conn_headers = {"Idempotency-Key": bad}
            try:
                status, _, res = self.server.request("POST", "/v1/jobs/run",
                                                     {"script": "echo no", "timeout": 1},
                                                     headers=conn_headers)
            except (ValueError, UnicodeEncodeError):
                # http.client refuses to send some of these itself; send the bytes raw.
                status, res = self.raw_run(bad.encode("utf-8"))
            self.assertEqual(status, 422, (bad, res))
            self.assertEqual(res["error"]["code"], "validation_error")
        self.assertEqual(self.job_ids(), before)
        status, _, res = self.run_keyed({"script": "echo ok", "timeout": 5}, "k" * 255)
        self.assertEqual(status, 200, res)
        status, _, res = self.run_keyed({"script": "echo ok", "timeout": 5}, "a b!~")
        self.assertEqual(status, 200, res)

    def raw_run(self, key_bytes):
        import socket
        body = json.dumps({"script": "echo no", "timeout": 1}).encode()
        head = (b"POST /v1/jobs/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                TOKEN.encode() + b"\r\nContent-Type: application/json\r\nIdempotency-Key: " +
                key_bytes + b"\r\nContent-Length: " + str(len(body)).encode() +
                b"\r\nConnection: close\r\n\r\n")
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=30) as s:
            s.sendall(head + body)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        head_text, _, payload = data.partition(b"\r\n\r\n")
        return int(head_text.split()[1]), json.loads(payload)

    def test_a_delete_frees_the_key(self):
        k = key()
        body = {"script": "echo once", "timeout": 5}
        status, _, first = self.run_keyed(body, k)
        self.assertEqual(status, 200, first)
        wait_until(lambda: self.server.ok("GET", f"/v1/jobs/{first['job_id']}")["done"], what="done")
        self.server.ok("DELETE", f"/v1/jobs/{first['job_id']}")
        status, _, second = self.run_keyed(body, k)
        self.assertEqual(status, 200, second)
        self.assertNotEqual(second["job_id"], first["job_id"])
        db = sqlite3.connect(os.path.join(self.server.state_dir, "shellctl.db"))
        try:
            rows = db.execute("SELECT job_id FROM run_idempotency WHERE idempotency_key = ?",
                              (k,)).fetchall()
        finally:
            db.close()
        self.assertEqual(rows, [(second["job_id"],)])


class IdempotencyAcrossRestarts(unittest.TestCase):
    def test_a_repeat_after_a_restart_answers_for_the_same_job(self):
        with Server(token=TOKEN) as server:
            k = key()
            counter = os.path.join(server.home, "runs")
            body = {"script": f"echo ran >> {counter}; echo before-restart", "timeout": 10}
            status, _, first = server.request("POST", "/v1/jobs/run", body,
                                              headers={"Idempotency-Key": k})
            self.assertEqual(status, 200, first)
            wait_until(lambda: server.ok("GET", f"/v1/jobs/{first['job_id']}")["done"], what="done")
            server.restart()
            status, _, again = server.request("POST", "/v1/jobs/run", body,
                                              headers={"Idempotency-Key": k})
            self.assertEqual(status, 200, again)
            self.assertEqual(again["job_id"], first["job_id"])
            self.assertIn("before-restart", again["output"])
            status, _, other = server.request("POST", "/v1/jobs/run", dict(body, cwd="/tmp"),
                                              headers={"Idempotency-Key": k})
            self.assertEqual(status, 422, other)
            with open(counter) as f:
                self.assertEqual(f.read(), "ran\n")
            # A key whose job the original server (which never reads the key table) deleted
            # is dropped at the next start: the same key then starts a new job.
            server.stop()
            db = sqlite3.connect(os.path.join(server.state_dir, "shellctl.db"))
            try:
                db.execute("DELETE FROM jobs WHERE job_id = ?", (first["job_id"],))
                db.commit()
            finally:
                db.close()
            server.start()
            status, _, fresh = server.request("POST", "/v1/jobs/run", body,
                                              headers={"Idempotency-Key": k})
            self.assertEqual(status, 200, fresh)
            self.assertNotEqual(fresh["job_id"], first["job_id"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
