"""The native test supervisor's startup checks against the real kernel
(docs/native-scopes.md "The scope service"; component tier: refusal): this host has no AppArmor,
no seccomp filter on our processes and no cgroup v2 cpu/memory/pids controllers, so
`--native-check` fails exactly those checks (and `uid` as root) and passes Landlock and the
namespace probe; `serve --native-test-supervisor` stops at the first failure with nothing bound,
written or created. Each check is then flipped where the host allows: a permissive seccomp
filter, the manager placement in a unit cgroup, the roots, a blank token, a catalog whose
retained scopes were made with another token."""
import hashlib
import hmac
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest
import uuid

from harness import BIN_DIR, free_port

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
from helper_support import ensure_test_user  # noqa: E402

SHELLCTL = os.path.join(BIN_DIR, "shellctl")
UNIFIED = "/sys/fs/cgroup/unified" if os.path.isdir("/sys/fs/cgroup/unified/") else "/sys/fs/cgroup"
HOST_FAILURES = {"apparmor", "seccomp", "cgroup_placement", "cgroup_controllers", "cgroup_finite"}
ALL = ["uid", "token", "seccomp", "apparmor", "landlock", "namespaces", "cgroup_placement",
       "cgroup_controllers", "cgroup_finite", "roots", "catalog", "signing_key", "helpers"]

# Runs argv[1:] under a seccomp filter that allows everything (Seccomp: 2 in its status).
SECCOMP_WRAPPER = r"""
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
insn = struct.pack("HBBI", 0x06, 0, 0, 0x7fff0000)  # BPF_RET|BPF_K SECCOMP_RET_ALLOW
buf = ctypes.create_string_buffer(insn)
class prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
p = prog(1, ctypes.addressof(buf))
assert libc.prctl(38, 1, 0, 0, 0) == 0                        # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.byref(p), 0, 0) == 0, ctypes.get_errno()  # SECCOMP_MODE_FILTER
os.execvp(sys.argv[1], sys.argv[1:])
"""
# The same, but unshare(2) (272 on x86_64) fails with EPERM.
DENY_UNSHARE_WRAPPER = SECCOMP_WRAPPER.replace(
    'insn = struct.pack("HBBI", 0x06, 0, 0, 0x7fff0000)  # BPF_RET|BPF_K SECCOMP_RET_ALLOW',
    'insn = b"".join(struct.pack("HBBI", *i) for i in ((0x20, 0, 0, 0), (0x15, 0, 1, 272),'
    ' (0x06, 0, 0, 0x00050001), (0x06, 0, 0, 0x7fff0000)))').replace("prog(1,", "prog(4,")


