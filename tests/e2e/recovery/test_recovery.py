"""Crash recovery (decision D8, docs/jobs.md "Recovery after a restart"). Every kill is a real
SIGKILL of the server; the restart uses the same state dir (and the tmux server that survived).

After each restart every job must settle to a truthful status with its exact output and
exit code, running jobs stay fully usable (wait, input, terminate), and no runner,
sanitizer or runner-exit process of the test's state dir is left waiting.
"""
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
import unittest

import harness
from harness import Server, wait_until

COUNT_SCRIPT = ("i=0; while [ $i -lt 25 ]; do echo line-$i; i=$((i+1)); sleep 0.1; done; "
                "exit 7")
COUNT_OUTPUT = "".join(f"line-{i}\n" for i in range(25))


def db_check(server):
    """PRAGMA integrity_check on the server's database (read-only)."""
    con = sqlite3.connect(f"file:{server.state_dir}/shellctl.db?mode=ro", uri=True, timeout=10)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def db_rows(server):
    con = sqlite3.connect(f"file:{server.state_dir}/shellctl.db?mode=ro", uri=True, timeout=10)
    try:
        return {r[0]: r[1:] for r in con.execute(
            "SELECT job_id, status, exit_code FROM jobs")}
    finally:
        con.close()


class RecoveryCase(unittest.TestCase):
    def setUp(self):
        self.server = Server()

    def tearDown(self):
        self.server.close()
        self.server.reap()

    def assert_no_helpers(self, timeout=30):
        s = self.server
        try:
            wait_until(lambda: not s.helper_processes(), timeout, 0.1, "helpers to exit")
        except AssertionError:
            self.fail(f"helper processes left waiting: {s.helper_processes()}")

    def assert_settled_everywhere(self):
        """Every row is terminal, the DB is intact, tmux has no job session left."""
        s = self.server
        self.assertEqual(db_check(s), "ok")
        jobs = s.ok("GET", "/v1/jobs?limit=200")["jobs"]
        for j in jobs:
            self.assertIn(j["status"], ("exited", "failed", "lost", "terminated"), j)
        wait_until(lambda: not [n for n in s.tmux_sessions() if n != "shellctl-control"],
                   30, 0.1, "job sessions to end")
        self.assert_no_helpers()


class KillWhileRunningTest(RecoveryCase):
    def test_printing_jobs_survive_a_sigkill(self):
        """(b) SIGKILL while jobs run and print: after the restart their output is exact
        (read across the crash with the same offsets) and the exit code is the script's."""
        s = self.server
        pty = s.run(COUNT_SCRIPT, timeout=0.3)
        stdio = s.run(COUNT_SCRIPT, mode="stdio", timeout=0.3)
        before = {}
        for r in (pty, stdio):
            self.assertFalse(r["done"], r)
            before[r["job_id"]] = (r["offset"], r["output"])
        s.kill()
        time.sleep(0.5)  # the jobs keep printing while the server is down
        s.start()
        for r in (pty, stdio):
            job_id = r["job_id"]
            offset, got = before[job_id]
            out = [got]
            while True:
                res = s.wait(job_id, offset, timeout=30)
                out.append(res["output"])
                offset = res["offset"]
                if res["done"] and not res["truncated"]:
                    break
            self.assertEqual("".join(out), COUNT_OUTPUT, job_id)
            self.assertEqual((res["status"], res["exit_code"]), ("exited", 7))
            self.assertEqual(s.wait_done(job_id)[1], COUNT_OUTPUT)
        self.assert_settled_everywhere()

    def test_running_jobs_stay_usable_after_restart(self):
        """(b) wait, input and terminate work on jobs started by the previous process."""
        s = self.server
        reader = s.run("echo ready; read line; echo got:$line; exit 3", timeout=5)
        self.assertEqual(reader["output"], "ready\n")
        sleeper = s.run("echo sleeping; sleep 300", timeout=5)
        stdio_sleeper = s.run("echo s; sleep 300", mode="stdio", timeout=5)
        s.kill()
        s.start()
        for r in (reader, sleeper, stdio_sleeper):
            code, body = s.status(r["job_id"])
            self.assertEqual((code, body["status"]), (200, "running"), body)
        res = s.ok("POST", f"/v1/jobs/{reader['job_id']}/input",
                   {"text": "hello\n", "offset": reader["offset"], "timeout": 20})
        while not res["done"]:
            res = s.wait(reader["job_id"], 0, timeout=20)
        res, out = s.wait_done(reader["job_id"])
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 3))
        self.assertEqual(out, "ready\nhello\ngot:hello\n")
        # A second crash and restart: terminate still reaches the job's processes.
        s.kill()
        s.start()
        for r in (sleeper, stdio_sleeper):
            t = s.ok("POST", f"/v1/jobs/{r['job_id']}/terminate", {"grace_seconds": 2})
            self.assertEqual((t["status"], t["done"]), ("terminated", True))
            self.assertIsNone(t["exit_code"])
            self.assertNotIn(f"shellctl-{r['job_id']}", s.tmux_sessions())
        # terminate sends C-c; the terminal echoes it as "^C".
        self.assertIn(s.wait_done(sleeper["job_id"])[1], ("sleeping\n", "sleeping\n^C"))
        self.assertEqual(s.wait_done(stdio_sleeper["job_id"])[1], "s\n")
        self.assert_settled_everywhere()

    def test_long_poll_open_across_the_crash(self):
        """A client whose long-poll died with the server just asks again."""
        s = self.server
        r = s.run("sleep 1.5; echo late; exit 4", timeout=0.1)
        errors = []

        def poll():
            try:
                s.wait(r["job_id"], 0, timeout=20)
            except Exception as e:  # the connection dies with the server
                errors.append(e)

        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.3)
        s.kill()
        t.join(30)
        s.start()
        res, out = s.wait_done(r["job_id"])
        self.assertEqual((res["status"], res["exit_code"], out), ("exited", 4, "late\n"))
        self.assert_settled_everywhere()


