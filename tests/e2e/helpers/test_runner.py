"""shellctl-runner run directly in a temp job dir (docs/jobs.md "Starting a job", "The output
pipe"; D7, D10, D12).

Real processes, real files, real kernel; no timing assertions: every wait is for an
event (a FIFO handshake, process exit) with only a generous hang guard."""
import contextlib
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "support"))
from helper_support import HANG_GUARD, RUNNER, Sandbox, base_runner_env  # noqa: E402
from harness import process_alive, process_at_gate_latch  # noqa: E402

TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$")


def wait_for(pred, what):
    """Waits for a condition that an event will make true; fails only on a hang."""
    deadline = time.monotonic() + HANG_GUARD
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(k) for k in f.read().split()]
    except OSError:
        return []


def alive(pid):
    """False once the process is gone or has exited (harness.process_alive)."""
    return process_alive(pid)


def job_main_process(runner_pid):
    """The pid (host numbering) of the process that runs the script: the runner's child,
    or, when the job has its own PID namespace, the first child of its PID 1."""
    for kid in children_of(runner_pid):
        with open(f"/proc/{kid}/status") as f:
            nspid = [l.split()[1:] for l in f if l.startswith("NSpid:")]
        if nspid and len(nspid[0]) > 1:  # the job's init: pid 1 of a child namespace
            grandkids = children_of(kid)
            return min(grandkids) if grandkids else None
        return kid
    return None


class RunnerBase(unittest.TestCase):
    def setUp(self):
        self.sb = Sandbox()
        self.addCleanup(self.sb.cleanup)
        self.env = base_runner_env()

    def run_job(self, script, job_env=None, mode="stdio", cwd=None, env=None):
        self.sb.prepare(script, job_env if job_env is not None else {"HOME": self.sb.home})
        return self.sb.run(env or self.env, mode=mode, cwd=cwd)

    @contextlib.contextmanager
    def running_job(self, before, after):
        """The runner running `before`, then a line to a FIFO, then `after`; yields the
        runner once the script has written the FIFO line (so it has really started), and
        kills the runner on the way out if it is still there."""
        ready = self.sb.path("cwd", "ready.fifo")
        os.mkfifo(ready)
        self.sb.prepare(f"{before}echo ready > {ready}\n{after}", {"HOME": self.sb.home})
        p = self.sb.popen(self.env)
        try:
            with open(ready) as f:
                self.assertEqual(f.read(), "ready\n")
            yield p
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def assert_artifacts(self, code):
        self.assertEqual(self.sb.read("runner-exit-code"), f"{code}\n")
        self.assertRegex(self.sb.read("runner-ended-at"), TS_RE)
        for name in ("runner-exit-code", "runner-ended-at"):
            st = os.stat(os.path.join(self.sb.job_dir, name))
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o644, name)
        leftovers = [n for n in os.listdir(self.sb.job_dir) if ".tmp." in n]
        self.assertEqual(leftovers, [])