class NativeChecks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shellctl-native-")
        os.chmod(self.tmp, 0o755)
        self.base = os.path.join(self.tmp, "base")
        self.inputs = os.path.join(self.tmp, "inputs")
        for d in (self.base, self.inputs):
            os.makedirs(d, mode=0o755)
            os.chmod(d, 0o755)
        self.state = os.path.join(self.tmp, "state")
        self.cgroups_before = sorted(os.listdir(UNIFIED))

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.tmp])

    def command(self, *extra, token="native-token", check=True, roots=True):
        cmd = [SHELLCTL, "serve", "--native-test-supervisor", "--listen", f"127.0.0.1:{free_port()}",
               "--state-dir", self.state]
        if check:
            cmd.append("--native-check")
        if roots:
            cmd += ["--native-base-root", self.base, "--native-input-root", self.inputs]
        if token is not None:
            cmd += ["--token", token]
        return cmd + list(extra)

    def run_checks(self, cmd, user=None, env=None, prefix=()):
        if user is not None:
            cmd = ["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups"] + cmd
        e = {k: v for k, v in os.environ.items() if not k.startswith("SHELLCTL_")}
        e["PATH"] = BIN_DIR + os.pathsep + e.get("PATH", "/usr/bin:/bin")
        e.update(env or {})
        r = subprocess.run(list(prefix) + cmd, env=e, capture_output=True, text=True, timeout=120)
        return r

    def report(self, r):
        self.assertTrue(r.stdout.endswith("\n"), r.stdout + r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(set(doc), {"ok", "checks", "capability_digest"})
        self.assertRegex(doc["capability_digest"], r"^sha256:[0-9a-f]{64}$")
        self.assertEqual([c["id"] for c in doc["checks"]], ALL)
        for c in doc["checks"]:
            self.assertEqual(set(c), {"id", "ok", "detail"})
            self.assertTrue(c["detail"])
        self.assertEqual(doc["ok"], all(c["ok"] for c in doc["checks"]))
        self.assertEqual(r.returncode, 0 if doc["ok"] else 1)
        return {c["id"]: c for c in doc["checks"]}

    def failing(self, checks):
        return {i for i, c in checks.items() if not c["ok"]}

    def assert_nothing_changed(self):
        self.assertFalse(os.path.exists(self.state), "the checks created the state dir")
        self.assertEqual(sorted(os.listdir(UNIFIED)), self.cgroups_before)

    # -- this host, as it is ---------------------------------------------------------------
    def test_as_root_this_host_fails_exactly_its_missing_primitives(self):
        checks = self.report(self.run_checks(self.command()))
        self.assertEqual(self.failing(checks), HOST_FAILURES | {"uid"})
        self.assertIn("cpu memory pids", checks["cgroup_controllers"]["detail"])
        self.assertIn("root", checks["uid"]["detail"])
        self.assertTrue(checks["landlock"]["detail"].startswith("ABI "))
        self.assertTrue(checks["namespaces"]["ok"], checks["namespaces"]["detail"])
        self.assert_nothing_changed()

    def test_as_an_unprivileged_user_uid_passes(self):
        user = ensure_test_user()
        self.assertIsNotNone(user, "needs root to create the unprivileged test user")
        checks = self.report(self.run_checks(self.command(), user=user))
        self.assertEqual(self.failing(checks), HOST_FAILURES)
        self.assertTrue(checks["namespaces"]["ok"], checks["namespaces"]["detail"])
        self.assert_nothing_changed()

    def test_serve_stops_at_the_first_failure_with_nothing_left_behind(self):
        r = self.run_checks(self.command(check=False))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertRegex(r.stderr, r"^shellctl: native test supervisor: uid: runs as root")
        self.assert_nothing_changed()
        user = ensure_test_user()
        r = self.run_checks(self.command(check=False), user=user)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"^shellctl: native test supervisor: seccomp: ")
        self.assert_nothing_changed()

    # -- each check flipped where the host allows --------------------------------------------
    def test_seccomp_passes_under_a_filter(self):
        user = ensure_test_user()
        checks = self.report(self.run_checks(self.command(), user=user,
                                             prefix=[sys.executable, "-c", SECCOMP_WRAPPER]))
        self.assertTrue(checks["seccomp"]["ok"], checks["seccomp"]["detail"])
        self.assertEqual(self.failing(checks), HOST_FAILURES - {"seccomp"})

    def test_namespaces_fail_when_unshare_is_denied(self):
        """A filter that denies unshare(2) (as a container runtime's default profile may): the
        probe names the step that failed; the seccomp check passes (a filter is active)."""
        checks = self.report(self.run_checks(self.command(),
                                             prefix=[sys.executable, "-c", DENY_UNSHARE_WRAPPER]))
        self.assertFalse(checks["namespaces"]["ok"])
        self.assertEqual(checks["namespaces"]["detail"], "user namespace: Operation not permitted")
        self.assertTrue(checks["seccomp"]["ok"])
        self.assertTrue(checks["landlock"]["ok"])

    def test_blank_token(self):
        checks = self.report(self.run_checks(self.command(token="  ")))
        self.assertFalse(checks["token"]["ok"])
        checks = self.report(self.run_checks(self.command(token=None)))
        self.assertFalse(checks["token"]["ok"])

    def test_roots(self):
        user = ensure_test_user()
        checks = self.report(self.run_checks(self.command(roots=False), user=user))
        self.assertIn("base root is not set", checks["roots"]["detail"])
        os.chmod(self.inputs, 0o777)
        checks = self.report(self.run_checks(self.command(), user=user))
        self.assertIn("writable", checks["roots"]["detail"])
        os.chmod(self.inputs, 0o755)
        os.chown(self.base, *user)
        checks = self.report(self.run_checks(self.command(), user=user))
        self.assertIn("not owned by root", checks["roots"]["detail"])
        os.chown(self.base, 0, 0)
        self.assertTrue(self.report(self.run_checks(self.command(), user=user))["roots"]["ok"])

    def test_manager_placement_in_a_unit_cgroup(self):
        unit = os.path.join(UNIFIED, "shellctl-test-" + uuid.uuid4().hex[:8])
        rel = unit[len(UNIFIED):]
        sleeper = None
        try:
            for leaf in ("manager", "other"):
                os.makedirs(os.path.join(unit, leaf))

            def in_leaf(leaf, env=None):
                prefix = ["sh", "-c", f'echo $$ > {unit}/{leaf}/cgroup.procs && exec "$@"', "sh"]
                return self.report(self.run_checks(self.command(), prefix=prefix, env=env))

            checks = in_leaf("manager")
            self.assertTrue(checks["cgroup_placement"]["ok"], checks["cgroup_placement"]["detail"])
            self.assertEqual(checks["cgroup_placement"]["detail"], f"0::{rel}/manager")
            # Still no controllers delegated to it on this host.
            self.assertIn("lacks cpu memory pids", checks["cgroup_controllers"]["detail"])
            checks = in_leaf("other")
            self.assertIn("not " + rel + "/manager", checks["cgroup_placement"]["detail"])
            checks = in_leaf("manager", env={"SHELLCTL_NATIVE_CGROUP": "/elsewhere"})
            self.assertIn("SHELLCTL_NATIVE_CGROUP is /elsewhere", checks["cgroup_placement"]["detail"])
            sleeper = subprocess.Popen(["sh", "-c", f"echo $$ > {unit}/cgroup.procs && exec sleep 600"])
            for _ in range(200):
                with open(os.path.join(unit, "cgroup.procs")) as f:
                    if f.read().strip():
                        break
            checks = in_leaf("manager")
            self.assertIn("cgroup.procs is not empty", checks["cgroup_placement"]["detail"])
        finally:
            if sleeper is not None:
                sleeper.kill()
                sleeper.wait()
            for leaf in ("manager", "other", ""):
                d = os.path.join(unit, leaf)
                try:
                    with open(os.path.join(d, "cgroup.procs")) as f:
                        for pid in f.read().split():
                            with open(os.path.join(UNIFIED, "cgroup.procs"), "w") as out:
                                out.write(pid)
                    os.rmdir(d)
                except OSError:
                    pass

    def test_signing_key_with_retained_scopes(self):
        db_dir = os.path.join(self.state, "native")
        os.makedirs(db_dir)
        db = sqlite3.connect(os.path.join(db_dir, "catalog.db"))
        key = hmac.new(b"token-a", b"dify-native/scope-token/v1", hashlib.sha256).digest()
        db.executescript("CREATE TABLE native_meta(key TEXT PRIMARY KEY, value TEXT);"
                         "CREATE TABLE native_scopes(scope_id TEXT PRIMARY KEY, generation INTEGER);"
                         "INSERT INTO native_scopes VALUES ('s1', 1);")
        db.execute("INSERT INTO native_meta VALUES ('fingerprint', ?)", (hashlib.sha256(key).hexdigest(),))
        db.commit()
        db.close()
        checks = self.report(self.run_checks(self.command(token="token-a")))
        self.assertTrue(checks["catalog"]["ok"], checks["catalog"]["detail"])
        self.assertTrue(checks["signing_key"]["ok"], checks["signing_key"]["detail"])
        checks = self.report(self.run_checks(self.command(token="token-b")))
        self.assertFalse(checks["signing_key"]["ok"])
        self.assertIn("fingerprint mismatch", checks["signing_key"]["detail"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
