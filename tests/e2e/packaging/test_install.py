"""`meson install` as an operator runs it: the staged layout, every binary's --help, the
systemd unit verified by systemd-analyze, and the installed server run from its installed
place (the staged /usr/local bound onto /usr/local in a private mount namespace), finding
its helpers in the compiled-in libexec directory with nothing of ours in PATH."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from harness import Server

BUILD_DIR = os.environ.get("SHELLCTL_BUILD_DIR") or os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "build")
PREFIX = "/usr/local"  # meson's default prefix, which the build was configured with


class StagedInstall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dest = tempfile.mkdtemp(prefix="shellctl-destdir-")
        subprocess.run(["meson", "install", "-C", BUILD_DIR, "--destdir", cls.dest,
                        "--no-rebuild", "--quiet"], check=True, capture_output=True)
        cls.root = cls.dest + PREFIX

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dest, ignore_errors=True)

    def test_layout(self):
        found = sorted(os.path.relpath(os.path.join(d, f), self.root)
                       for d, _, files in os.walk(self.root) for f in files)
        self.assertEqual(found, [
            "bin/dify-agent", "bin/shellctl",
            "libexec/shellctl/shellctl-home",
            "libexec/shellctl/shellctl-runner", "libexec/shellctl/shellctl-runner-exit",
            "libexec/shellctl/shellctl-sanitize-pty",
            # The native supervisor's deployment files (present, activating nothing) and
            # the document its unit's Documentation= names.
            "share/dify-native/native-scopes.md",
            "share/dify-native/native-test-apparmor.profile", "share/dify-native/native-test-seccomp.json",
            "share/dify-native/native-test-start.sh", "share/dify-native/native-test-supervisor.service",
            "share/dify-native/native-test-userns.apparmor",
            "share/shellctl/agent_cli_help.json", "share/shellctl/shellctl.service"])
        for exe in found[:6] + ["share/dify-native/native-test-start.sh"]:
            self.assertTrue(os.access(os.path.join(self.root, exe), os.X_OK), exe)

    def test_every_binary_answers_help(self):
        for exe, word in (("bin/shellctl", "Usage: shellctl serve"),
                          ("bin/dify-agent", "Usage:\n  dify-agent [command]"),
                          ("libexec/shellctl/shellctl-home", "Usage: shellctl-home"),
                          ("libexec/shellctl/shellctl-runner", "Usage: shellctl-runner"),
                          ("libexec/shellctl/shellctl-runner-exit", "shellctl-runner-exit"),
                          ("libexec/shellctl/shellctl-sanitize-pty", "shellctl-sanitize-pty")):
            r = subprocess.run([os.path.join(self.root, exe), "--help"], capture_output=True,
                               text=True, timeout=10)
            self.assertEqual(r.returncode, 0, (exe, r))
            self.assertIn(word, r.stdout + r.stderr, exe)
        for exe in ("bin/shellctl", "bin/dify-agent", "libexec/shellctl/shellctl-home",
                    "libexec/shellctl/shellctl-runner", "libexec/shellctl/shellctl-runner-exit",
                    "libexec/shellctl/shellctl-sanitize-pty"):
            r = subprocess.run([os.path.join(self.root, exe), "--version"],
                               capture_output=True, text=True, timeout=10)
            self.assertEqual((r.returncode, r.stdout.split()[:1]), (0, [os.path.basename(exe)]), (exe, r))

    def test_systemd_unit_verifies_clean(self):
        unit = open(os.path.join(self.root, "share/shellctl/shellctl.service")).read()
        self.assertIn(f"ExecStart={PREFIX}/bin/shellctl serve", unit)
        self.assertIn("KillMode=process", unit)  # jobs outlive a service restart
        # systemd-analyze checks that ExecStart exists: point it at the staged binary.
        check = os.path.join(self.dest, "shellctl-check.service")
        with open(check, "w") as f:
            f.write(unit.replace(f"{PREFIX}/bin/shellctl", self.root + "/bin/shellctl"))
        r = subprocess.run(["systemd-analyze", "verify", check], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))

    def test_installed_server_finds_its_helpers_in_libexec(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for a private mount namespace")
        root = self.root

        class InstalledServer(Server):
            def command(self):
                inner = super().command()
                inner[0] = f"{PREFIX}/bin/shellctl"
                # The staged tree where it will live, seen only by this server and its jobs.
                return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                        f'mount --bind "$0" {PREFIX} && exec "$@"', root] + inner

            def environment(self):
                env = super().environment()
                env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"  # nothing of ours
                return env

        with InstalledServer() as s:
            for mode in ("pty", "stdio"):
                res, out = s.run_to_completion("echo installed-$((6*7))", mode=mode)
                self.assertEqual((res["status"], res["exit_code"], out),
                                 ("exited", 0, "installed-42\n"), mode)
            link = os.readlink(os.path.join(s.runtime_dir, "bin", "shellctl-runner"))
            self.assertEqual(link, f"{PREFIX}/libexec/shellctl/shellctl-runner")
            # Home operations go through the installed shellctl-home.
            st, _, body = s.request("PUT", "/v1/files/content?path=installed.txt", raw_body=b"via libexec")
            self.assertEqual(st, 200, body)
            st, _, body = s.request("GET", "/v1/files/content?path=installed.txt")
            self.assertEqual((st, body), (200, b"via libexec"))
            st, _, body = s.request("POST", "/v1/snapshot/save")
            self.assertEqual(st, 200, body)


if __name__ == "__main__":
    unittest.main(verbosity=2)
