"""Why a job ended, from the activity view of a finished job (`ended`), over real HTTP, tmux
and the kernel: an exit, the signal that ended the main process (which), a terminate; a
restart keeps what the runner recorded. Existing responses do not change: the job's row and
JobResult say `exit_code` -1 for a signal death, exactly as before. (An OOM kill, `oom`, is
read from the job cgroup's memory.events, which needs the memory controller that this
machine's cgroup2 lacks; the qualification guest has it.)"""
import unittest

from harness import Server, wait_until

TOKEN = "job-end-token"


class JobEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(token=TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def finished(self, script, **fields):
        res, _ = self.server.run_to_completion(script, **fields)
        return res

    def ended(self, job_id, server=None):
        a = (server or self.server).ok("GET", f"/v1/jobs/{job_id}/activity")
        self.assertTrue(a["done"], a)
        return a["ended"]

    def test_an_exit(self):
        for mode in ("pty", "stdio"):
            res = self.finished("exit 3", mode=mode)
            self.assertEqual(res["exit_code"], 3)
            self.assertEqual(self.ended(res["job_id"]), {"by": "exit", "signal": None, "limits_hit": []})

    def test_a_signal_names_itself_and_the_row_stays_as_it_was(self):
        for mode, sig in (("pty", "TERM"), ("stdio", "KILL"), ("stdio", "SEGV")):
            res = self.finished(f"kill -{sig} $$", mode=mode)
            self.assertEqual((res["status"], res["exit_code"]), ("exited", -1))  # as Go reports it
            self.assertEqual(self.ended(res["job_id"]), {"by": "signal", "signal": sig, "limits_hit": []})

    def test_a_running_job_has_no_end_and_a_terminate_says_so(self):
        res = self.server.ok("POST", "/v1/jobs/run", {"script": "echo armed; sleep 600", "timeout": 0.5})
        job = res["job_id"]
        self.assertIsNone(self.server.ok("GET", f"/v1/jobs/{job}/activity")["ended"])
        self.server.ok("POST", f"/v1/jobs/{job}/terminate", {"grace_seconds": 1})
        wait_until(lambda: self.server.ok("GET", f"/v1/jobs/{job}")["done"], what="terminated")
        self.assertEqual(self.ended(job)["by"], "terminate")


class JobEndAcrossRestarts(unittest.TestCase):
    def test_a_restart_keeps_the_signal(self):
        with Server(token=TOKEN) as server:
            res, _ = server.run_to_completion("kill -USR1 $$", mode="stdio")
            server.restart()
            a = server.ok("GET", f"/v1/jobs/{res['job_id']}/activity")
            self.assertEqual(a["ended"], {"by": "signal", "signal": "USR1", "limits_hit": []})


if __name__ == "__main__":
    unittest.main(verbosity=2)
