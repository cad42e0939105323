"""Faults under running jobs: the tmux server killed, the output pipe killed, the state dir
on a full tmpfs, RLIMIT_NOFILE exhausted. The server must answer clear errors, never
crash or corrupt its state, never leave a job `running` without a process, and recover
once the fault is gone.
"""
import os
import signal
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import unittest

import harness
from harness import Server, wait_until

TERMINAL = ("exited", "failed", "lost", "terminated")


def db_check(state_dir):
    con = sqlite3.connect(f"file:{state_dir}/shellctl.db?mode=ro", uri=True, timeout=10)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def assert_error_envelope(test, status, body, lo=500, hi=599):
    test.assertTrue(lo <= status <= hi, (status, body))
    test.assertIsInstance(body, dict, body)
    test.assertTrue(body.get("error", {}).get("code"), body)
    test.assertIsInstance(body["error"].get("message"), str)


class TmuxKilledTest(unittest.TestCase):
    def setUp(self):
        self.server = Server()

    def tearDown(self):
        self.server.close()
        self.server.reap()

    def test_tmux_server_killed_under_running_jobs(self):
        s = self.server
        for round_ in ("kill-server", "SIGKILL"):
            with self.subTest(round_):
                jobs = [s.run("echo a; sleep 300", timeout=2),
                        s.run("echo b; sleep 300", mode="stdio", timeout=2),
                        s.run("while :; do echo tick; sleep 0.05; done", timeout=0.3)]
                for j in jobs:
                    self.assertFalse(j["done"], j)
                if round_ == "kill-server":
                    s.tmux("kill-server")
                else:
                    pid = int(s.tmux("display-message", "-p", "#{pid}").stdout.strip())
                    os.kill(pid, signal.SIGKILL)
                for j in jobs:
                    res, out = s.wait_done(j["job_id"])
                    # The jobs died with tmux: never `running`; a runner that could still
                    # record its (signal) exit is `exited`, otherwise `lost`.
                    self.assertIn(res["status"], ("lost", "exited"), res)
                    if res["status"] == "lost":
                        self.assertIsNone(res["exit_code"])
                    else:
                        self.assertNotEqual(res["exit_code"], 0)
                # The server recovers: new jobs run, in both modes, with input.
                for mode in ("pty", "stdio"):
                    res, out = s.run_to_completion("echo fresh-$((40+2))", mode=mode)
                    self.assertEqual((res["status"], res["exit_code"], out),
                                     ("exited", 0, "fresh-42\n"))
                r = s.run("read x; echo got:$x", timeout=0.5)
                res = s.ok("POST", f"/v1/jobs/{r['job_id']}/input",
                           {"text": "yes\n", "timeout": 20})
                self.assertEqual(s.wait_done(r["job_id"])[1], "yes\ngot:yes\n")
                wait_until(lambda: not s.helper_processes(), 30, 0.1, "helpers to exit")
        self.assertEqual(db_check(s.state_dir), "ok")


class PipeKilledTest(unittest.TestCase):
    def setUp(self):
        self.server = Server()

    def tearDown(self):
        self.server.close()
        self.server.reap()

    def pipe_processes(self, job_id):
        s = self.server
        return [pid for pid, argv in harness.processes_mentioning(s.job_dir(job_id))
                if "ready-file" in " ".join(argv)]

    def test_sanitizer_killed_while_job_runs(self):
        """The sanitizer dies (the pipe is that one process, so nobody else writes a marker;
        the server sees output.log closed and writes .pipe-failed): the job is `failed`
        (pipe_failed), not left running with nobody capturing its output."""
        s = self.server
        r = s.run("echo start; sleep 300", timeout=2)
        # The pipe is one process: the sanitizer the pipe's `sh -c` exec'd.
        pipe = [argv[0] for pid, argv in harness.processes_mentioning(s.job_dir(r["job_id"]))
                if "ready-file" in " ".join(argv)]
        self.assertEqual(len(pipe), 1, pipe)
        self.assertTrue(pipe[0].endswith("shellctl-sanitize-pty"), pipe)
        for pid, argv in harness.processes_mentioning(s.job_dir(r["job_id"])):
            if argv[0].endswith("shellctl-sanitize-pty"):
                os.kill(pid, signal.SIGKILL)
        res, out = s.wait_done(r["job_id"])
        self.assertEqual(res["status"], "failed")
        self.assertIsNone(res["exit_code"])
        self.assertEqual(out, "start\n")

    def test_whole_pipe_killed_then_job_exits(self):
        """The pipe's shell and sanitizer are SIGKILLed (no marker is written); the job then
        exits. D8: it must not stay `running`; its exit code is recorded."""
        s = self.server
        r = s.run("echo start; sleep 1.5; exit 12", timeout=0.5)
        victims = []
        for pid in self.pipe_processes(r["job_id"]):
            victims += [pid] + harness.descendants(pid)
        self.assertTrue(victims)
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        res, out = s.wait_done(r["job_id"], deadline=90)
        self.assertIn(res["status"], ("exited", "failed"), res)
        if res["status"] == "exited":
            self.assertEqual(res["exit_code"], 12)
        self.assertTrue(out.startswith("start\n"))

    def test_whole_pipe_killed_while_server_down(self):
        s = self.server
        r = s.run("echo start; sleep 1; exit 13", timeout=0.5)
        s.kill()
        for pid in self.pipe_processes(r["job_id"]):
            for p in [pid] + harness.descendants(pid):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        wait_until(lambda: os.path.exists(os.path.join(s.job_dir(r["job_id"]),
                                                       "runner-exit-code")), 30, 0.05, "exit")
        s.start()
        res, out = s.wait_done(r["job_id"], deadline=90)
        self.assertIn(res["status"], ("exited", "failed"), res)
        if res["status"] == "exited":
            self.assertEqual(res["exit_code"], 13)