class ExitCodes(RunnerBase):
    def test_success(self):
        r = self.run_job("echo hello\n")
        self.assertEqual(r.returncode, 0)
        self.assertEqual(self.sb.read("output.log"), "hello\n")
        self.assert_artifacts(0)

    def test_script_status_passes_through(self):
        for code in (17, 66, 1, 255):
            with self.subTest(code=code):
                r = self.run_job(f"exit {code}\n")
                self.assertEqual(r.returncode, code)
                self.assert_artifacts(code)

    def test_signal_death_is_minus_one(self):
        r = self.run_job("kill -KILL $$\n")
        self.assertEqual(r.returncode, 255)
        self.assert_artifacts(-1)

    def test_bad_cwd_is_111(self):
        r = self.run_job("echo never\n", cwd=self.sb.path("missing-cwd"))
        self.assertEqual(r.returncode, 111)
        self.assert_artifacts(111)
        self.assertIn("chdir", self.sb.read("stderr.log"))
        self.assertEqual(self.sb.read("output.log"), "")

    def test_shell_not_in_path_is_127(self):
        r = self.run_job("echo never\n", job_env={"PATH": "/nonexistent"})
        self.assertEqual(r.returncode, 127)
        self.assert_artifacts(127)

    def test_missing_interpreter_is_126(self):
        r = self.run_job("#!/nonexistent/interpreter\necho never\n")
        self.assertEqual(r.returncode, 126)
        self.assert_artifacts(126)

    def test_shebang_script_is_made_executable_and_run_directly(self):
        r = self.run_job("#!/bin/sh\necho \"$0\"\n")
        self.assertEqual(r.returncode, 0)
        script = os.path.join(self.sb.job_dir, "script")
        self.assertEqual(self.sb.read("output.log"), script + "\n")
        self.assertEqual(stat.S_IMODE(os.stat(script).st_mode), 0o755)

    def test_script_without_shebang_runs_under_sh(self):
        r = self.run_job("tr '\\0' ' ' < /proc/$$/cmdline\n")
        self.assertEqual(r.returncode, 0)
        script = os.path.join(self.sb.job_dir, "script")
        self.assertEqual(self.sb.read("output.log"), f"sh {script} ")

    def test_bad_job_env_is_125_and_script_never_runs(self):
        for bad in ("{not json", '{"A": 1}', "[]"):
            with self.subTest(bad=bad):
                marker = self.sb.path("cwd", "marker")
                r = self.run_job(f"touch {marker}\n", job_env=bad)
                self.assertEqual(r.returncode, 125)
                self.assert_artifacts(125)
                self.assertFalse(os.path.exists(marker))
                self.assertIn(".job-env.json", self.sb.read("stderr.log"))

    def test_missing_job_env_means_no_overlay(self):
        self.sb.prepare("echo ok\n", job_env=None)
        r = self.sb.run(self.env)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(self.sb.read("output.log"), "ok\n")

    def test_bad_args_and_mode_are_125(self):
        r = subprocess.run([RUNNER, self.sb.job_dir, "id"], capture_output=True,
                           timeout=HANG_GUARD)
        self.assertEqual(r.returncode, 125)
        self.assertIn(b"bad args", r.stderr)
        self.sb.prepare("echo x\n")
        r = self.sb.run(self.env, mode="bogus")
        self.assertEqual(r.returncode, 125)

    def test_exec_role_with_too_few_arguments_is_125(self):
        r = subprocess.run([RUNNER, "--exec", "/only-script"], capture_output=True,
                           timeout=HANG_GUARD)
        self.assertEqual(r.returncode, 125)

    def test_artifact_mode_ignores_umask(self):
        self.sb.prepare("exit 3\n", {"HOME": self.sb.home})
        r = self.sb.run(self.env, preexec_fn=lambda: os.umask(0o077))
        self.assertEqual(r.returncode, 3)
        self.assert_artifacts(3)


class Environment(RunnerBase):
    def test_server_settings_never_reach_the_job(self):
        r = self.run_job("env\n", job_env={"HOME": self.sb.home, "FOO": "bar",
                                           "TMPDIR": "/elsewhere"})
        self.assertEqual(r.returncode, 0)
        env = dict(line.split("=", 1) for line in self.sb.read("output.log").splitlines()
                   if "=" in line)
        self.assertFalse([k for k in env if k.startswith("SHELLCTL_")], env)
        self.assertNotIn("TMUX", env)
        self.assertNotIn("TMUX_PANE", env)
        self.assertEqual(env["FOO"], "bar")
        self.assertEqual(env["HOME"], self.sb.home)
        for name in ("TMPDIR", "TMP", "TEMP"):
            self.assertEqual(env[name], self.sb.cwd, name)
        self.assertEqual(env["PATH"], self.env["PATH"])

    def test_pwd_is_cwd(self):
        r = self.run_job("pwd\n")
        self.assertEqual(r.returncode, 0)
        self.assertEqual(self.sb.read("output.log"), self.sb.cwd + "\n")

    def test_home_is_created_0700(self):
        home = self.sb.path("new", "home")
        r = self.run_job("echo ok\n", job_env={"HOME": home})
        self.assertEqual(r.returncode, 0)
        self.assertEqual(stat.S_IMODE(os.stat(home).st_mode), 0o700)


