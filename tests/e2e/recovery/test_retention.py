"""Result retention (decision D1, docs/jobs.md "Retention").

The server runs with SHELLCTL_RESULT_RETENTION=2s and SHELLCTL_GC_INTERVAL=1s: finished
jobs disappear (404, directory and session removed), unfinished ones never do, reads do
not extend retention, and a job read while it is collected answers either its full
result or 404 job_not_found. Bad values refuse startup with a clear message.
No timed assertions: every check polls with a generous deadline.
"""
import os
import subprocess
import threading
import time
import unittest

from harness import SHELLCTL, Server, wait_until

FAST_GC = {"SHELLCTL_RESULT_RETENTION": "2s", "SHELLCTL_GC_INTERVAL": "1s"}


class RetentionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(env=FAST_GC)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        cls.server.reap()

    def assert_collected(self, job_id):
        s = self.server
        status, body = s.status(job_id)
        self.assertEqual(status, 404, body)
        self.assertEqual(body["error"]["code"], "job_not_found")
        for method, path, payload in (
                ("POST", f"/v1/jobs/{job_id}/wait", {"timeout": 0}),
                ("GET", f"/v1/jobs/{job_id}/log/tail", None),
                ("POST", f"/v1/jobs/{job_id}/input", {"text": "x"}),
                ("POST", f"/v1/jobs/{job_id}/terminate", {"grace_seconds": 0}),
                ("DELETE", f"/v1/jobs/{job_id}", None)):
            code, _, err = s.request(method, path, payload)
            self.assertEqual(code, 404, f"{method} {path}: {err}")
            self.assertEqual(err["error"]["code"], "job_not_found")
        self.assertFalse(os.path.exists(s.job_dir(job_id)), "job directory not removed")
        self.assertNotIn(f"shellctl-{job_id}", s.tmux_sessions())
        listed = [j["job_id"] for j in s.ok("GET", "/v1/jobs?limit=200")["jobs"]]
        self.assertNotIn(job_id, listed)

    def test_finished_jobs_disappear(self):
        s = self.server
        ids = []
        for script, mode, code in (("echo pty-done", "pty", 0), ("echo stdio-done; exit 4",
                                                                  "stdio", 4)):
            res, out = s.run_to_completion(script, mode=mode)
            self.assertEqual((res["status"], res["exit_code"]), ("exited", code))
            self.assertEqual(out, script.split(";")[0][5:] + "\n")
            ids.append(res["job_id"])
        # A terminated and a failed-start job are terminal too.
        r = s.run("sleep 300", timeout=0.2)
        s.ok("POST", f"/v1/jobs/{r['job_id']}/terminate", {"grace_seconds": 0})
        ids.append(r["job_id"])
        for job_id in ids:
            wait_until(lambda: s.status(job_id)[0] == 404, 60, 0.1, f"GC of {job_id}")
            self.assert_collected(job_id)

    def test_running_jobs_are_never_collected(self):
        s = self.server
        sleeper = s.run("sleep 300", timeout=0.2)["job_id"]
        reader = s.run("read line; echo got:$line", timeout=0.2)["job_id"]
        stdio = s.run("sleep 300", mode="stdio", timeout=0.2)["job_id"]
        # Finished neighbours are collected meanwhile: that proves GC ran many times.
        for i in range(3):
            done = s.run_to_completion(f"echo n{i}")[0]["job_id"]
            wait_until(lambda: s.status(done)[0] == 404, 60, 0.1, "GC of a neighbour")
        for job_id in (sleeper, reader, stdio):
            code, body = s.status(job_id)
            self.assertEqual(code, 200, body)
            self.assertEqual(body["status"], "running")
            self.assertTrue(os.path.isdir(s.job_dir(job_id)))
        # Still fully usable; once it ends, retention starts from its end.
        res = s.ok("POST", f"/v1/jobs/{reader}/input", {"text": "hello\n", "timeout": 20})
        while not res["done"]:
            res = s.wait(reader, 0, timeout=20)
        self.assertEqual(res["status"], "exited")
        self.assertIn("got:hello", res["output"])
        for job_id in (sleeper, stdio):
            s.ok("POST", f"/v1/jobs/{job_id}/terminate", {"grace_seconds": 1})
        for job_id in (sleeper, reader, stdio):
            wait_until(lambda: s.status(job_id)[0] == 404, 60, 0.1, f"GC of {job_id}")
            self.assert_collected(job_id)

    def test_reads_do_not_extend_retention(self):
        s = self.server
        res, out = s.run_to_completion("echo read-me")
        job_id = res["job_id"]
        # Read it continuously, with every kind of read; it must still go away.
        gone = False
        deadline = time.monotonic() + 60
        reads = 0
        while time.monotonic() < deadline and not gone:
            for method, path, body in (("GET", f"/v1/jobs/{job_id}", None),
                                       ("POST", f"/v1/jobs/{job_id}/wait", {"timeout": 0}),
                                       ("GET", f"/v1/jobs/{job_id}/log/tail", None),
                                       ("GET", "/v1/jobs", None)):
                code, _, data = s.request(method, path, body)
                reads += 1
                if method == "GET" and path == "/v1/jobs":
                    continue
                if code == 404:
                    self.assertEqual(data["error"]["code"], "job_not_found")
                    gone = True
                    break
                self.assertEqual(code, 200, data)
                if "output" in data:
                    self.assertEqual(data["output"], "read-me\n")
            time.sleep(0.05)
        self.assertTrue(gone, f"job still there after {reads} reads")
        self.assert_collected(job_id)

    def test_read_during_collection_is_all_or_nothing(self):
        """Hammer a finishing job with reads across its collection: every answer is the
        complete result or 404 job_not_found, never a partial or 500."""
        s = self.server
        expected = "".join(f"row-{i:04d}\n" for i in range(2000))
        for mode in ("pty", "stdio"):
            res, out = s.run_to_completion(
                "i=0; while [ $i -lt 2000 ]; do printf 'row-%04d\\n' $i; i=$((i+1)); done",
                mode=mode, output_limit=524288)
            self.assertEqual(out, expected)
            job_id = res["job_id"]
            problems, answers = [], {"full": 0, "404": 0}
            stop = threading.Event()

            def reader(kind):
                while not stop.is_set():
                    if kind == "wait":
                        code, _, data = s.request("POST", f"/v1/jobs/{job_id}/wait",
                                                  {"timeout": 0, "output_limit": 524288})
                    elif kind == "tail":
                        code, _, data = s.request(
                            "GET", f"/v1/jobs/{job_id}/log/tail?output_limit=524288")
                    else:
                        code, _, data = s.request("GET", f"/v1/jobs/{job_id}")
                    if code == 404:
                        if data.get("error", {}).get("code") != "job_not_found":
                            problems.append((kind, code, data))
                        answers["404"] += 1
                        return
                    if code != 200:
                        problems.append((kind, code, data))
                        return
                    if kind in ("wait", "tail") and (data.get("output") != expected or
                                                     not data["done"]):
                        problems.append((kind, "partial", len(data.get("output", "")),
                                         data.get("status")))
                        return
                    if kind == "status" and (data["status"] != "exited" or
                                             data["offset"] != len(expected)):
                        problems.append((kind, "wrong status", data))
                        return
                    answers["full"] += 1

            threads = [threading.Thread(target=reader, args=(k,))
                       for k in ("wait", "wait", "tail", "tail", "status", "status")]
            for t in threads:
                t.start()
            try:
                wait_until(lambda: s.status(job_id)[0] == 404, 60, 0.1, "collection")
            finally:
                time.sleep(0.5)
                stop.set()
                for t in threads:
                    t.join(60)
            self.assertEqual(problems, [], mode)
            self.assertGreater(answers["full"], 0)
            self.assert_collected(job_id)


