"""Job control over real HTTP, tmux and the kernel (docs/api.md "Job control", "Info"): POST
/v1/jobs/{id}/signal reaches every process of the job and nothing else, POST
/v1/jobs/{id}/resize resizes the pane (stty and a SIGWINCH trap see it), GET
/v1/jobs/{id}/activity tells a prompt from a job that sleeps or computes, and GET /v1/info says
what the server serves."""
import os
import signal
import subprocess
import time
import unittest
import uuid

from harness import Server, processes_mentioning, wait_until
from jobs_common import ID_RE, RESULT_KEYS, STATUS_KEYS

TOKEN = "job-control-token"
CATCHABLE = ["INT", "TERM", "HUP", "QUIT", "USR1", "USR2", "WINCH"]


def tag():
    return "jc" + uuid.uuid4().hex[:12]


def state_of(pid):
    """The kernel's one-letter state of a process (R, S, T, ...), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def held_by_stop(pid):
    """Whether a process runs no more after a SIGSTOP to its job: stopped, gone, a zombie
    its stopped parent has not reaped, or a parent waiting in vfork() for a child the STOP
    caught before its exec (uninterruptible until the child goes on, its own STOP pending)."""
    state = state_of(pid)
    if state in ("T", "Z", None):
        return True
    if state != "D":
        return False
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return True
    pending = int(fields["SigPnd"], 16) | int(fields["ShdPnd"], 16)
    return bool(pending & (1 << (signal.SIGSTOP - 1)))


class JobControl(unittest.TestCase):
    server_env = {}

    @classmethod
    def setUpClass(cls):
        cls.server = Server(token=TOKEN, env=cls.server_env)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def start(self, script, ready, **fields):
        """Runs `script` and waits until its output holds `ready` (its traps are set)."""
        res = self.server.run(script, timeout=0.3, **fields)
        wait_until(lambda: ready in self.output(res["job_id"]), timeout=30, what=ready)
        return res["job_id"]

    def output(self, job_id):
        return self.server.wait(job_id, 0, timeout=0, output_limit=524288)["output"]

    def signal(self, job_id, sig):
        return self.server.request("POST", f"/v1/jobs/{job_id}/signal", {"signal": sig})

    def wait_done(self, job_id):
        res = self.server.wait(job_id, 0, timeout=30, output_limit=524288)
        wait_until(lambda: self.server.ok("GET", f"/v1/jobs/{job_id}")["done"], timeout=30,
                   what=f"job {job_id} done")
        return self.server.ok("GET", f"/v1/jobs/{job_id}"), res

    def traps(self, name_prefix):
        """A shell snippet that prints '<prefix>-<NAME>' for each catchable signal."""
        return " ".join(f"trap 'echo {name_prefix}-{n}' {n};" for n in CATCHABLE)

    def test_each_catchable_signal_reaches_the_script(self):
        job = self.start(self.traps("got") + " echo armed; while :; do sleep 0.05; done", "armed")
        for n in CATCHABLE:
            status, _, body = self.signal(job, n)
            self.assertEqual(status, 200, body)
            self.assertEqual(set(body), STATUS_KEYS)
            self.assertEqual(body["status"], "running")
            wait_until(lambda: f"got-{n}\n" in self.output(job), timeout=30, what=f"trap {n}")
        # Each once: neither the runner nor the job's init passes it on a second time.
        out = self.output(job)
        for n in CATCHABLE:
            self.assertEqual(out.count(f"got-{n}\n"), 1, out)
        self.signal(job, "KILL")
        self.wait_done(job)

    def test_names_with_sig_lowercase_and_numbers(self):
        job = self.start("trap 'echo got-USR1' USR1; trap 'echo got-USR2' USR2; "
                         "trap 'echo got-HUP' HUP; echo armed; while :; do sleep 0.05; done", "armed")
        for sig, expect in (("SIGUSR1", "got-USR1"), ("usr2", "got-USR2"), (int(signal.SIGHUP), "got-HUP"),
                            (str(int(signal.SIGUSR1)), "got-USR1")):
            status, _, body = self.signal(job, sig)
            self.assertEqual(status, 200, body)
            wait_until(lambda: self.output(job).count(expect) >= (2 if sig == "10" else 1),
                       timeout=30, what=f"{sig} -> {expect}")
        self.signal(job, "KILL")
        self.wait_done(job)

    def test_children_and_a_setsid_daemon_get_it_too(self):
        mk = tag()
        job = self.start(
            "trap 'echo main-USR1' USR1; "
            "(trap 'echo child-USR1' USR1; echo child-armed; while :; do sleep 0.05; done) & "
            f"setsid sh -c 'trap \"echo daemon-USR1\" USR1; echo daemon-armed; "
            f"while :; do sleep 0.05; done' {mk} & "
            "sleep 0.3; echo armed; while :; do sleep 0.05; done", "armed")
        wait_until(lambda: "daemon-armed" in self.output(job) and "child-armed" in self.output(job),
                   timeout=30, what="children armed")
        self.assertEqual(self.signal(job, "USR1")[0], 200)
        for who in ("main", "child", "daemon"):
            wait_until(lambda: f"{who}-USR1" in self.output(job), timeout=30, what=who)
        # KILL reaches all of them: the daemon that left the session is gone too.
        self.assertEqual(self.signal(job, "KILL")[0], 200)
        row, _ = self.wait_done(job)
        self.assertEqual(row["status"], "exited")
        self.assertEqual(row["exit_code"], -1)  # killed by a signal: -1, as Go reports it
        wait_until(lambda: not processes_mentioning(mk), timeout=30, what="the daemon gone")

    def test_stop_then_cont(self):
        mk = tag()
        job = self.start(f"echo armed; exec sh -c 'while :; do sleep 0.05; done' {mk}", "armed")
        pids = wait_until(lambda: [p for p, _ in processes_mentioning(mk)], timeout=30, what="pids")
        self.assertEqual(self.signal(job, "STOP")[0], 200)
        wait_until(lambda: all(held_by_stop(p) for p in pids), timeout=30, what="stopped")
        self.assertEqual(self.server.ok("GET", f"/v1/jobs/{job}")["status"], "running")
        self.assertEqual(self.signal(job, "CONT")[0], 200)
        wait_until(lambda: all(state_of(p) not in ("T",) for p in pids), timeout=30, what="continued")
        self.assertEqual(self.signal(job, "TERM")[0], 200)
        row, _ = self.wait_done(job)
        self.assertEqual(row["status"], "exited")

    def test_nothing_outside_the_job_is_signalled(self):
        """Escape test: another job, and a process of the same user outside every job, keep
        running through a KILL sent to a job."""
        mk = tag()
        # Its own session, no stream of ours: killed as a group below, nothing of it may
        # outlive the test holding the test runner's pipes.
        outside = subprocess.Popen(["sh", "-c", "sleep 600; true", mk], start_new_session=True,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        try:
            other = self.start("trap 'echo other-USR1' USR1; echo armed; while :; do sleep 0.05; done",
                               "armed")
            job = self.start("echo armed; while :; do sleep 0.05; done", "armed")
            self.assertEqual(self.signal(job, "USR1")[0], 200)
            self.assertEqual(self.signal(job, "KILL")[0], 200)
            self.wait_done(job)
            self.assertIsNone(outside.poll())
            self.assertEqual(self.server.ok("GET", f"/v1/jobs/{other}")["status"], "running")
            self.assertNotIn("other-USR1", self.output(other))
            self.signal(other, "KILL")
            self.wait_done(other)
        finally:
            os.killpg(outside.pid, signal.SIGKILL)
            outside.wait()

    def test_refusals(self):
        status, _, body = self.signal("0123456789abcdef", "INT")
        self.assertEqual(status, 404, body)
        self.assertEqual(body["error"]["code"], "job_not_found")
        job = self.start("echo armed; while :; do sleep 0.05; done", "armed")
        for bad in ("SEGV", "", 11, 0, "SIGFOO", 2.5, None, ["INT"]):
            status, _, body = self.signal(job, bad)
            self.assertEqual(status, 422, (bad, body))
            self.assertEqual(body["error"]["code"], "validation_error")
        status, _, body = self.server.request("POST", f"/v1/jobs/{job}/signal", raw_body=b"{nope",
                                              headers={"Content-Type": "application/json"})
        self.assertEqual(status, 400, body)
        self.assertEqual(body["error"]["code"], "invalid_request")
        self.assertEqual(self.server.request("POST", f"/v1/jobs/{job}/signal", {"signal": "INT"},
                                             auth=False)[0], 401)
        self.assertEqual(self.server.ok("GET", f"/v1/jobs/{job}")["status"], "running")
        self.signal(job, "KILL")
        self.wait_done(job)
        status, _, body = self.signal(job, "INT")
        self.assertEqual(status, 409, body)
        self.assertEqual(body["error"]["code"], "job_not_running")

    def test_a_stdio_job_takes_signals_too(self):
        job = self.start("trap 'echo got-TERM; exit 3' TERM; echo armed; while :; do sleep 0.05; done",
                         "armed", mode="stdio")
        self.assertEqual(self.signal(job, "TERM")[0], 200)
        row, res = self.wait_done(job)
        self.assertEqual(row["status"], "exited")
        self.assertEqual(row["exit_code"], 3)
        self.assertIn("got-TERM", self.output(job))

    # -- resize ------------------------------------------------------------------------
    def test_resize_changes_stty_size_and_fires_sigwinch(self):
        job = self.start("trap 'echo \"winch $(stty size)\"' WINCH; echo \"size $(stty size)\"; "
                         "echo armed; while :; do sleep 0.05; done", "armed",
                         terminal={"cols": 100, "rows": 30})
        self.assertIn("size 30 100", self.output(job))
        status, _, body = self.server.request("POST", f"/v1/jobs/{job}/resize", {"cols": 132, "rows": 43})
        self.assertEqual(status, 200, body)
        self.assertEqual(set(body), STATUS_KEYS)
        self.assertTrue(ID_RE.match(body["job_id"]))
        wait_until(lambda: "winch 43 132" in self.output(job), timeout=30, what="SIGWINCH")
        self.assertEqual(self.server.tmux("display-message", "-p", "-t", f"shellctl-{job}:0.0",
                                          "#{pane_width}x#{pane_height}").stdout.strip(), "132x43")
        self.server.request("POST", f"/v1/jobs/{job}/signal", {"signal": "KILL"})
        self.wait_done(job)
        status, _, body = self.server.request("POST", f"/v1/jobs/{job}/resize", {"cols": 80, "rows": 24})
        self.assertEqual(status, 409, body)
        self.assertEqual(body["error"]["code"], "job_not_running")

    def test_resize_refusals(self):
        job = self.start("echo armed; while :; do sleep 0.05; done", "armed", mode="stdio")
        status, _, body = self.server.request("POST", f"/v1/jobs/{job}/resize", {"cols": 80, "rows": 24})
        self.assertEqual(status, 409, body)
        self.assertEqual(body["error"]["code"], "resize_unsupported")
        for bad in ({"cols": 0, "rows": 24}, {"cols": 80, "rows": 4097}, {"cols": 80}, {}):
            status, _, body = self.server.request("POST", f"/v1/jobs/{job}/resize", bad)
            self.assertEqual(status, 422, (bad, body))
            self.assertEqual(body["error"]["code"], "validation_error")
        # The wrong type is a decode failure, as on every route (range errors stay 422).
        for bad in ({"cols": "80", "rows": 24}, {"cols": 80.5, "rows": 24}):
            status, _, body = self.server.request("POST", f"/v1/jobs/{job}/resize", bad)
            self.assertEqual((status, body["error"]), (400, {"code": "invalid_request", "message": "Invalid JSON body"}), bad)
        status, _, body = self.server.request("POST", "/v1/jobs/0123456789abcdef/resize",
                                              {"cols": 80, "rows": 24})
        self.assertEqual(status, 404, body)
        self.signal(job, "KILL")
        self.wait_done(job)

    # -- activity ------------------------------------------------------------------------
    ACTIVITY_KEYS = {"job_id", "status", "done", "offset", "waiting_for_input", "idle_seconds",
                     "foreground", "terminal", "processes", "ended"}

    def activity(self, job_id, query=""):
        status, _, body = self.server.request("GET", f"/v1/jobs/{job_id}/activity{query}")
        self.assertEqual(status, 200, body)
        self.assertEqual(set(body), self.ACTIVITY_KEYS)
        return body

    def assert_waits(self, script, command, **fields):
        job = self.start(f"echo armed; {script}", "armed", **fields)
        a = wait_until(lambda: (lambda b: b if b["waiting_for_input"] else None)(self.activity(job)),
                       timeout=30, what=f"{script!r} waiting for input")
        self.assertEqual(a["status"], "running")
        self.assertFalse(a["done"])
        self.assertEqual(a["foreground"]["command"], command)
        self.assertIsInstance(a["foreground"]["pid"], int)
        self.assertGreaterEqual(a["idle_seconds"], 0.5)
        self.assertGreaterEqual(a["processes"], 1)
        self.assertEqual(a["terminal"], {"cols": 200, "rows": 50})
        self.signal(job, "KILL")
        self.wait_done(job)

    def assert_never_waits(self, script):
        job = self.start(f"echo armed; {script}", "armed")
        # Quiet for well over the idle flush, and still not waiting: checked several times.
        wait_until(lambda: self.activity(job)["idle_seconds"] >= 1.0, timeout=30, what="quiet")
        for _ in range(5):
            a = self.activity(job)
            self.assertFalse(a["waiting_for_input"], (script, a))
            self.assertIsNotNone(a["foreground"])
        self.signal(job, "KILL")
        self.wait_done(job)

    def test_a_shell_read_waits_for_input(self):
        self.assert_waits("read -r x", "sh")

    def test_python_input_waits_for_input(self):
        self.assert_waits("exec python3 -c 'input()'", "python3")

    def test_a_prompt_reading_dev_tty_waits_for_input(self):
        # Like sudo's password prompt: stdin elsewhere, the prompt reads /dev/tty.
        self.assert_waits("exec python3 -c \"import sys; sys.stdout.write('Password: '); sys.stdout.flush(); "
                          "open('/dev/tty').readline()\" < /dev/null", "python3")

    def test_cat_with_no_input_waits(self):
        self.assert_waits("exec cat", "cat")

    def test_a_busy_loop_and_a_sleep_do_not_wait(self):
        self.assert_never_waits("while :; do :; done")
        self.assert_never_waits("sleep 30")

    def test_a_reader_whose_job_still_prints_is_not_waiting(self):
        job = self.start("(while :; do echo tick; sleep 0.1; done) & echo armed; read -r x", "armed")
        for _ in range(5):
            a = self.activity(job, "?idle_flush_seconds=5")
            self.assertFalse(a["waiting_for_input"], a)
            self.assertLess(a["idle_seconds"], 5)
            self.assertGreaterEqual(a["processes"], 2)
        self.signal(job, "KILL")
        self.wait_done(job)

    def test_typing_the_answer_ends_the_wait(self):
        job = self.start("echo armed; read -r x; echo \"got $x\"; sleep 30", "armed")
        wait_until(lambda: self.activity(job)["waiting_for_input"], timeout=30, what="waiting")
        self.server.ok("POST", f"/v1/jobs/{job}/input", {"text": "yes\n", "timeout": 0.5})
        wait_until(lambda: "got yes" in self.output(job), timeout=30, what="the answer read")
        wait_until(lambda: not self.activity(job)["waiting_for_input"], timeout=30, what="not waiting")
        self.assertEqual(self.activity(job)["foreground"]["command"], "sleep")
        self.signal(job, "KILL")
        self.wait_done(job)

    def test_activity_of_stdio_and_finished_jobs(self):
        job = self.start("echo armed; read -r x; sleep 30", "armed", mode="stdio")
        a = self.activity(job)
        self.assertFalse(a["waiting_for_input"])  # no terminal to wait on
        self.assertIsNone(a["foreground"])
        self.assertIsNone(a["terminal"])
        self.assertGreaterEqual(a["processes"], 1)
        self.signal(job, "KILL")
        self.wait_done(job)
        a = self.activity(job)
        self.assertTrue(a["done"])
        self.assertEqual((a["waiting_for_input"], a["processes"], a["foreground"], a["terminal"]),
                         (False, 0, None, None))
        self.assertEqual(a["ended"], {"by": "signal", "signal": "KILL", "limits_hit": []})
        status, _, body = self.server.request("GET", "/v1/jobs/0123456789abcdef/activity")
        self.assertEqual(status, 404, body)
        status, _, body = self.server.request("GET", f"/v1/jobs/{job}/activity?idle_flush_seconds=-1")
        self.assertEqual(status, 422, body)

    def test_wait_returns_early_on_an_input_wait_only_when_asked(self):
        job = self.start("echo armed; read -r x; echo \"got $x\"", "armed")
        offset = self.server.wait(job, 0, timeout=0)["offset"]
        t0 = time.monotonic()
        res = self.server.ok("POST", f"/v1/jobs/{job}/wait",
                             {"offset": offset, "timeout": 50, "return_on_input_wait": True}, timeout=120)
        self.assertLess(time.monotonic() - t0, 45)  # well before its timeout
        self.assertFalse(res["done"])
        self.assertEqual(res["status"], "running")
        self.assertEqual((res["output"], res["offset"]), ("", offset))
        self.assertEqual(set(res), RESULT_KEYS)  # the ordinary JobResult, unchanged
        # The same wait without the field waits for output or its timeout, as it always did.
        t0 = time.monotonic()
        res = self.server.wait(job, offset, timeout=1.5)
        self.assertGreaterEqual(time.monotonic() - t0, 1.4)
        self.assertEqual(res["output"], "")
        self.signal(job, "KILL")
        self.wait_done(job)

    def test_input_returns_when_the_next_prompt_waits(self):
        # No echo and no output: only the input wait can end the long-poll early.
        job = self.start("stty -echo; echo armed; read -r a; read -r b; echo \"got $a $b\"", "armed")
        offset = self.server.wait(job, 0, timeout=0)["offset"]
        t0 = time.monotonic()
        res = self.server.ok("POST", f"/v1/jobs/{job}/input",
                             {"text": "one\n", "offset": offset, "timeout": 50,
                              "return_on_input_wait": True}, timeout=120)
        self.assertLess(time.monotonic() - t0, 45)
        self.assertFalse(res["done"])
        self.assertEqual(res["output"], "")
        self.server.ok("POST", f"/v1/jobs/{job}/input", {"text": "two\n", "timeout": 1})
        final, _ = self.wait_done(job)
        self.assertEqual(final["status"], "exited")
        self.assertIn("got one two", self.output(job))
        status, _, body = self.server.request("POST", f"/v1/jobs/{job}/wait",
                                              {"offset": 0, "return_on_input_wait": "yes"})
        self.assertEqual(status, 400, body)

    # -- /v1/info ------------------------------------------------------------------------
    def test_info(self):
        self.assertEqual(self.server.request("GET", "/v1/info", auth=False)[0], 401)
        info = self.server.ok("GET", "/v1/info")
        self.assertEqual(set(info), {"version", "api", "isolation", "limits", "job_limits"})
        self.assertTrue(info["version"])
        self.assertEqual(info["api"], ["jobs", "snapshot", "files", "stream", "resize", "signal",
                                       "activity", "ports"])
        # Root with a writable cgroup2 here: containment is on (docs/jobs.md "Containment"; the
        # fallback is tested in test_job_containment.py).
        self.assertEqual(info["isolation"]["cgroup"], "v2")
        self.assertIsInstance(info["isolation"]["landlock_abi"], int)
        self.assertGreater(info["isolation"]["landlock_abi"], 0)
        self.assertEqual(info["limits"], {"timeout_max": 600, "output_limit_max": 524288})
        # The OpenAPI document names the new routes too.
        paths = self.server.ok("GET", "/openapi.json")["paths"]
        for p in ("/v1/info", "/v1/jobs/{job_id}/signal", "/v1/jobs/{job_id}/resize",
                  "/v1/jobs/{job_id}/activity"):
            self.assertIn(p, paths)


class JobControlWithoutNamespaces(JobControl):
    """The original's unsandboxed jobs: no PID namespace, so a daemon that calls setsid()
    leaves the pane's session and group; the job's cgroup (containment) still holds it, and the
    inherited test shows the signal reaching it."""
    server_env = {"SHELLCTL_ENABLE_PATH_ISOLATION": "false", "SHELLCTL_JOB_NAMESPACES": "off"}

    def test_info(self):
        info = self.server.ok("GET", "/v1/info")
        self.assertIsNone(info["isolation"]["landlock_abi"])  # no path isolation: no Landlock


if __name__ == "__main__":
    unittest.main(verbosity=2)