class Stdio(RunnerBase):
    def test_streams_are_separate_and_not_ttys(self):
        script = ("echo to-out; echo to-err >&2\n"
                  "for fd in 0 1 2; do if [ -t $fd ]; then echo tty$fd >&2; fi; done\n"
                  "cat; echo stdin-done\n")
        r = self.run_job(script)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(self.sb.read("output.log"), "to-out\nstdin-done\n")
        self.assertEqual(self.sb.read("stderr.log"), "to-err\n")
        for name in ("output.log", "stderr.log"):
            st = os.stat(os.path.join(self.sb.job_dir, name))
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o600, name)

    def test_logs_are_truncated(self):
        self.sb.prepare("echo new\n", {"HOME": self.sb.home})
        self.sb.write(os.path.join(self.sb.job_dir, "output.log"), "old old old\n", 0o644)
        self.sb.write(os.path.join(self.sb.job_dir, "stderr.log"), "stale\n", 0o644)
        r = self.sb.run(self.env)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(self.sb.read("output.log"), "new\n")
        self.assertEqual(self.sb.read("stderr.log"), "")
        st = os.stat(os.path.join(self.sb.job_dir, "output.log"))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)

    def test_large_output_on_both_streams_does_not_deadlock(self):
        # Each stream alone is far larger than a pipe buffer; a copier that drained one
        # pipe at a time would block forever here.
        n = 4 * 1024 * 1024
        script = (f"head -c {n} /dev/zero | tr '\\0' e >&2\n"
                  f"head -c {n} /dev/zero | tr '\\0' o\n"
                  f"(head -c {n} /dev/zero | tr '\\0' O) & (head -c {n} /dev/zero | tr '\\0' E >&2)\n"
                  "wait\n")
        r = self.run_job(script)
        self.assertEqual(r.returncode, 0)
        out = self.sb.read("output.log", binary=True)
        err = self.sb.read("stderr.log", binary=True)
        self.assertEqual(len(out), 2 * n)
        self.assertEqual(len(err), 2 * n)
        self.assertEqual(out.count(b"o"), n)
        self.assertEqual(out.count(b"O"), n)
        self.assertEqual(err.count(b"e"), n)
        self.assertEqual(err.count(b"E"), n)

    def test_child_closing_stdout_early_still_has_stderr_captured(self):
        script = ("echo first\nexec 1>&-\n"
                  "i=0; while [ $i -lt 2000 ]; do echo err-line-$i >&2; i=$((i+1)); done\n"
                  "exit 4\n")
        r = self.run_job(script)
        self.assertEqual(r.returncode, 4)
        self.assertEqual(self.sb.read("output.log"), "first\n")
        lines = self.sb.read("stderr.log").splitlines()
        self.assertEqual(len(lines), 2000)
        self.assertEqual(lines[-1], "err-line-1999")
        self.assert_artifacts(4)

    def test_background_process_holding_stdout_delays_the_artifacts(self):
        ready = self.sb.path("cwd", "ready.fifo")
        go = self.sb.path("cwd", "go.fifo")
        os.mkfifo(ready)
        os.mkfifo(go)
        script = (f"( read x < {go}; echo bg-done ) &\n"
                  f"echo fg\necho started > {ready}\nexit 0\n")
        self.sb.prepare(script, {"HOME": self.sb.home})
        p = self.sb.popen(self.env)
        try:
            main = wait_for(lambda: job_main_process(p.pid), "the job's main process")
            with open(ready) as f:  # the foreground part has run
                self.assertEqual(f.read(), "started\n")
            # The script's shell exits now, but its background child still holds stdout:
            # the runner must wait for it. Wait until the script's shell is gone.
            wait_for(lambda: not alive(main), "the script's shell to exit")
            self.assertIsNone(p.poll())
            self.assertFalse(self.sb.exists("runner-exit-code"))
            self.assertFalse(self.sb.exists("runner-ended-at"))
            with open(go, "w") as f:
                f.write("go\n")
            p.wait(timeout=HANG_GUARD)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0)
        self.assertEqual(self.sb.read("output.log"), "fg\nbg-done\n")
        self.assert_artifacts(0)

    def test_invalid_utf8_is_copied_raw(self):
        payload = b"\xff\xfe raw \xe2\x82 \x1b[31mred\x1b[0m\r\n\x00end"
        self.sb.write(self.sb.path("cwd", "payload"), payload, 0o644)
        r = self.run_job("cat payload; cat payload >&2\n")
        self.assertEqual(r.returncode, 0)
        self.assertEqual(self.sb.read("output.log", binary=True), payload)
        self.assertEqual(self.sb.read("stderr.log", binary=True), payload)