class RetentionAcrossRestartTest(unittest.TestCase):
    def test_expired_while_down_is_collected_at_startup(self):
        s = Server(env={"SHELLCTL_RESULT_RETENTION": "3s", "SHELLCTL_GC_INTERVAL": "1h"})
        try:
            res, out = s.run_to_completion("echo old")
            job_id = res["job_id"]
            # A job that finishes while the server is down: its ended_at is the runner's.
            late = s.run("sleep 1; echo late", timeout=0.1)["job_id"]
            s.kill()
            wait_until(lambda: os.path.exists(os.path.join(s.job_dir(late), ".pipe-drained")),
                       30, 0.05, "late job to finish")
            time.sleep(4.5)  # both are now past their retention
            s.start()
            # The interval is 1h, so only the startup GC can have collected them.
            for jid in (job_id, late):
                wait_until(lambda: s.status(jid)[0] == 404, 30, 0.1, "startup GC")
                self.assertFalse(os.path.exists(s.job_dir(jid)))
        finally:
            s.close()
            s.reap()

    def test_default_retention_keeps_results(self):
        # Defaults (24h / 60s): a finished job is still readable after a restart.
        s = Server()
        try:
            res, out = s.run_to_completion("echo keep; exit 2")
            s.kill()
            s.start()
            code, body = s.status(res["job_id"])
            self.assertEqual((code, body["status"], body["exit_code"]), (200, "exited", 2))
            self.assertEqual(s.wait(res["job_id"])["output"], "keep\n")
        finally:
            s.close()
            s.reap()


class BadRetentionSettingsTest(unittest.TestCase):
    def start_fails(self, name, value):
        s = Server(env={name: value}, start=False)
        s.stderr = None
        try:
            s.port = 1  # never reached
            proc = subprocess.run(s.command(), env=s.environment(), capture_output=True,
                                  text=True, timeout=30, stdin=subprocess.DEVNULL)
            return proc
        finally:
            s.close()
            s.reap()

    def test_bad_values_refuse_startup(self):
        for name in ("SHELLCTL_RESULT_RETENTION", "SHELLCTL_GC_INTERVAL"):
            for value in ("abc", "0", "0s", "-5s", "10", "1x", "5m-", "-1h30m", "9999999999h"):
                with self.subTest(name=name, value=value):
                    proc = self.start_fails(name, value)
                    self.assertNotEqual(proc.returncode, 0, proc.stderr)
                    self.assertIn(name, proc.stderr)
                    self.assertNotIn("serving on", proc.stderr)

    def test_good_values_start(self):
        for value in ("90s", "1h30m", "1.5s", "24h", "500ms"):
            with self.subTest(value=value):
                s = Server(env={"SHELLCTL_RESULT_RETENTION": value,
                                "SHELLCTL_GC_INTERVAL": value})
                try:
                    res, out = s.run_to_completion("echo fine")
                    self.assertEqual(out, "fine\n")
                finally:
                    s.close()

    def test_nothing_created_for_a_bad_value(self):
        s = Server(env={"SHELLCTL_GC_INTERVAL": "-1s"}, start=False)
        s.stderr = None
        try:
            s.port = 1
            proc = subprocess.run(s.command(), env=s.environment(), capture_output=True,
                                  text=True, timeout=30, stdin=subprocess.DEVNULL)
            self.assertNotEqual(proc.returncode, 0)
            self.assertFalse(os.path.exists(os.path.join(s.state_dir, "shellctl.db")))
        finally:
            s.close()
            s.reap()


if __name__ == "__main__":
    unittest.main(verbosity=2)