class KillAfterExitUnseenTest(RecoveryCase):
    def test_exit_while_server_stopped(self):
        """(c) The job exits while the server is SIGSTOPped, then the server is SIGKILLed:
        the restart reports the exit with the recorded code and the full output."""
        s = self.server
        script = "sleep 1; i=0; while [ $i -lt 300 ]; do echo out-$i; i=$((i+1)); done; exit 5"
        expected = "".join(f"out-{i}\n" for i in range(300))
        pty = s.run(script, timeout=0.1)
        stdio = s.run(script, mode="stdio", timeout=0.1)
        os.kill(s.pid, signal.SIGSTOP)
        try:
            wait_until(lambda: os.path.exists(os.path.join(s.job_dir(pty["job_id"]),
                                                           ".pipe-drained")), 30, 0.02,
                       "pty job to finish")
            wait_until(lambda: os.path.exists(os.path.join(s.job_dir(stdio["job_id"]),
                                                           "runner-exit-code")), 30, 0.02,
                       "stdio job to finish")
            wait_until(lambda: not s.helper_processes(), 30, 0.05, "helpers to exit")
        finally:
            s.kill()
        s.start()
        for r in (pty, stdio):
            res, out = s.wait_done(r["job_id"])
            self.assertEqual((res["status"], res["exit_code"]), ("exited", 5), r["job_id"])
            self.assertEqual(out, expected)
            code, body = s.status(r["job_id"])
            ended = open(os.path.join(s.job_dir(r["job_id"]), "runner-ended-at")).read().strip()
            self.assertEqual(body["ended_at"], ended)
        self.assert_settled_everywhere()

    def test_exit_while_server_down(self):
        """(c) The job exits while no server runs at all (and runner-exit has no server to
        tell); the restart reports it with its code, output and the runner's ended_at."""
        s = self.server
        pty = s.run("sleep 0.8; echo bye; exit 9", timeout=0.1)
        stdio = s.run("sleep 0.8; echo bye; exit 10", mode="stdio", timeout=0.1)
        killed = s.run("sleep 0.8; kill -9 $$", timeout=0.1)
        s.kill()
        wait_until(lambda: not s.helper_processes(), 30, 0.05, "jobs to finish")
        s.start()
        for r, code in ((pty, 9), (stdio, 10)):
            res, out = s.wait_done(r["job_id"])
            self.assertEqual((res["status"], res["exit_code"], out), ("exited", code, "bye\n"))
        res, _ = s.wait_done(killed["job_id"])
        self.assertEqual((res["status"], res["exit_code"]), ("exited", -1))
        self.assert_settled_everywhere()

    def test_session_gone_without_artifacts_is_lost(self):
        """While the server is down the job's session is killed (no exit artifacts): the
        restart reports lost, never running."""
        s = self.server
        pty = s.run("echo x; sleep 300", timeout=2)
        stdio = s.run("echo y; sleep 300", mode="stdio", timeout=2)
        s.kill()
        # SIGKILL every process of both jobs (runner, script, pipe, sanitizer): nobody is
        # left to write exit artifacts, and the sessions close.
        for r in (pty, stdio):
            for pid, _ in harness.processes_mentioning(s.job_dir(r["job_id"])):
                for kill in (lambda: os.killpg(os.getpgid(pid), signal.SIGKILL),
                             lambda: os.kill(pid, signal.SIGKILL)):
                    try:
                        kill()
                    except ProcessLookupError:
                        pass
        for r in (pty, stdio):
            wait_until(lambda: f"shellctl-{r['job_id']}" not in s.tmux_sessions(), 20, 0.05,
                       "the session to close")
            self.assertFalse(os.path.exists(os.path.join(s.job_dir(r["job_id"]),
                                                         "runner-exit-code")))
        s.start()
        for r in (pty, stdio):
            res, _ = s.wait_done(r["job_id"])
            self.assertEqual(res["status"], "lost")
            self.assertIsNone(res["exit_code"])
        self.assert_settled_everywhere()


