"""A run's own limits ("limits": memory_bytes, pids, cpu) over real HTTP, tmux and the
kernel's cgroup v2 controllers, and why a job they held ended (`ended.by`, `limits_hit`).

Two halves, one file:
* JobLimitsRequests runs everywhere: the body's rules (a fraction or a wrong type is
  400, an unknown field or a range 422) and, for every field whose controller this host's
  job cgroups lack, 422 naming that controller with no job made. /v1/info says what is
  available; the test holds it against the kernel's own cgroup.controllers.
* JobLimitsEnforced needs the memory, pids and cpu controllers, which this development
  machine's cgroup2 lacks (they are bound to v1 here). It runs in the qualification guest
  (`ninja -C build qualify-vm`, tests/native/qualify/vm), where systemd mounts cgroup2 with
  all three: `python3 test_job_limits.py --enforced` as root. There a memory hog is killed
  at its own memory_bytes while the server and tmux live on, a fork past `pids` is refused,
  a busy loop is throttled to its `cpu`, and the server's SHELLCTL_JOB_*_MAX are ceilings.
"""
import os
import re
import sys
import time
import unittest

from harness import Server, end_cgroup_tree, wait_until

TOKEN = "job-limits-token"
FIELDS = {"memory_bytes": "memory", "pids": "pids", "cpu": "cpu"}
ASK = {"memory_bytes": 64 << 20, "pids": 16, "cpu": 0.5}


def run_status(server, body):
    status, _, answer = server.request("POST", "/v1/jobs/run", dict({"script": "true", "timeout": 5}, **body))
    return status, answer


def job_count(server):
    return len(server.ok("GET", "/v1/jobs")["jobs"])