@unittest.skipUnless(os.geteuid() == 0, "mounting a tmpfs needs root")
class FullDiskTest(harness.TmpfsCase):
    def fill(self):
        filler = os.path.join(self.mnt, "filler")
        st = os.statvfs(self.mnt)
        subprocess.run(["fallocate", "-l", str(st.f_bavail * st.f_frsize), filler])
        # fallocate may leave a few blocks: top up byte-wise until ENOSPC.
        f = open(os.path.join(self.mnt, "filler2"), "wb", buffering=0)
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
        finally:
            try:
                f.close()
            except OSError:
                pass
        return [filler, os.path.join(self.mnt, "filler2")]

    def test_state_dir_on_a_full_tmpfs(self):
        state = os.path.join(self.mnt, "state")
        s = self.server = Server(state_dir=state)
        done_jobs = []
        for i in range(3):
            res, out = s.run_to_completion(f"echo before-{i}; exit {i}")
            done_jobs.append((res["job_id"], f"before-{i}\n", i))
        running = s.run("echo running; sleep 300", timeout=2)
        fillers = self.fill()
        # New runs fail with a clear 5xx JSON error, or are accepted and then settle to a
        # truthful failed status; nothing hangs.
        for mode in ("pty", "stdio"):
            status, _, body = s.request("POST", "/v1/jobs/run",
                                        {"script": "echo nope", "mode": mode, "timeout": 10})
            if status == 200:
                self.assertTrue(body["done"] or body["status"] in TERMINAL or
                                s.wait_done(body["job_id"])[0]["status"] in TERMINAL, body)
                final = s.wait_done(body["job_id"])[0]
                self.assertIn(final["status"], ("failed", "exited", "lost"), final)
            else:
                assert_error_envelope(self, status, body)
        # Reads keep working, exactly.
        for job_id, out, code in done_jobs:
            res, got = s.wait_done(job_id)
            self.assertEqual((res["status"], res["exit_code"], got), ("exited", code, out))
            self.assertEqual(s.status(job_id)[0], 200)
        self.assertEqual(s.ok("GET", "/v1/jobs?limit=200")["jobs"][0]["job_id"] is not None,
                         True)
        code, body = s.status(running["job_id"])
        self.assertEqual((code, body["status"]), (200, "running"))
        self.assertEqual(s.request("GET", "/healthz", auth=False)[0], 200)
        # A running job that prints onto the full disk never stays running once it exits.
        noisy = s.request("POST", "/v1/jobs/run", {"script": "echo x", "timeout": 5})
        self.assertEqual(db_check(state), "ok")
        # Space comes back: everything works again and nothing is corrupted.
        for f in fillers:
            os.unlink(f)
        res, out = s.run_to_completion("echo after; exit 3")
        self.assertEqual((res["status"], res["exit_code"], out), ("exited", 3, "after\n"))
        s.ok("POST", f"/v1/jobs/{running['job_id']}/terminate", {"grace_seconds": 1})
        for j in s.ok("GET", "/v1/jobs?limit=200")["jobs"]:
            res, _ = s.wait_done(j["job_id"])
            self.assertIn(res["status"], TERMINAL)
        s.kill()
        s.start()
        for job_id, out, code in done_jobs:
            res, got = s.wait_done(job_id)
            self.assertEqual((res["status"], res["exit_code"], got), ("exited", code, out))
        self.assertEqual(db_check(state), "ok")

    def test_startup_on_a_full_tmpfs(self):
        """Restarting on a full disk: the server either starts and serves reads, or refuses
        with a clear message; it never loses the finished results."""
        state = os.path.join(self.mnt, "state")
        s = self.server = Server(state_dir=state)
        res, out = s.run_to_completion("echo kept")
        s.kill()
        fillers = self.fill()
        try:
            s.start()
            started = True
        except RuntimeError as e:
            started = False
            self.assertIn("shellctl", str(e))
        if started:
            r, got = s.wait_done(res["job_id"])
            self.assertEqual(got, "kept\n")
        for f in fillers:
            os.unlink(f)
        if not started:
            s.start()
        r, got = s.wait_done(res["job_id"])
        self.assertEqual((r["status"], got), ("exited", "kept\n"))
        self.assertEqual(db_check(state), "ok")


