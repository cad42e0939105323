"""Many jobs at once: 100 concurrent run-to-completion calls, each with an exact output."""
import os
import sqlite3
import threading
import unittest

from jobs_common import JobsTestCase, Server, SharedServerTestCase


class ConcurrencyTest(SharedServerTestCase):
    def run_many(self, n, mode):
        s = self.server
        results, errors = {}, []
        barrier = threading.Barrier(n)

        def worker(i):
            try:
                barrier.wait(60)
                script = (f"echo job-{i}-start\nsleep 0.$(( {i} % 7 ))\n"
                          f"echo \"job-{i}-$(( {i} * {i} ))\"\nexit $(( {i} % 5 ))\n")
                res, out = s.run_to_completion(script, mode=mode, timeout=60, deadline=600)
                results[i] = (res, out)
            except Exception as e:  # noqa: BLE001
                errors.append((i, repr(e)))
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(900)
        self.assertEqual(errors, [])
        self.assertEqual(len(results), n)
        ids = set()
        for i, (res, out) in results.items():
            self.check_result(res)
            if (res["status"], res["exit_code"]) != ("exited", i % 5):
                self.fail(f"job {i}: {res}; stored: {self.stored_reason(res['job_id'])}")
            self.assertEqual(out, f"job-{i}-start\njob-{i}-{i * i}\n", i)
            ids.add(res["job_id"])
        self.assertEqual(len(ids), n)
        listed = {j["job_id"] for j in s.ok("GET", "/v1/jobs?limit=200")["jobs"]}
        self.assertTrue(ids <= listed)
        return ids

    def stored_reason(self, job_id):
        """The row's reason and message, which no response carries: why a job ended."""
        db = sqlite3.connect(f"file:{os.path.join(self.server.state_dir, 'shellctl.db')}?mode=ro",
                             uri=True, timeout=10)
        try:
            return db.execute("SELECT status, reason, message FROM jobs WHERE job_id = ?",
                              (job_id,)).fetchone()
        finally:
            db.close()

    def test_100_concurrent_pty_jobs(self):
        ids = self.run_many(100, "pty")
        for jid in ids:
            self.server.ok("DELETE", f"/v1/jobs/{jid}")

    def test_100_concurrent_stdio_jobs(self):
        ids = self.run_many(100, "stdio")
        for jid in ids:
            self.server.ok("DELETE", f"/v1/jobs/{jid}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
