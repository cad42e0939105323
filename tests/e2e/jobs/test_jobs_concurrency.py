"""Many jobs at once: 100 concurrent run-to-completion calls, each with an exact output."""
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
            self.assertEqual((res["status"], res["exit_code"]), ("exited", i % 5), (i, res))
            self.assertEqual(out, f"job-{i}-start\njob-{i}-{i * i}\n", i)
            ids.add(res["job_id"])
        self.assertEqual(len(ids), n)
        listed = {j["job_id"] for j in s.ok("GET", "/v1/jobs?limit=200")["jobs"]}
        self.assertTrue(ids <= listed)
        return ids

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