class GateAndSignals(RunnerBase):
    def test_waits_for_the_start_gate(self):
        marker = self.sb.path("cwd", "ran")
        self.sb.prepare(f"touch {marker}\n", {"HOME": self.sb.home}, gate=False)
        p = self.sb.popen(self.env)
        try:
            # The runner watches the job dir with inotify before it checks for the gate.
            wait_for(lambda: self.has_inotify_fd(p.pid), "the runner's inotify watch")
            self.assertIsNone(p.poll())
            self.assertFalse(os.path.exists(marker))
            self.sb.open_gate()
            p.wait(timeout=HANG_GUARD)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0)
        self.assertTrue(os.path.exists(marker))

    def test_job_process_is_built_before_the_gate_and_runs_after_it(self):
        # The fast path: the job's process (and its sandbox) is made while the runner waits
        # for the gate; only its execve waits for the gate.
        marker = self.sb.path("cwd", "ran")
        self.sb.prepare(f"touch {marker}\n", {"HOME": self.sb.home}, gate=False)
        env = base_runner_env(SHELLCTL_ENABLE_PATH_ISOLATION="true")
        p = self.sb.popen(env)
        try:
            job = wait_for(lambda: process_at_gate_latch(p.pid), "the job's process at the latch")
            self.assertEqual(os.readlink(f"/proc/{job}/exe"), os.path.realpath(RUNNER))
            with open(f"/proc/{job}/status") as f:
                status = f.read()
            self.assertIn("NoNewPrivs:\t1", status)  # Landlock is on already
            self.assertEqual(os.readlink(f"/proc/{job}/cwd"), os.path.realpath(self.sb.cwd))
            self.assertFalse(os.path.exists(marker))
            self.assertFalse(os.path.exists(self.sb.path("job", "runner-exit-code")))
            self.sb.open_gate()
            p.wait(timeout=HANG_GUARD)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0)
        self.assertTrue(os.path.exists(marker))
        self.assert_artifacts(0)

    def test_setup_failure_before_the_gate_is_held_until_it_opens(self):
        # A failure found while the gate is shut (here: the cwd is missing) says nothing and
        # writes nothing until the gate opens, then reports exactly as after the gate.
        self.sb.prepare("echo never\n", {"HOME": self.sb.home}, gate=False)
        p = self.sb.popen(self.env, cwd=self.sb.path("missing-cwd"))
        try:
            job = wait_for(lambda: process_at_gate_latch(p.pid), "the job's process at the latch")
            wait_for(lambda: b"chdir" in self.held_stderr(job), "the held chdir failure")
            self.assertEqual(self.sb.read("stderr.log"), "")
            self.assertEqual(self.sb.read("output.log"), "")
            self.assertFalse(os.path.exists(self.sb.path("job", "runner-exit-code")))
            self.assertIsNone(p.poll())
            self.sb.open_gate()
            p.wait(timeout=HANG_GUARD)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 111)
        self.assert_artifacts(111)
        self.assertIn("chdir", self.sb.read("stderr.log"))
        self.assertEqual(self.sb.read("output.log"), "")

    def test_job_dir_removed_with_the_job_process_at_the_latch(self):
        self.removed_at_the_latch(self.sb.command())

    def test_job_dir_with_a_trailing_slash_removed_at_the_latch(self):
        # The removal is seen from the directory above the job dir, whatever its spelling.
        argv = self.sb.command()
        argv[1] += "/"
        self.removed_at_the_latch(argv)

    def removed_at_the_latch(self, argv):
        marker = self.sb.path("cwd", "ran")
        self.sb.prepare(f"touch {marker}\n", {"HOME": self.sb.home}, gate=False)
        p = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        job = wait_for(lambda: process_at_gate_latch(p.pid), "the job's process at the latch")
        shutil.rmtree(self.sb.job_dir)
        p.wait(timeout=HANG_GUARD)
        self.assertEqual(p.returncode, 125)
        wait_for(lambda: not alive(job), "the job's process to end")
        self.assertFalse(os.path.exists(marker))

    @staticmethod
    def held_stderr(pid):
        try:
            with open(f"/proc/{pid}/fd/2", "rb") as f:
                return f.read()
        except OSError:
            return b""

    def test_a_running_job_holds_no_inotify_instance(self):
        # The gate's instance is closed once idle (closing it at once would cost an SRCU
        # grace period on the job's path): a long job must not keep one of the user's 128.
        with self.running_job("", "sleep 600\n") as p:
            wait_for(lambda: not self.has_inotify_fd(p.pid), "the runner to close its instance")
            self.assertIsNone(p.poll())

    def test_gate_via_rename_is_seen(self):
        self.sb.prepare("echo renamed-gate\n", {"HOME": self.sb.home}, gate=False)
        p = self.sb.popen(self.env)
        try:
            wait_for(lambda: self.has_inotify_fd(p.pid), "the runner's inotify watch")
            tmp = os.path.join(self.sb.job_dir, "gate.tmp")
            self.sb.write(tmp, b"")
            os.rename(tmp, os.path.join(self.sb.job_dir, "start-gate"))
            p.wait(timeout=HANG_GUARD)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0)
        self.assertEqual(self.sb.read("output.log"), "renamed-gate\n")

    def test_job_dir_removed_while_waiting_ends_the_runner(self):
        self.sb.prepare("echo never\n", {"HOME": self.sb.home}, gate=False)
        p = self.sb.popen(self.env)
        wait_for(lambda: self.has_inotify_fd(p.pid), "the runner's inotify watch")
        shutil.rmtree(self.sb.job_dir)
        p.wait(timeout=HANG_GUARD)
        self.assertEqual(p.returncode, 125)

    @staticmethod
    def has_inotify_fd(pid):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            return False
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                    return True
            except OSError:
                pass
        return False

    def signal_test(self, sig, trapped_name):
        with self.running_job(f"trap 'echo got-{trapped_name}; exit 3' {trapped_name}\n",
                              "while :; do sleep 0.05; done\n") as p:
            os.kill(p.pid, sig)  # the runner only, not its process group
            p.wait(timeout=HANG_GUARD)
        self.assertEqual(p.returncode, 3)  # the runner survived and reported the child
        self.assertEqual(self.sb.read("output.log"), f"got-{trapped_name}\n")
        self.assert_artifacts(3)

    def test_sigterm_is_forwarded(self):
        self.signal_test(signal.SIGTERM, "TERM")

    def test_sigint_is_forwarded(self):
        self.signal_test(signal.SIGINT, "INT")

    def test_sighup_is_forwarded(self):
        self.signal_test(signal.SIGHUP, "HUP")

    def test_runner_stays_in_the_callers_process_group(self):
        # Seen from the host: inside its PID namespace the job cannot name a group whose
        # leader lives outside it.
        with self.running_job("", "sleep 30\n") as p:
            main = wait_for(lambda: job_main_process(p.pid), "the job's main process")
            self.assertEqual(os.getpgid(p.pid), os.getpgrp())
            self.assertEqual(os.getpgid(main), os.getpgrp())


class PtyMode(RunnerBase):
    def test_child_inherits_the_runner_stdio(self):
        self.sb.prepare("echo on-terminal; echo err-terminal >&2; read line; echo got:$line\n",
                        {"HOME": self.sb.home})
        r = self.sb.run(self.env, mode="pty", input=b"typed\n", stdin=None)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout, b"on-terminal\ngot:typed\n")
        self.assertEqual(r.stderr, b"err-terminal\n")
        self.assertFalse(self.sb.exists("stderr.log"))
        self.assertEqual(self.sb.read("output.log"), "")  # the pipe-pane's file, untouched
        self.assert_artifacts(0)

    def test_missing_mode_means_pty(self):
        self.sb.prepare("echo default-mode\n", {"HOME": self.sb.home})
        r = self.sb.run(self.env, mode=None)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout, b"default-mode\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