class FileDescriptorLimitTest(unittest.TestCase):
    def setUp(self):
        self.server = Server()
        self.conns = []

    def tearDown(self):
        for c in self.conns:
            c.close()
        self.server.close()
        self.server.reap()

    def nofile(self):
        with open(f"/proc/{self.server.pid}/limits") as f:
            for line in f:
                if line.startswith("Max open files"):
                    soft, hard = line.split()[3:5]
                    return int(soft), int(hard)

    def open_fds(self):
        return len(os.listdir(f"/proc/{self.server.pid}/fd"))

    def set_soft(self, soft, hard):
        subprocess.run(["prlimit", f"--pid={self.server.pid}", f"--nofile={soft}:{hard}"],
                       check=True)

    def test_descriptor_exhaustion_and_recovery(self):
        s = self.server
        res, out = s.run_to_completion("echo warm")
        running = s.run("echo r; sleep 300", timeout=2)
        old_soft, hard = self.nofile()
        base = self.open_fds()
        self.set_soft(base + 12, hard)
        try:
            # Fill the descriptor table with idle client connections.
            for _ in range(60):
                try:
                    c = socket.create_connection(("127.0.0.1", s.port), timeout=5)
                    self.conns.append(c)
                except OSError:
                    break
            time.sleep(0.5)
            outcomes = []
            for i in range(6):
                try:
                    status, _, body = s.request("POST", "/v1/jobs/run",
                                                {"script": f"echo fd-{i}", "timeout": 10},
                                                timeout=30)
                    outcomes.append(status)
                    if status == 200:
                        final, got = s.wait_done(body["job_id"])
                        self.assertIn(final["status"], TERMINAL)
                        if final["status"] == "exited":
                            self.assertEqual(got, f"fd-{i}\n")
                    else:
                        assert_error_envelope(self, status, body)
                except (OSError, http_errors()) as e:
                    outcomes.append(type(e).__name__)
            print("outcomes under the fd limit:", outcomes, "fds:", self.open_fds(),
                  "limit:", base + 12)
            self.assertIsNone(s.proc.poll(), "the server died: " + s.read_stderr()[-2000:])
        finally:
            for c in self.conns:
                c.close()
            self.conns = []
            self.set_soft(old_soft, hard)
        # Descriptors are free again: everything works, and the running job is intact.
        wait_until(lambda: self.try_run(), 60, 0.2, "the server to serve runs again")
        for mode in ("pty", "stdio"):
            res, out = s.run_to_completion("echo again", mode=mode)
            self.assertEqual((res["status"], out), ("exited", "again\n"))
        code, body = s.status(running["job_id"])
        self.assertEqual((code, body["status"]), (200, "running"))
        t = s.ok("POST", f"/v1/jobs/{running['job_id']}/terminate", {"grace_seconds": 1})
        self.assertEqual(t["status"], "terminated")
        self.assertIsNone(s.proc.poll())

    def try_run(self):
        try:
            status, _, body = self.server.request("POST", "/v1/jobs/run",
                                                  {"script": "echo ok", "timeout": 10})
            return status == 200 and body["status"] == "exited" and body["output"] == "ok\n"
        except Exception:
            return False

    def test_spawn_fails_for_lack_of_descriptors(self):
        """Just enough descriptors to accept and answer, too few to start jobs: runs fail
        with a clear error or a truthful failed job, reads keep working."""
        s = self.server
        done, _ = s.run_to_completion("echo old")
        old_soft, hard = self.nofile()
        base = self.open_fds()
        results = []
        try:
            for margin in (4, 2, 1):
                self.set_soft(base + margin, hard)
                for i in range(2):
                    results.append((margin, self.tight_run()))
            print("runs with base+4/2/1 descriptors:", results)
            self.assertIsNone(s.proc.poll(), "the server died: " + s.read_stderr()[-2000:])
        finally:
            self.set_soft(old_soft, hard)
        wait_until(lambda: self.try_run(), 60, 0.2, "runs to work again")
        res, got = s.wait_done(done["job_id"])
        self.assertEqual(got, "old\n")

    def tight_run(self):
        s = self.server
        try:
            status, _, body = s.request("POST", "/v1/jobs/run",
                                        {"script": "echo tight", "timeout": 10})
        except (OSError, http_errors()) as e:
            return type(e).__name__
        if status != 200:
            assert_error_envelope(self, status, body)
            return (status, body["error"]["code"])
        final, out = s.wait_done(body["job_id"])
        self.assertIn(final["status"], TERMINAL)
        if final["status"] == "exited":
            self.assertEqual(out, "tight\n")
        return (status, final["status"])

def http_errors():
    import http.client
    return http.client.HTTPException


if __name__ == "__main__":
    unittest.main(verbosity=2)
