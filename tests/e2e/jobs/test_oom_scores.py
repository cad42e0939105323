"""The job is the OOM victim, never the control plane, read from /proc over a real server:
the server, its tmux server and a job's runner keep a low oom_score_adj (-800 where the
server may lower its own; else what it inherited), every process of a job a high one (800,
or SHELLCTL_JOB_OOM_SCORE_ADJ), which the job cannot lower; /v1/info says both."""
import shutil
import subprocess
import unittest
import uuid

from harness import Server, free_port, processes_mentioning, wait_until

TOKEN = "oom-token"


def adj(pid):
    with open(f"/proc/{pid}/oom_score_adj") as f:
        return int(f.read())


def server_adj_expected():
    """-800 where the server may lower its own (CAP_SYS_RESOURCE, which root usually has);
    else it keeps what it inherited from us (this VM's root lacks that capability)."""
    with open("/proc/self/status") as f:
        caps = int(next(l for l in f if l.startswith("CapEff:")).split()[1], 16)
    return -800 if caps & (1 << 24) else adj("self")


class OomScores(unittest.TestCase):
    def test_scores_of_the_control_plane_and_of_a_job(self):
        with Server(token=TOKEN) as server:
            info = server.ok("GET", "/v1/info")
            low = server_adj_expected()
            self.assertEqual(info["isolation"]["oom_score_adj"], {"server": low, "jobs": 800})
            self.assertEqual(adj(server.proc.pid), low)
            tmux = [p for p, argv in processes_mentioning(server.tmux_socket) if argv[0] == "tmux"]
            self.assertTrue(tmux)
            for p in tmux:
                self.assertEqual(adj(p), low, p)
            mk = "oom" + uuid.uuid4().hex[:10]
            res = server.ok("POST", "/v1/jobs/run", {
                "script": f"sh -c 'sleep 600' {mk} & echo 0 > /proc/self/oom_score_adj; "
                          "cat /proc/self/oom_score_adj; echo 200 > /proc/self/oom_score_adj 2>/dev/null; "
                          "echo armed; wait",
                "timeout": 10, "idle_flush_seconds": 0.3})
            self.assertIn("armed", res["output"])
            # The script could not lower its own: Landlock leaves /proc/self/oom_score_adj
            # unwritable for a job (and no job has CAP_SYS_RESOURCE).
            self.assertIn("\n800\n", "\n" + res["output"])
            job = wait_until(lambda: [p for p, argv in processes_mentioning(mk) if argv[0] == "sh"],
                             what="the job's child")
            for p in job:
                self.assertEqual(adj(p), 800, p)
            runners = [p for p, argv in processes_mentioning(res["job_id"]) if "shellctl-runner" in argv[0]]
            self.assertTrue(runners)
            # The runner outside the job keeps the control plane's score; what it started
            # for the job (its init and everything below) has the job's.
            outer = min(runners)
            self.assertEqual(adj(outer), low)
            server.ok("POST", f"/v1/jobs/{res['job_id']}/terminate", {"grace_seconds": 0})

    def test_the_jobs_score_is_configurable_and_checked(self):
        with Server(token=TOKEN, env={"SHELLCTL_JOB_OOM_SCORE_ADJ": "300"}) as server:
            self.assertEqual(server.ok("GET", "/v1/info")["isolation"]["oom_score_adj"],
                             {"server": server_adj_expected(), "jobs": 300})
            res = server.run_to_completion("cat /proc/self/oom_score_adj", mode="stdio")
            self.assertEqual(res[1], "300\n")
        for bad in ("1001", "-1001", "high", "8OO"):
            server = Server(token=TOKEN, env={"SHELLCTL_JOB_OOM_SCORE_ADJ": bad}, start=False)
            try:
                server.port = free_port()
                env = server.environment()
                r = subprocess.run(server.command(), env=env, capture_output=True, text=True, timeout=30)
                self.assertEqual(r.returncode, 1, (bad, r.stderr))  # a config error, as for every setting
                self.assertIn("SHELLCTL_JOB_OOM_SCORE_ADJ", r.stderr)
            finally:
                shutil.rmtree(server.tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