class KillDuringStartTest(RecoveryCase):
    def kill_right_after_accepting(self, mode, delay):
        """(a) One run request; SIGKILL as soon as its job directory appears (+ delay)."""
        s = self.server
        token = f"ran-{mode}-{delay}-{time.time_ns()}"
        jobs_dir = os.path.join(s.state_dir, "jobs")
        known = set(os.listdir(jobs_dir))
        result = {}

        def send():
            try:
                result["res"] = s.run(f'touch "$HOME/{token}"; echo begin; sleep 0.5; '
                                      'echo end-$((6*7)); exit 3', mode=mode, timeout=20)
            except Exception as e:
                result["error"] = e

        t = threading.Thread(target=send)
        t.start()
        new = wait_until(lambda: set(os.listdir(jobs_dir)) - known, 30, 0.0005,
                         "the job directory")
        if delay:
            time.sleep(delay)
        s.kill()
        t.join(60)
        (job_id,) = new
        s.start()
        code, body = s.status(job_id)
        if code == 404:
            self.assertEqual(body["error"]["code"], "job_not_found")
            # No row: nothing of the job may remain.
            wait_until(lambda: not os.path.exists(s.job_dir(job_id)), 20, 0.1,
                       f"orphan directory of {job_id} (no DB row) to be removed")
            return "absent"
        res, out = s.wait_done(job_id)
        if res["status"] == "exited":
            self.assertEqual((res["exit_code"], out), (3, "begin\nend-42\n"))
        else:
            # It never ran: nothing was printed, and that is the truth.
            self.assertIn(res["status"], ("lost", "failed"), res)
            self.assertEqual(out, "")
            time.sleep(0.3)
            self.assertFalse(os.path.exists(os.path.join(s.home, token)),
                             f"{res['status']} but the script ran")
        return res["status"]

    def test_sigkill_right_after_accepting_a_run(self):
        outcomes = []
        for i, delay in enumerate((0, 0, 0.001, 0.002, 0.004, 0.008, 0.015, 0.03, 0.06, 0.15)):
            mode = "pty" if i % 2 == 0 else "stdio"
            with self.subTest(mode=mode, delay=delay):
                outcomes.append((mode, delay, self.kill_right_after_accepting(mode, delay)))
        print("outcomes:", outcomes)
        self.assert_settled_everywhere()

    def test_interrupted_start_with_slow_pipe(self):
        """Deterministic half-way start: the session and runner exist, the runner waits at
        its start gate (the sanitizer is slow to report ready) when the server dies."""
        slow = SlowSanitizerServer(delay=2)
        try:
            for kill_pipe in (False, True):
                with self.subTest(kill_pipe=kill_pipe):
                    self.interrupted_start(slow, kill_pipe)
            wait_until(lambda: not slow.helper_processes(), 30, 0.1, "helpers to exit")
        finally:
            slow.close()

    def interrupted_start(self, s, kill_pipe):
        token = f"ran-{kill_pipe}-{time.time_ns()}"
        jobs_dir = os.path.join(s.state_dir, "jobs")
        known = set(os.listdir(jobs_dir))
        t = threading.Thread(target=lambda: self._swallow(
            lambda: s.run(f'touch "$HOME/{token}"; echo gated; exit 6', timeout=20)))
        t.start()
        (job_id,) = wait_until(lambda: set(os.listdir(jobs_dir)) - known, 30, 0.001, "dir")
        wait_until(lambda: f"shellctl-{job_id}" in s.tmux_sessions(), 30, 0.01, "session")
        wait_until(lambda: s.tmux("display-message", "-p", "-t", f"shellctl-{job_id}:0.0",
                                  "#{pane_pipe}").stdout.strip() == "1", 30, 0.01, "pipe")
        time.sleep(0.2)  # the slow sanitizer reports ready only after its delay
        self.assertFalse(os.path.exists(os.path.join(s.job_dir(job_id), "start-gate")))
        # The fast path's step: the job's process and its sandbox are built already, and
        # only its execve waits for the gate, when the server dies.
        runner = int(s.tmux("display-message", "-p", "-t", f"shellctl-{job_id}:0.0",
                            "#{pane_pid}").stdout.strip())
        wait_until(lambda: harness.process_at_gate_latch(runner), 30, 0.01, "the job at the latch")
        s.kill()
        t.join(30)
        if kill_pipe:
            # The pipe died with the crash too: the restart must attach a new one.
            victims = []
            for pid, argv in harness.processes_mentioning(s.job_dir(job_id)):
                if "ready-file" in " ".join(argv) and "runner" not in argv[0]:
                    victims += [pid] + harness.descendants(pid)
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            # tmux only notices a dead pipe when it next writes to it: #{pane_pipe} still
            # says 1 although nobody reads the pipe any more.
            for name in (".pipe-ready", ".pipe-failed"):
                try:
                    os.unlink(os.path.join(s.job_dir(job_id), name))
                except FileNotFoundError:
                    pass
        s.start()
        res, out = s.wait_done(job_id)
        marker = os.path.join(s.home, token)
        if res["status"] == "failed":
            # The start is declared failed (the client never got its answer): then the
            # script must truly never have run, and its session must be gone (below).
            self.assertEqual((res["exit_code"], out), (None, ""))
            time.sleep(0.5)
            self.assertFalse(os.path.exists(marker), "a failed start ran the script")
        else:
            self.assertTrue(os.path.exists(marker))
            self.assertEqual((res["status"], res["exit_code"], out), ("exited", 6, "gated\n"))
        wait_until(lambda: f"shellctl-{job_id}" not in s.tmux_sessions(), 20, 0.05, "end")

    @staticmethod
    def _swallow(fn):
        try:
            fn()
        except Exception:
            pass

    def test_tmux_stalled_during_start(self):
        """The tmux server is stopped while a run is being started; the shellctl server is
        SIGKILLed, tmux continues. The restart settles the job: it ran, or its start was
        interrupted before the gate (the script never ran: failed/start_failed)."""
        s = self.server
        s.run_to_completion("true")
        tmux_pid = int(s.tmux("display-message", "-p", "#{pid}").stdout.strip())
        jobs_dir = os.path.join(s.state_dir, "jobs")
        known = set(os.listdir(jobs_dir))
        os.kill(tmux_pid, signal.SIGSTOP)
        try:
            t = threading.Thread(target=lambda: KillDuringStartTest._swallow(
                lambda: s.run("echo stalled; exit 8", timeout=20)))
            t.start()
            (job_id,) = wait_until(lambda: set(os.listdir(jobs_dir)) - known, 30, 0.001, "dir")
            time.sleep(0.5)
            s.kill()
            t.join(30)
        finally:
            os.kill(tmux_pid, signal.SIGCONT)
        time.sleep(0.5)
        s.start()
        code, body = s.status(job_id)
        if code == 200:
            res, out = s.wait_done(job_id)
            if res["status"] == "exited":
                self.assertEqual((res["exit_code"], out), (8, "stalled\n"))
            else:
                self.assertEqual((res["status"], out), ("failed", ""))
        else:
            self.assertEqual(code, 404)
        self.assert_settled_everywhere()
        self.assertEqual(s.run_to_completion("echo after")[1], "after\n")


