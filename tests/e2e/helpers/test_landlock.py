"""Landlock path isolation through shellctl-runner (docs/security.md "The job sandbox", D7:
fail closed with 125). Every case runs as root and as an unprivileged user.

Each denial is paired with a control run without isolation that shows the same access
succeeding, so a "no" can only come from Landlock."""
import glob
import os
import stat
import sys
import unittest
import uuid

sys.path.insert(0, os.path.dirname(__file__))
from helper_support import Sandbox, base_runner_env, ensure_test_user  # noqa: E402

ALLOWED = ["read_usr", "exec_usr", "read_etc", "write_home", "mkdir_home", "write_cwd",
           "write_tmpdir", "read_script", "write_devnull", "read_urandom"]
DENIED = ["write_tmp", "write_var_tmp", "write_opt", "write_other", "read_other_home",
          "list_other_home", "write_jobdir"]


class LandlockCases:
    owner = None  # (uid, gid) of the user the runner runs as; None = root

    def setUp(self):
        self.sb = Sandbox(self.owner)
        self.addCleanup(self.sb.cleanup)
        self.tag = uuid.uuid4().hex[:12]
        self.addCleanup(self.remove_probes)
        # Another directory and another agent's home, both reachable without Landlock.
        self.other = self.sb.mkdir("other", 0o777)
        self.other_home = self.sb.mkdir("other-agent-home", 0o755)
        self.sb.write(os.path.join(self.other_home, "secret"), "secret\n", 0o644)
        self.marker = self.sb.path("cwd", "marker")

    def remove_probes(self):
        for pattern in (f"/tmp/shellctl-ll-{self.tag}", f"/var/tmp/shellctl-ll-{self.tag}"):
            for p in glob.glob(pattern):
                os.unlink(p)
        if os.path.isdir(f"/opt/shellctl-ll-{self.tag}"):
            os.rmdir(f"/opt/shellctl-ll-{self.tag}")

    def runner_env(self, **extra):
        env = base_runner_env(**extra)
        if "SHELLCTL_ENABLE_PATH_ISOLATION" not in extra:
            del env["SHELLCTL_ENABLE_PATH_ISOLATION"]  # unset means on
        return env

    def probe_script(self):
        script = os.path.join(self.sb.job_dir, "script")
        probes = {
            "read_usr": "ls /usr/bin",
            "exec_usr": "/usr/bin/env true",
            "read_etc": "cat /etc/passwd",
            "write_home": 'echo x > "$HOME/probe"',
            "mkdir_home": 'mkdir -p "$HOME/sub/dir"',
            "write_cwd": 'echo x > "$PWD/probe"',
            "write_tmpdir": 'echo x > "$TMPDIR/probe-tmpdir"',
            "read_script": f"cat {script}",
            "write_devnull": "echo x > /dev/null",
            "read_urandom": "head -c 1 /dev/urandom",
            "write_tmp": f"echo x > /tmp/shellctl-ll-{self.tag}",
            "write_var_tmp": f"echo x > /var/tmp/shellctl-ll-{self.tag}",
            "write_opt": f"mkdir /opt/shellctl-ll-{self.tag}",
            "write_other": f"echo x > {self.other}/probe-{self.tag}",
            "read_other_home": f"cat {self.other_home}/secret",
            "list_other_home": f"ls {self.other_home}",
            "write_jobdir": f"echo x > {self.sb.job_dir}/evil",
        }
        lines = ["probe() { n=$1; shift; if (eval \"$*\") >/dev/null 2>&1; "
                 "then echo \"$n=yes\"; else echo \"$n=no\"; fi; }"]
        lines += [f"probe {name} '{cmd}'" for name, cmd in probes.items()]
        return "\n".join(lines) + "\n"

    def run_probes(self, env, job_env=None):
        self.sb.prepare(self.probe_script(), job_env or {"HOME": self.sb.home})
        r = self.sb.run(env)
        self.assertEqual(r.returncode, 0, self.sb.read("stderr.log"))
        result = dict(line.split("=", 1) for line in self.sb.read("output.log").splitlines())
        self.remove_probes()
        for p in (os.path.join(self.sb.job_dir, "evil"),
                  os.path.join(self.other, f"probe-{self.tag}")):
            if os.path.exists(p):
                os.unlink(p)
        return result

    def assert_probes(self, result, yes, no):
        for name in yes:
            self.assertEqual(result.get(name), "yes", name)
        for name in no:
            self.assertEqual(result.get(name), "no", name)

    def control_yes(self):
        """What the unsandboxed job can do: all probes, except /opt for a normal user."""
        root = self.owner is None and os.geteuid() == 0
        return [n for n in ALLOWED + DENIED if root or n != "write_opt"]

    def test_defaults_allow_home_cwd_and_system_dirs_and_deny_the_rest(self):
        control = self.run_probes(self.runner_env(SHELLCTL_ENABLE_PATH_ISOLATION="false"))
        self.assert_probes(control, self.control_yes(), [])
        sandboxed = self.run_probes(self.runner_env())
        self.assert_probes(sandboxed, ALLOWED, DENIED)

    def test_explicit_true_enables_isolation(self):
        result = self.run_probes(self.runner_env(SHELLCTL_ENABLE_PATH_ISOLATION="true"))
        self.assert_probes(result, ALLOWED, DENIED)

    def test_job_env_cannot_widen_or_disable_the_policy(self):
        job_env = {"HOME": self.sb.home, "SHELLCTL_LANDLOCK_RW_PATHS": "/",
                   "SHELLCTL_LANDLOCK_RO_PATHS": "/", "SHELLCTL_ENABLE_PATH_ISOLATION": "false",
                   "LANDLOCK_RW_PATHS": "/", "ENABLE_PATH_ISOLATION": "false"}
        result = self.run_probes(self.runner_env(), job_env)
        self.assert_probes(result, ALLOWED, DENIED)

    def test_server_may_widen_with_extra_rw_paths(self):
        env = self.runner_env(SHELLCTL_LANDLOCK_RW_PATHS=f" /nonexistent/dir , {self.other} ,")
        result = self.run_probes(env)
        self.assert_probes(result, ALLOWED + ["write_other"],
                           [n for n in DENIED if n != "write_other"])

    def test_isolation_false_disables(self):
        result = self.run_probes(self.runner_env(SHELLCTL_ENABLE_PATH_ISOLATION="false"))
        self.assert_probes(result, self.control_yes(), [])

    def test_missing_configured_paths_are_skipped(self):
        env = self.runner_env(
            SHELLCTL_LANDLOCK_RO_PATHS="/usr,/bin,/lib,/lib64,/etc,/nonexistent-ro",
            SHELLCTL_LANDLOCK_RW_DEV_PATHS="/dev/null,/dev/nonexistent,/dev/urandom")
        result = self.run_probes(env)
        self.assert_probes(result, ALLOWED, DENIED)

    def test_empty_ro_list_replaces_the_default(self):
        # Nothing is executable any more: even the shell cannot be executed.
        self.sb.prepare(f"touch {self.marker}\n", {"HOME": self.sb.home})
        r = self.sb.run(self.runner_env(SHELLCTL_LANDLOCK_RO_PATHS=""))
        self.assertEqual(r.returncode, 126, self.sb.read("stderr.log"))
        self.assertFalse(os.path.exists(self.marker))

    def test_missing_home_is_created_0700(self):
        agents = self.sb.mkdir("agents", 0o755)
        home = os.path.join(agents, "a1", "home")
        result = self.run_probes(self.runner_env(), {"HOME": home})
        self.assert_probes(result, ALLOWED, DENIED)
        st = os.stat(home)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
        self.assertEqual(st.st_uid, self.owner[0] if self.owner else os.geteuid())
        self.assertTrue(os.path.exists(os.path.join(home, "probe")))

    def test_empty_home_is_125_and_the_script_never_runs(self):
        self.sb.prepare(f"touch {self.marker}\n", {"HOME": ""})
        r = self.sb.run(self.runner_env())
        self.assertEqual(r.returncode, 125)
        self.assertEqual(self.sb.read("runner-exit-code"), "125\n")
        self.assertFalse(os.path.exists(self.marker))
        self.assertIn("HOME", self.sb.read("stderr.log"))

    def test_uncreatable_home_is_125(self):
        self.sb.write(self.sb.path("plainfile"), "x")
        self.sb.prepare(f"touch {self.marker}\n", {"HOME": self.sb.path("plainfile", "home")})
        r = self.sb.run(self.runner_env())
        self.assertEqual(r.returncode, 125)
        self.assertFalse(os.path.exists(self.marker))

    def test_home_resolving_into_the_state_dir_or_a_system_tree_is_125(self):
        # The server checked HOME at run; a symlink planted afterwards is resolved again by
        # the runner, which refuses before creating anything or running the script.
        state = self.sb.mkdir("state", 0o700)
        os.makedirs(os.path.join(state, "runtime", "bin"))
        if self.owner:
            for d, _, _ in os.walk(state):
                os.chown(d, *self.owner)
        for target, leaf in ((os.path.join(state, "runtime"), "bin"), ("/usr", "lib"),
                             ("/", "")):
            link = self.sb.path("planted-" + uuid.uuid4().hex[:6])
            os.symlink(target, link)
            self.sb.prepare(f"touch {self.marker}\n", {"HOME": os.path.join(link, leaf)})
            r = self.sb.run(self.runner_env(SHELLCTL_STATE_DIR=state))
            self.assertEqual(r.returncode, 125, (target, self.sb.read("stderr.log")))
            self.assertIn("shellctl-runner: sandbox: HOME", self.sb.read("stderr.log"))
            self.assertFalse(os.path.exists(self.marker))
        self.assertEqual(sorted(os.listdir(os.path.join(state, "runtime"))), ["bin"])

    def test_broken_policy_fails_closed_with_125(self):
        # A regular file given directory rights: landlock_add_rule fails with EINVAL.
        self.sb.prepare(f"touch {self.marker}\n", {"HOME": self.sb.home})
        r = self.sb.run(self.runner_env(SHELLCTL_LANDLOCK_RO_PATHS="/usr,/etc/passwd"))
        self.assertEqual(r.returncode, 125)
        self.assertEqual(self.sb.read("runner-exit-code"), "125\n")
        self.assertFalse(os.path.exists(self.marker))
        err = self.sb.read("stderr.log")
        self.assertIn("shellctl-runner: landlock:", err)
        self.assertIn("/etc/passwd", err)

    def test_pty_mode_keeps_the_inherited_terminal_writable(self):
        self.sb.prepare("echo visible; echo x > /tmp/shellctl-ll-" + self.tag + " || echo denied\n",
                        {"HOME": self.sb.home})
        r = self.sb.run(self.runner_env(), mode="pty")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"visible\ndenied\n")


class LandlockAsInvokingUser(LandlockCases, unittest.TestCase):
    """As whoever runs the tests: root on the CI machine."""


class LandlockAsUnprivilegedUser(LandlockCases, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        owner = ensure_test_user()
        if owner is None:
            raise unittest.SkipTest("cannot create or switch to an unprivileged user")
        cls.owner = owner


if __name__ == "__main__":
    unittest.main(verbosity=2)
