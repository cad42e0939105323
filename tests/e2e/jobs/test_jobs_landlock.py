"""Landlock path isolation of jobs over HTTP (docs/security.md "The job sandbox", D7).

The server runs with isolation on by default. The harness puts HOME and the state dir side
by side in a temp dir, so cwd is always chosen inside HOME (never the temp dir itself).
"""
import os
import shutil
import stat
import tempfile
import unittest
import uuid

from jobs_common import JobsTestCase, Server


def q(path):
    return "'" + path.replace("'", "'\\''") + "'"


class LandlockDefaultTest(JobsTestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.work = os.path.join(cls.server.home, "work")
        os.makedirs(cls.work)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def run_ok(self, script, **kw):
        kw.setdefault("cwd", self.work)
        res, out = self.server.run_to_completion(script, **kw)
        self.assertEqual(res["status"], "exited", (res, out))
        return res["exit_code"], out

    def assert_cannot_write(self, path, mode="pty"):
        self.assertFalse(os.path.exists(path))
        code, out = self.run_ok(f"echo x > {q(path)} && echo WROTE; true", mode=mode)
        self.assertNotIn("WROTE", out)
        self.assertFalse(os.path.exists(path), f"job wrote {path}")

    def test_read_exec_usr_write_home_and_cwd(self):
        s = self.server
        code, out = self.run_ok(
            "set -eu\n/usr/bin/env true\nhead -c 4 /usr/bin/env >/dev/null\n"
            "cat /etc/hostname >/dev/null 2>&1 || true\n"
            "echo h > \"$HOME/home-file\"\necho c > ./cwd-file\nmkdir -p sub/dir\n"
            "echo t > \"$TMPDIR/tmp-file\"\n"
            "echo \"$TMPDIR|$TMP|$TEMP|$(pwd)\"\n")
        self.assertEqual(code, 0, out)
        self.assertEqual(out, "|".join([self.work] * 4) + "\n")
        self.assertTrue(os.path.isfile(os.path.join(s.home, "home-file")))
        self.assertTrue(os.path.isfile(os.path.join(self.work, "cwd-file")))
        self.assertTrue(os.path.isfile(os.path.join(self.work, "tmp-file")))
        self.assertTrue(os.path.isdir(os.path.join(self.work, "sub", "dir")))

    def test_tmpdir_is_cwd_even_if_requested_otherwise(self):
        code, out = self.run_ok('echo "$TMPDIR|$TMP|$TEMP"',
                                env={"TMPDIR": "/tmp", "TMP": "/var/tmp", "TEMP": "/x"})
        self.assertEqual(out, "|".join([self.work] * 3) + "\n")

    def test_cannot_write_tmp_var_opt(self):
        tag = uuid.uuid4().hex
        for path in [f"/tmp/shellctl-jobs-e2e-{tag}", f"/var/tmp/shellctl-jobs-e2e-{tag}",
                     f"/var/shellctl-jobs-e2e-{tag}", f"/opt/shellctl-jobs-e2e-{tag}",
                     f"/usr/shellctl-jobs-e2e-{tag}", f"/etc/shellctl-jobs-e2e-{tag}",
                     os.path.join(self.server.tmp, f"beside-home-{tag}")]:
            self.assert_cannot_write(path)
        self.assert_cannot_write(f"/tmp/shellctl-jobs-e2e-{tag}-stdio", mode="stdio")

    def test_cannot_touch_other_jobs_or_state(self):
        s = self.server
        victim = s.run("echo victim; sleep 300", cwd=self.work, timeout=0.1)["job_id"]
        try:
            self.wait_for_output(s, victim, "victim\n")
            vdir = os.path.join(s.state_dir, "jobs", victim)
            target = os.path.join(vdir, "evil")
            self.assert_cannot_write(target)
            code, out = self.run_ok(
                f"echo injected >> {q(os.path.join(vdir, 'output.log'))} && echo WROTE;"
                f"rm {q(os.path.join(vdir, 'script'))} && echo REMOVED;"
                f"echo 1 > {q(os.path.join(vdir, 'runner-exit-code'))} && echo FORGED;"
                f"echo x >> {q(os.path.join(s.state_dir, 'shellctl.db'))} && echo DB; true")
            for word in ("WROTE", "REMOVED", "FORGED", "DB"):
                self.assertNotIn(word, out)
            self.assertTrue(os.path.exists(os.path.join(vdir, "script")))
            self.assertFalse(os.path.exists(os.path.join(vdir, "runner-exit-code")))
            with open(os.path.join(vdir, "output.log")) as f:
                self.assertEqual(f.read(), "victim\n")
            self.assertEqual(self.status(s, victim)["status"], "running")
            # the job cannot even write its own job directory (read-only + exec)
            code, out = self.run_ok('echo x > "$(dirname "$0")/own-evil" && echo WROTE; true')
            self.assertNotIn("WROTE", out)
        finally:
            self.force_delete(s, victim)

    def test_two_agent_homes(self):
        s = self.server
        home_a = os.path.join(s.tmp, "agentA")
        home_b = os.path.join(s.tmp, "agentB")
        os.makedirs(home_a)
        with open(os.path.join(home_a, "a-secret"), "w") as f:
            f.write("A-SECRET\n")
        self.assertFalse(os.path.exists(home_b))
        code, out = self.run_ok('echo B-SECRET > "$HOME/b-secret" && echo "ok $HOME"',
                                env={"HOME": home_b}, cwd=s.home)
        self.assertEqual((code, out), (0, f"ok {home_b}\n"))
        st = os.stat(home_b)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(st.st_mode & 0o777, 0o700, oct(st.st_mode))
        with open(os.path.join(home_b, "b-secret")) as f:
            self.assertEqual(f.read(), "B-SECRET\n")
        # A cannot read or list B's home, nor write there
        code, out = self.run_ok(
            f"cat {q(os.path.join(home_b, 'b-secret'))} && echo READ;"
            f"ls {q(home_b)} && echo LISTED;"
            f"echo x > {q(os.path.join(home_b, 'from-a'))} && echo WROTE;"
            'cat "$HOME/a-secret"; true', env={"HOME": home_a}, cwd=home_a)
        self.assertNotIn("B-SECRET", out)
        for word in ("READ", "LISTED", "WROTE"):
            self.assertNotIn(word, out)
        self.assertIn("A-SECRET", out)
        self.assertFalse(os.path.exists(os.path.join(home_b, "from-a")))
        # B cannot read A's home
        code, out = self.run_ok(f"cat {q(os.path.join(home_a, 'a-secret'))}; true",
                                env={"HOME": home_b}, cwd=home_b)
        self.assertNotIn("A-SECRET", out)

    def test_existing_home_mode_is_left_alone(self):
        s = self.server
        home_c = os.path.join(s.tmp, "agentC")
        os.makedirs(home_c)
        os.chmod(home_c, 0o755)
        code, out = self.run_ok('touch "$HOME/c" && echo ok', env={"HOME": home_c},
                                cwd=home_c)
        self.assertEqual(out, "ok\n")
        self.assertTrue(os.path.exists(os.path.join(home_c, "c")))

    def test_nested_missing_home_is_created(self):
        s = self.server
        home_d = os.path.join(s.tmp, "agents", "deep", "agentD")
        code, out = self.run_ok('echo d > "$HOME/d" && echo ok', env={"HOME": home_d},
                                cwd=s.home)
        self.assertEqual((code, out), (0, "ok\n"))
        self.assertEqual(os.stat(home_d).st_mode & 0o777, 0o700)

    def test_request_env_cannot_widen_policy(self):
        tag = uuid.uuid4().hex
        target = f"/tmp/shellctl-jobs-e2e-widen-{tag}"
        env = {"SHELLCTL_LANDLOCK_RW_PATHS": "/", "SHELLCTL_ENABLE_PATH_ISOLATION": "false",
               "SHELLCTL_LANDLOCK_RO_PATHS": "/", "LANDLOCK_RW_PATHS": "/",
               "ENABLE_PATH_ISOLATION": "false", "SHELLCTL_LANDLOCK_RW_DEV_PATHS": "/dev"}
        for mode in ("pty", "stdio"):
            code, out = self.run_ok(f"echo x > {q(target)} && echo WROTE;"
                                    f"echo y > {q(os.path.join(self.server.tmp, 'w'))} "
                                    "&& echo WROTE2; true", env=env, mode=mode)
            self.assertNotIn("WROTE", out)
            self.assertFalse(os.path.exists(target))
            self.assertFalse(os.path.exists(os.path.join(self.server.tmp, "w")))

    def test_empty_home_exits_125(self):
        s = self.server
        mk = os.path.join(self.work, "empty-home-marker")
        for mode in ("pty", "stdio"):
            res, out = s.run_to_completion(f"touch {q(mk)}; echo ran", env={"HOME": ""},
                                           cwd=self.work, mode=mode)
            self.assertEqual((res["status"], res["exit_code"]), ("exited", 125), (res, out))
            self.assertNotIn("ran\n", out)
            self.assertFalse(os.path.exists(mk))

    def test_server_secrets_not_in_job_env(self):
        code, out = self.run_ok("env")
        self.assertNotIn("SHELLCTL_", out)
        self.assertNotIn("TMUX=", out)


class LandlockServerEnvTest(JobsTestCase):
    """Servers started with a particular environment."""

    def test_auth_token_and_settings_not_in_job_env(self):
        token = "secret-" + uuid.uuid4().hex
        s = Server(env={"SHELLCTL_AUTH_TOKEN": token, "SHELLCTL_GC_INTERVAL": "60s",
                        "SHELLCTL_RESULT_RETENTION": "24h"})
        try:
            s.token = token
            self.assertEqual(s.request("GET", "/v1/jobs", auth=False)[0], 401)
            for mode in ("pty", "stdio"):
                res, out = s.run_to_completion("env; echo END", mode=mode)
                self.assertEqual(res["exit_code"], 0)
                self.assertIn("END", out)
                self.assertIn("PATH=", out)
                self.assertNotIn(token, out)
                self.assertNotIn("SHELLCTL_", out)
        finally:
            s.close()

    def test_file_as_ro_path_fails_closed_125(self):
        s = Server(env={"SHELLCTL_LANDLOCK_RO_PATHS": "/etc/passwd,/usr,/bin,/lib,/lib64"})
        try:
            work = os.path.join(s.home, "w")
            os.makedirs(work)
            mk = os.path.join(work, "marker-should-not-exist")
            for mode in ("pty", "stdio"):
                res, out = s.run_to_completion(f"touch {q(mk)}; echo ran", cwd=work,
                                               mode=mode)
                self.assertEqual((res["status"], res["exit_code"]), ("exited", 125),
                                 (res, out))
                self.assertNotIn("ran\n", out)
                self.assertFalse(os.path.exists(mk))
        finally:
            s.close()

    def test_isolation_disabled_allows_tmp(self):
        s = Server(env={"SHELLCTL_ENABLE_PATH_ISOLATION": "false"})
        target = os.path.join(tempfile.gettempdir(),
                              f"shellctl-jobs-e2e-noiso-{uuid.uuid4().hex}")
        try:
            work = os.path.join(s.home, "w")
            os.makedirs(work)
            res, out = s.run_to_completion(f"echo free > {q(target)} && echo WROTE", cwd=work)
            self.assertEqual((res["exit_code"], out), (0, "WROTE\n"))
            with open(target) as f:
                self.assertEqual(f.read(), "free\n")
        finally:
            if os.path.exists(target):
                os.remove(target)
            s.close()

    def test_isolation_on_unless_exactly_true(self):
        # only an exact "false"... the original's rule: set means on only if exactly "true"
        s = Server(env={"SHELLCTL_ENABLE_PATH_ISOLATION": "true"})
        target = f"/tmp/shellctl-jobs-e2e-iso-{uuid.uuid4().hex}"
        try:
            work = os.path.join(s.home, "w")
            os.makedirs(work)
            res, out = s.run_to_completion(f"echo x > {q(target)} && echo WROTE; true",
                                           cwd=work)
            self.assertNotIn("WROTE", out)
            self.assertFalse(os.path.exists(target))
        finally:
            if os.path.exists(target):
                os.remove(target)
            s.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