class SlowSanitizerServer(harness.WrappedSanitizerServer):
    """A server whose shellctl-sanitize-pty reports ready only after `delay` seconds."""

    def __init__(self, delay, **kw):
        super().__init__(before=f"sleep {delay}", **kw)


class KillDuringDeleteTest(RecoveryCase):
    def test_sigkill_during_forced_delete_of_a_running_job(self):
        """(d) DELETE ?force=true of a job that ignores SIGINT blocks for its grace; the
        server dies meanwhile. The restart must not leave the job running or its session
        alive, and the delete can be repeated."""
        s = self.server
        r = s.run("trap '' INT; echo stubborn; while :; do sleep 1; done", timeout=5)
        self.assertEqual(r["output"], "stubborn\n")
        job_id = r["job_id"]
        t = threading.Thread(target=lambda: KillDuringStartTest._swallow(
            lambda: s.request("DELETE", f"/v1/jobs/{job_id}?force=true&grace_seconds=30")))
        t.start()
        wait_until(lambda: s.status(job_id)[1].get("status") == "terminated", 20, 0.02,
                   "terminated row")
        time.sleep(0.3)
        s.kill()
        t.join(30)
        s.start()
        code, body = s.status(job_id)
        if code == 200:
            # Stored as terminated before the crash; answers say done once the restart has
            # ended the job and its log is final (until then it is shown as running).
            self.assertIn(body["status"], ("running", "terminated"), body)
            body = wait_until(lambda: (lambda b: b if b["done"] else None)(s.status(job_id)[1]),
                              20, 0.05, "the terminated job to be shown done")
            self.assertEqual(body["status"], "terminated")
            self.assertIsNone(body["exit_code"])
            wait_until(lambda: f"shellctl-{job_id}" not in s.tmux_sessions(), 20, 0.05,
                       "session of the terminated job to be killed")
            d = s.ok("DELETE", f"/v1/jobs/{job_id}")
            self.assertEqual(d, {"job_id": job_id, "deleted": True})
        self.assertEqual(s.status(job_id)[0], 404)
        self.assertFalse(os.path.exists(s.job_dir(job_id)))
        self.assert_settled_everywhere()

    def test_sigkill_while_removing_a_job_directory(self):
        """(d) The server dies while it removes a big job directory: after the restart the
        job is gone for good (404) and so is its directory; the others are intact."""
        s = self.server
        keep, keep_out = s.run_to_completion("echo keep; exit 1")
        victim, _ = s.run_to_completion("echo victim")
        job_dir = s.job_dir(victim["job_id"])
        junk = os.path.join(job_dir, "junk")
        os.mkdir(junk)
        for i in range(60000):
            open(os.path.join(junk, f"f{i:06d}"), "w").close()
        t = threading.Thread(target=lambda: KillDuringStartTest._swallow(
            lambda: s.request("DELETE", f"/v1/jobs/{victim['job_id']}")))
        t.start()

        def removal_started():
            try:
                return not os.path.exists(os.path.join(job_dir, "output.log")) or \
                    len(os.listdir(junk)) < 60000
            except FileNotFoundError:
                return True

        wait_until(removal_started, 30, 0.0005, "removal to start")
        s.kill()
        t.join(30)
        partial = os.path.exists(job_dir)
        s.start()
        self.assertEqual(s.status(victim["job_id"])[0], 404)
        try:
            wait_until(lambda: not os.path.exists(job_dir), 20, 0.1,
                       "the half-removed directory to go")
        except AssertionError:
            self.fail(f"orphan job directory left behind (partial={partial}): "
                      f"{len(os.listdir(junk)) if os.path.isdir(junk) else 0} junk files")
        res, out = s.wait_done(keep["job_id"])
        self.assertEqual((res["status"], res["exit_code"], out), ("exited", 1, "keep\n"))
        self.assert_settled_everywhere()


class GracefulShutdownTest(RecoveryCase):
    def test_sigterm_leaves_jobs_running_and_db_consistent(self):
        s = self.server
        r = s.run("echo a; sleep 2; echo b; exit 2", timeout=0.5)
        answers = []

        def poll():
            try:
                answers.append(s.request("POST", f"/v1/jobs/{r['job_id']}/wait",
                                         {"offset": 0, "timeout": 30}))
            except Exception as e:
                answers.append(e)

        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.3)
        self.assertEqual(s.stop(), 0)
        t.join(30)
        self.assertEqual(len(answers), 1)
        self.assertEqual(db_check(s), "ok")
        self.assertIn(f"shellctl-{r['job_id']}", s.tmux_sessions())
        self.assertEqual(db_rows(s)[r["job_id"]][0], "running")
        s.start()
        res, out = s.wait_done(r["job_id"])
        self.assertEqual((res["status"], res["exit_code"], out), ("exited", 2, "a\nb\n"))
        self.assert_settled_everywhere()


if __name__ == "__main__":
    unittest.main(verbosity=2)
