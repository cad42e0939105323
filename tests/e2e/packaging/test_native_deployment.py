"""The native supervisor's deployment files (docs/native-scopes.md "Deployment files"; the unit
and component tiers; S25-S30): the seccomp JSON (every name a real syscall, the dangerous ones
absent, what the supervisor needs present), the unit generated from it (SystemCallFilter= equal
to the JSON's allowlist, and the properties S27 requires), the AppArmor profile parsed by the
real apparmor_parser (parse only: this host has no AppArmor), `meson install` placing all of
them, and the start script's checks on the real kernel with a `systemctl` stub: as root; systemd
252; the unit property; placement in <U>/other; a process in the unit root; and with everything
in order, the first cgroup write — which this host refuses, as it has no cpu, memory or pids
controllers. The script never moves itself: cgroup.procs stay as they were. Needs root (the
cgroup fixture and the test user)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PACKAGING = os.path.join(SOURCE, "packaging")
BUILD_DIR = os.environ.get("SHELLCTL_BUILD_DIR") or os.path.join(SOURCE, "build")
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e", "helpers"))
from helper_support import ensure_test_user  # noqa: E402
from harness import for_everyone  # noqa: E402

UNIFIED = "/sys/fs/cgroup/unified" if os.path.isdir("/sys/fs/cgroup/unified/") else "/sys/fs/cgroup"
SECCOMP = os.path.join(PACKAGING, "native-test-seccomp.json")
UNIT = os.path.join(BUILD_DIR, "packaging", "native-test-supervisor.service")
PROFILE = os.path.join(PACKAGING, "native-test-apparmor.profile")
START = for_everyone(os.path.join(PACKAGING, "native-test-start.sh"))  # run as the test user


def read(path):
    with open(path) as f:
        return f.read()


def unit_properties(path):
    props = {}
    for line in read(path).splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "[")) and "=" in line:
            k, v = line.split("=", 1)
            props.setdefault(k, []).append(v)
    return props


class SeccompAndUnit(unittest.TestCase):
    def setUp(self):
        self.doc = json.loads(read(SECCOMP))
        self.names = [n for rule in self.doc["syscalls"] for n in rule["names"]]

    def test_the_json_is_an_oci_allowlist_of_real_syscalls(self):
        self.assertEqual(self.doc["defaultAction"], "SCMP_ACT_ERRNO")
        self.assertIn("SCMP_ARCH_X86_64", self.doc["architectures"])
        self.assertTrue(all(r["action"] == "SCMP_ACT_ALLOW" for r in self.doc["syscalls"]))
        self.assertEqual(len(self.names), len(set(self.names)), "a name is listed twice")
        resolver = shutil.which("scmp_sys_resolver")
        self.assertIsNotNone(resolver, "scmp_sys_resolver (Debian package seccomp) is needed")
        unknown = [n for n in self.names
                   if subprocess.run([resolver, n], capture_output=True, text=True).stdout.strip() == "-1"]
        self.assertEqual(unknown, [], "names libseccomp does not know")

    def test_the_allowlist_keeps_what_the_supervisor_needs_and_nothing_that_reaches_the_host_kernel(self):
        needed = {"clone", "clone3", "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
                  "openat2", "pidfd_open", "pidfd_send_signal", "landlock_create_ruleset",
                  "landlock_add_rule", "landlock_restrict_self", "seccomp", "prctl", "capset",
                  "execve", "execveat", "socket", "connect", "accept4", "sendmsg", "recvmsg",
                  "inotify_init1", "epoll_wait", "io_uring_setup" if "io_uring_setup" in self.names else "epoll_create1"}
        self.assertEqual(needed - set(self.names), set())
        never = {"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf",
                 "perf_event_open", "reboot", "swapon", "swapoff", "open_by_handle_at", "keyctl",
                 "add_key", "request_key", "userfaultfd", "settimeofday", "clock_settime", "acct",
                 "iopl", "ioperm", "syslog"}
        self.assertEqual(never & set(self.names), set())

    def test_the_unit_is_generated_from_the_json_with_the_required_properties(self):
        self.assertTrue(os.path.exists(UNIT), "the build generates " + UNIT)
        props = unit_properties(UNIT)
        self.assertEqual(props["SystemCallFilter"], [" ".join(sorted(self.names))])
        self.assertNotIn("@SYSCALLS@", read(UNIT))
        expected = {"User": "dify-native", "ExecStart": "/usr/local/libexec/dify-native-start",
                    "Delegate": "cpu memory pids", "DelegateSubgroup": "manager", "KillMode": "process",
                    "AppArmorProfile": "dify-native-test-supervisor", "NoNewPrivileges": "yes",
                    "SystemCallErrorNumber": "EPERM"}
        for key, value in expected.items():
            self.assertEqual(props.get(key), [value], key)
        self.assertTrue(props.get("EnvironmentFile", [""])[0].startswith("/etc/"), "a root-owned env file")
        # Finite bounds (cgroup_finite): none of them infinity.
        for key in ("CPUQuota", "MemoryMax", "MemorySwapMax", "TasksMax"):
            self.assertIn(key, props)
            self.assertNotIn(props[key][0].lower(), ("", "infinity", "max"), key)

    def test_the_generator_refuses_what_systemd_cannot_express(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        bad = dict(self.doc, syscalls=[{"names": ["read"], "action": "SCMP_ACT_ALLOW",
                                        "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_EQ"}]}])
        path = os.path.join(tmp, "bad.json")
        with open(path, "w") as f:
            json.dump(bad, f)
        r = subprocess.run([sys.executable, os.path.join(PACKAGING, "native-unit.py"),
                            os.path.join(PACKAGING, "native-test-supervisor.service.in"), path,
                            os.path.join(tmp, "out")], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertFalse(os.path.exists(os.path.join(tmp, "out")))


class AppArmorProfile(unittest.TestCase):
    def test_the_profile_parses(self):
        parser = shutil.which("apparmor_parser") or "/sbin/apparmor_parser"
        self.assertTrue(os.path.exists(parser), "apparmor_parser (Debian package apparmor) is needed")
        r = subprocess.run([parser, "-Q", "-K", "-I", PACKAGING, PROFILE], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = read(PROFILE)
        self.assertIn("profile dify-native-test-supervisor ", text)
        self.assertIn("include if exists <dify-native-userns>", text)
        # The names the supervisor's `apparmor` check and the unit's AppArmorProfile= use.
        r = subprocess.run([parser, "-Q", "-K", "-N", PROFILE], capture_output=True, text=True)
        self.assertEqual(r.stdout.split(), ["dify-native-test-supervisor"], r.stderr)
        # A broken profile is refused (the parser really parses).
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        broken = os.path.join(tmp, "broken")
        with open(broken, "w") as f:
            f.write(text.replace("capability sys_admin,", "capability sys_admin"))
        self.assertNotEqual(subprocess.run([parser, "-Q", "-K", broken], capture_output=True).returncode, 0)


class Install(unittest.TestCase):
    def test_meson_install_places_every_file(self):
        dest = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, dest)
        r = subprocess.run(["meson", "install", "-C", BUILD_DIR, "--no-rebuild", "--quiet", "--destdir", dest],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        found = {}
        for root, _, files in os.walk(dest):
            if os.path.basename(root) == "dify-native":
                found = {f: os.path.join(root, f) for f in files}
        for name in ("native-test-supervisor.service", "native-test-start.sh", "native-test-seccomp.json",
                     "native-test-apparmor.profile", "native-test-userns.apparmor"):
            self.assertIn(name, found)
        self.assertTrue(os.access(found["native-test-start.sh"], os.X_OK))
        self.assertEqual(read(found["native-test-supervisor.service"]), read(UNIT))


class StartScript(unittest.TestCase):
    """The start script on this kernel, as the unprivileged test user, with a systemctl stub."""

    @classmethod
    def setUpClass(cls):
        cls.ids = ensure_test_user()
        if cls.ids is None:
            raise AssertionError("the start script's tests need root and useradd")
        cls.tmp = tempfile.mkdtemp(prefix="shellctl-start-")
        os.chmod(cls.tmp, 0o755)
        stub = os.path.join(cls.tmp, "systemctl")
        with open(stub, "w") as f:
            f.write('#!/bin/sh\ncase "$1" in\n  --version) echo "systemd $STUB_VERSION ($STUB_VERSION-1)"; echo "+PAM +AUDIT";;\n'
                    '  show) echo "$STUB_SUBGROUP";;\n  *) exit 1;;\nesac\n')
        os.chmod(stub, 0o755)
        cls.unit = os.path.join(UNIFIED, "shellctl-start-" + uuid.uuid4().hex[:8])
        for d in (cls.unit, os.path.join(cls.unit, "manager"), os.path.join(cls.unit, "other")):
            os.mkdir(d)
            os.chown(d, *cls.ids)
            for f in ("cgroup.procs", "cgroup.subtree_control"):
                os.chown(os.path.join(d, f), *cls.ids)

    @classmethod
    def tearDownClass(cls):
        for d in (os.path.join(cls.unit, "manager"), os.path.join(cls.unit, "other"), cls.unit):
            try:
                os.rmdir(d)
            except OSError:
                pass
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def procs(self, sub=""):
        with open(os.path.join(self.unit, sub, "cgroup.procs")) as f:
            return f.read().split()

    def start(self, version="257", subgroup="manager", place="manager", as_root=False, extra_env=None):
        uid, gid = self.ids
        target = os.path.join(self.unit, place, "cgroup.procs")

        def placed():
            with open(target, "w") as f:
                f.write(str(os.getpid()))
            if not as_root:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)

        env = {"PATH": self.tmp + ":/usr/bin:/bin", "STUB_VERSION": version, "STUB_SUBGROUP": subgroup,
               "SHELLCTL_BIN": "/bin/false"}
        env.update(extra_env or {})
        before = (self.procs(), self.procs("manager"), self.procs("other"))
        r = subprocess.run(["/bin/sh", START], env=env, capture_output=True, text=True, preexec_fn=placed, timeout=30)
        self.assertEqual((self.procs(), self.procs("manager"), self.procs("other")), before,
                         "the script never moves itself or anything else")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        return r.stderr

    def test_root_is_refused(self):
        self.assertIn("running as root", self.start(as_root=True))

    def test_systemd_older_than_254_is_refused(self):
        self.assertIn("systemd 252 is older than 254", self.start(version="252"))
        self.assertIn("cannot read the installed systemd version", self.start(version="unknown"))

    def test_the_effective_unit_property_must_be_manager(self):
        self.assertIn("DelegateSubgroup='' in effect", self.start(version="254", subgroup=""))

    def test_placement_outside_the_manager_leaf_is_refused(self):
        err = self.start(version="254", place="other")
        self.assertIn("not in <unit>/manager", err)

    def test_a_process_in_the_unit_root_is_refused(self):
        sleeper = subprocess.Popen(["sleep", "60"])
        try:
            with open(os.path.join(self.unit, "cgroup.procs"), "w") as f:
                f.write(str(sleeper.pid))
            err = self.start(version="254")
            self.assertIn("cgroup.procs is not empty", err)
        finally:
            sleeper.kill()
            sleeper.wait()

    def test_a_placed_start_reaches_the_controller_write_which_this_host_refuses(self):
        err = self.start(version="254")
        self.assertIn("cannot enable cpu memory pids", err)
        # A mismatched SHELLCTL_NATIVE_CGROUP is refused before that write.
        err = self.start(version="254", extra_env={"SHELLCTL_NATIVE_CGROUP": "/elsewhere"})
        self.assertIn("is not our unit cgroup", err)

    def test_the_script_never_writes_cgroup_procs(self):
        text = read(START)
        for line in text.splitlines():
            if "cgroup.procs" in line and not line.lstrip().startswith("#"):
                self.assertNotRegex(line, r">\s*\"?\$?[^ ]*cgroup\.procs", line)


if __name__ == "__main__":
    unittest.main(verbosity=2)