class JobLimitsRequests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(token=TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def assert_refused(self, body, status, code, *words):
        before = job_count(self.server)
        got, answer = run_status(self.server, body)
        self.assertEqual(got, status, answer)
        self.assertEqual(answer["error"]["code"], code, answer)
        for w in words:
            self.assertIn(w, answer["error"]["message"])
        self.assertEqual(job_count(self.server), before, "a refused run made a job")

    def test_decode_failures_are_400(self):
        for limits in ({"memory_bytes": 1.5}, {"pids": "8"}, {"cpu": "1"}, {"memory_bytes": 1e9},
                       "64M", [1], 5):
            with self.subTest(limits=limits):
                self.assert_refused({"limits": limits}, 400, "invalid_request", "Invalid JSON body")

    def test_unknown_fields_and_ranges_are_422(self):
        self.assert_refused({"limits": {"memory": 64 << 20}}, 422, "validation_error", '"memory"', "memory_bytes")
        for limits in ({"memory_bytes": 0}, {"pids": -1}, {"cpu": 0}, {"cpu": -0.5}):
            with self.subTest(limits=limits):
                self.assert_refused({"limits": limits}, 422, "validation_error", "limits.")

    def test_null_and_empty_limits_are_no_limits(self):
        for limits in (None, {}, {"memory_bytes": None}):
            with self.subTest(limits=limits):
                res, _ = self.server.run_to_completion("echo free", limits=limits)
                self.assertEqual((res["status"], res["exit_code"]), ("exited", 0), res)

    def test_info_says_what_the_job_cgroups_have(self):
        info = self.server.ok("GET", "/v1/info")["job_limits"]
        self.assertEqual(set(info), {"available", "ceilings"})
        self.assertEqual(info["ceilings"], {"memory_bytes": None, "pids": None, "cpu": None})
        # The kernel's word: the controllers the job root (the cgroup the server announced;
        # its jobs are made in it) has to pass on.
        root = re.search(r"\), cgroup (/[^,\s\"]+)", self.server.read_stderr()).group(1)
        with open(os.path.join(root, "cgroup.controllers")) as f:
            offered = set(f.read().split())
        expected = [field for field, ctl in FIELDS.items() if ctl in offered]
        self.assertEqual(info["available"], expected)

    def test_a_field_without_its_controller_is_422_naming_it(self):
        available = self.server.ok("GET", "/v1/info")["job_limits"]["available"]
        missing = [f for f in FIELDS if f not in available]
        for field in missing:
            with self.subTest(field=field):
                self.assert_refused({"limits": {field: ASK[field]}}, 422, "validation_error",
                                    FIELDS[field], "job_limits.available")
        if len(missing) == len(FIELDS):
            # All of them at once: every missing controller is named in one answer.
            self.assert_refused({"limits": ASK}, 422, "validation_error", "memory, pids, cpu")


class JobLimitsEnforced(unittest.TestCase):
    """In a job root the test makes directly under the cgroup2 root, where memory, pids and
    cpu can be passed on (the qualification guest)."""

    @classmethod
    def setUpClass(cls):
        cls.root = "/sys/fs/cgroup/shellctl-limits-test"
        os.makedirs(cls.root, exist_ok=True)
        with open("/sys/fs/cgroup/cgroup.subtree_control", "w") as f:
            f.write("+memory +pids +cpu")
        cls.server = Server(token=TOKEN, env={"SHELLCTL_CGROUP_ROOT": cls.root})

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        end_cgroup_tree(cls.root)

    def cgroup_file(self, job, name):
        with open(os.path.join(self.root, f"job-{job}", name)) as f:
            return f.read().strip()

    def alive(self, server=None):
        server = server or self.server
        self.assertEqual(server.request("GET", "/healthz", auth=False)[0], 200)
        res, out = server.run_to_completion("echo still here")
        self.assertEqual((res["exit_code"], out.strip()), (0, "still here"))

    def ended(self, job):
        a = self.server.ok("GET", f"/v1/jobs/{job}/activity")
        self.assertTrue(a["done"], a)
        return a["ended"]

    def test_info_lists_all_three(self):
        info = self.server.ok("GET", "/v1/info")["job_limits"]
        self.assertEqual(info["available"], ["memory_bytes", "pids", "cpu"])

    def test_a_memory_hog_is_killed_at_its_own_limit_and_the_server_lives_on(self):
        hog = "/usr/bin/python3 -c 'b = []\nwhile True: b.append(bytearray(8 << 20))'"
        res = self.server.ok("POST", "/v1/jobs/run", {"script": f"echo start; {hog}; echo after",
                                                       "limits": {"memory_bytes": 64 << 20}, "timeout": 0.5})
        job = res["job_id"]
        final = wait_until(lambda: (lambda s: s if s["done"] else None)(self.server.ok("GET", f"/v1/jobs/{job}")),
                           timeout=60, what="the hog's end")
        self.assertEqual(final["status"], "exited", final)
        ended = self.ended(job)
        self.assertEqual(ended["by"], "limit", ended)
        self.assertIn("memory_bytes", ended["limits_hit"])
        self.alive()
        # tmux and the server kept their lower OOM scores; the job's was high.
        self.assertEqual(self.server.ok("GET", "/v1/info")["isolation"]["oom_score_adj"]["jobs"], 800)

    def test_the_cgroup_gets_the_values_asked_for(self):
        res = self.server.ok("POST", "/v1/jobs/run", {"script": "sleep 30", "limits": ASK, "timeout": 0.5})
        job = res["job_id"]
        self.assertEqual(self.cgroup_file(job, "memory.max"), str(64 << 20))
        self.assertEqual(self.cgroup_file(job, "pids.max"), "16")
        self.assertEqual(self.cgroup_file(job, "cpu.max"), "50000 100000")
        self.server.ok("POST", f"/v1/jobs/{job}/terminate", {"grace_seconds": 0})
        self.assertEqual(self.ended(job)["by"], "terminate")

    def test_a_fork_past_pids_is_refused(self):
        script = "n=0; for i in $(seq 30); do sleep 3 2>/dev/null & done 2>/dev/null; wait; echo done"
        res, out = self.server.run_to_completion(script, mode="stdio", limits={"pids": 8})
        self.assertEqual(res["status"], "exited", res)
        ended = self.ended(res["job_id"])
        self.assertIn("pids", ended["limits_hit"], ended)
        self.alive()

    def test_a_busy_loop_is_throttled_to_its_cpu(self):
        script = "/usr/bin/python3 -c 'import time\nt = time.monotonic()\nwhile time.monotonic() - t < 2: pass'"
        start = time.monotonic()
        res, _ = self.server.run_to_completion(script, mode="stdio", limits={"cpu": 0.2})
        self.assertEqual(res["exit_code"], 0, res)
        ended = self.ended(res["job_id"])
        self.assertEqual(ended["by"], "exit")
        self.assertIn("cpu", ended["limits_hit"], ended)
        self.assertGreater(time.monotonic() - start, 1.5)

    def test_no_limits_asked_is_unlimited_and_nothing_is_hit(self):
        res, _ = self.server.run_to_completion("echo plain", mode="stdio")
        self.assertEqual(self.ended(res["job_id"]), {"by": "exit", "signal": None, "limits_hit": []})


class JobLimitsUnderCeilings(unittest.TestCase):
    """The server's SHELLCTL_JOB_*_MAX stay the ceilings: a run may ask for less, never more,
    and a run that asks for nothing gets them."""

    @classmethod
    def setUpClass(cls):
        cls.root = "/sys/fs/cgroup/shellctl-ceilings-test"
        os.makedirs(cls.root, exist_ok=True)
        with open("/sys/fs/cgroup/cgroup.subtree_control", "w") as f:
            f.write("+memory +pids +cpu")
        cls.server = Server(token=TOKEN, env={"SHELLCTL_CGROUP_ROOT": cls.root, "SHELLCTL_JOB_MEMORY_MAX": "128M",
                                              "SHELLCTL_JOB_PIDS_MAX": "64", "SHELLCTL_JOB_CPU_MAX": "100000 100000"})

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        end_cgroup_tree(cls.root)

    def test_info_names_the_ceilings(self):
        info = self.server.ok("GET", "/v1/info")["job_limits"]
        self.assertEqual(info["ceilings"], {"memory_bytes": 128 << 20, "pids": 64, "cpu": 1.0})

    def test_above_a_ceiling_is_422_and_below_is_given(self):
        for limits, word in (({"memory_bytes": 256 << 20}, "SHELLCTL_JOB_MEMORY_MAX"),
                             ({"pids": 65}, "SHELLCTL_JOB_PIDS_MAX"), ({"cpu": 1.5}, "SHELLCTL_JOB_CPU_MAX")):
            status, answer = run_status(self.server, {"limits": limits})
            self.assertEqual((status, answer["error"]["code"]), (422, "validation_error"), answer)
            self.assertIn(word, answer["error"]["message"])
        res = self.server.ok("POST", "/v1/jobs/run", {"script": "sleep 30", "timeout": 0.5,
                                                       "limits": {"memory_bytes": 64 << 20}})
        path = os.path.join(self.root, f"job-{res['job_id']}")
        with open(os.path.join(path, "memory.max")) as f:
            self.assertEqual(f.read().strip(), str(64 << 20))
        with open(os.path.join(path, "pids.max")) as f:
            self.assertEqual(f.read().strip(), "64")  # not asked: the server's
        self.server.ok("POST", f"/v1/jobs/{res['job_id']}/terminate", {"grace_seconds": 0})


if __name__ == "__main__":
    enforced = "--enforced" in sys.argv
    sys.argv = [a for a in sys.argv if a != "--enforced"]
    suite = unittest.TestSuite()
    loader = unittest.defaultTestLoader
    for case in ([JobLimitsRequests, JobLimitsEnforced, JobLimitsUnderCeilings] if enforced
                 else [JobLimitsRequests]):
        suite.addTests(loader.loadTestsFromTestCase(case))
    ok = unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful()
    sys.exit(0 if ok else 1)
