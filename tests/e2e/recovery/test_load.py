"""Load: 500 run requests from 50 concurrent clients (every one succeeds, every output is
exact), and 1000 `sleep` jobs alive at once while list, get and RunEcho keep working.
No timed assertions; durations are printed for information only.
"""
import concurrent.futures
import os
import random
import time
import unittest

from harness import Server, wait_until


class LoadTest(unittest.TestCase):
    def setUp(self):
        self.server = Server()

    def tearDown(self):
        # Cleanup of many jobs: kill the test's own tmux server (and every process that
        # names the test's temp dir), not the jobs one by one.
        self.server.close()
        self.server.reap()

    def test_500_runs_from_50_clients(self):
        s = self.server

        def one(n):
            mode = "stdio" if n % 4 == 3 else "pty"
            script = f"echo job-{n}; echo sum-$(({n} * 3)); exit {n % 7}"
            res, out = s.run_to_completion(script, mode=mode, deadline=300)
            return n, res, out

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(50) as pool:
            results = list(pool.map(one, range(500)))
        print(f"500 runs / 50 clients: {time.monotonic() - t0:.1f}s")
        ids = set()
        for n, res, out in results:
            self.assertEqual((res["status"], res["exit_code"]), ("exited", n % 7), res)
            self.assertEqual(out, f"job-{n}\nsum-{n * 3}\n")
            ids.add(res["job_id"])
        self.assertEqual(len(ids), 500)
        listed = s.ok("GET", "/v1/jobs?limit=200")["jobs"]
        self.assertEqual(len(listed), 200)
        self.assertTrue(all(j["status"] == "exited" for j in listed))
        wait_until(lambda: not s.helper_processes(), 60, 0.2, "helpers to exit")

    def test_1000_sleep_jobs_alive(self):
        s = self.server

        def start(n):
            r = s.run("sleep 600", timeout=0.05)
            return r["job_id"], r["status"]

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            started = list(pool.map(start, range(1000)))
        print(f"1000 sleep jobs started in {time.monotonic() - t0:.1f}s")
        ids = [j for j, _ in started]
        self.assertEqual(len(set(ids)), 1000)
        self.assertTrue(all(st == "running" for _, st in started), started[:5])
        sessions = s.tmux_sessions()
        self.assertEqual(len([n for n in sessions if n.startswith("shellctl-")
                              and n != "shellctl-control"]), 1000)
        # list
        t0 = time.monotonic()
        listed = s.ok("GET", "/v1/jobs?limit=200")["jobs"]
        print(f"GET /v1/jobs?limit=200 with 1000 running: {time.monotonic() - t0:.3f}s")
        self.assertEqual(len(listed), 200)
        self.assertTrue(all(j["status"] == "running" for j in listed))
        self.assertTrue({j["job_id"] for j in listed} <= set(ids))
        running = s.ok("GET", "/v1/jobs?status=running&limit=200")["jobs"]
        self.assertEqual(len(running), 200)
        # get
        for job_id in random.Random(7).sample(ids, 50):
            code, body = s.status(job_id)
            self.assertEqual((code, body["status"]), (200, "running"))
            res = s.wait(job_id, 0, timeout=0)
            self.assertEqual((res["done"], res["output"]), (False, ""))
        # RunEcho keeps working, exactly.
        t0 = time.monotonic()
        for i in range(20):
            res, out = s.run_to_completion(f"echo alive-{i}")
            self.assertEqual((res["status"], res["exit_code"], out),
                             ("exited", 0, f"alive-{i}\n"))
        print(f"RunEcho x20 with 1000 running: {time.monotonic() - t0:.2f}s")
        # The server still controls them: terminate a few.
        for job_id in ids[:5]:
            t = s.ok("POST", f"/v1/jobs/{job_id}/terminate", {"grace_seconds": 1})
            self.assertEqual(t["status"], "terminated")


if __name__ == "__main__":
    unittest.main(verbosity=2)
