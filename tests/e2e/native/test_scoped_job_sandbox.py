"""The job sandbox of a native test scope (docs/native-scopes.md "The scoped job sandbox";
S12-S15, S17), component tier: the real shellctl-runner, started as the scope's worker starts it
(SHELLCTL_NATIVE_JOB_* in its own environment, a job dir in the spool, the start gate), on the
real kernel. A probe script inside the job checks its world and tries the escapes: only its own
PIDs, no spool, sockets or host paths, no capabilities, no_new_privs and a seccomp filter,
unshare / clone(CLONE_NEWNS) / mount / capset refused with EPERM and clone3 with ENOSYS while
threads and fork work, the image, /inputs and /run/job read-only, Home, workspace and /tmp
writable, rlimits that cannot be raised, no ptrace of or signal to its init, nothing of the
init's root. A Landlock that fails (injected by a seccomp filter around the runner) is exit 125
and the script never runs.

Two shapes: as root (the runner's namespaces made directly), and as the unprivileged test user
inside a user namespace whose root maps to it, as in a scope's worker. Until the worker
exists, the payload is a directory this test makes (the worker mounts a finite tmpfs there)."""
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
from helper_support import BIN_DIR, HANG_GUARD, RUNNER, ensure_test_user  # noqa: E402

SHELLCTL = os.path.join(BIN_DIR, "shellctl")

OPEN_FILES = 64
OUTPUT_BYTES = 1 << 20
FILE_BYTES = 1 << 20

# Inside the job: every check's outcome as one JSON line on stdout.
PROBE = r'''#!/usr/bin/python3
import ctypes, errno, json, os, resource, stat, threading
libc = ctypes.CDLL(None, use_errno=True)
out = {}

def err_of(rc):
    return 0 if rc == 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))

def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))

status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
out["caps"] = {k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
out["no_new_privs"] = status["NoNewPrivs"].strip()
out["seccomp"] = status["Seccomp"].strip()
out["uid"] = os.getuid()
out["home"] = os.environ.get("HOME")
out["cwd"] = os.getcwd()
out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
out["root"] = sorted(os.listdir("/"))
out["dev"] = sorted(os.listdir("/dev"))
out["inputs"] = sorted(os.listdir("/inputs"))
out["input_text"] = open("/inputs/in.txt").read()
out["script"] = os.path.realpath(__file__)
out["hidden"] = {p: os.path.exists(p) for p in HIDDEN}
sockets = []
for top in ("/usr", "/etc", "/home", "/workspace", "/tmp", "/inputs", "/run", "/dev"):
    for d, subdirs, files in os.walk(top):
        for f in files + subdirs:
            try:
                if stat.S_ISSOCK(os.lstat(os.path.join(d, f)).st_mode):
                    sockets.append(os.path.join(d, f))
            except OSError:
                pass
out["sockets"] = sockets

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x10000000, 0x20000000, 0x40000000
out["unshare_user"] = err_of(libc.unshare(CLONE_NEWUSER))
out["unshare_mount"] = err_of(libc.unshare(CLONE_NEWNS))
out["unshare_net"] = err_of(libc.unshare(CLONE_NEWNET))
pid = libc.syscall(56, CLONE_NEWNS | 17, 0, 0, 0, 0)      # clone(CLONE_NEWNS|SIGCHLD)
if pid == 0:
    os._exit(0)
out["clone_newns"] = "ok" if pid > 0 else err_of(-1)
pid = libc.syscall(56, CLONE_NEWPID | 17, 0, 0, 0, 0)
if pid == 0:
    os._exit(0)
out["clone_newpid"] = "ok" if pid > 0 else err_of(-1)
out["clone3"] = err_of(libc.syscall(435, 0, 0))
out["mount"] = err_of(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
out["umount"] = err_of(libc.umount2(b"/usr", 2))
hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
data = (ctypes.c_uint32 * 6)()
out["capset"] = err_of(libc.syscall(126, hdr, data))
out["setns"] = err_of(libc.syscall(308, 0, 0))
out["ptrace_init"] = err_of(libc.ptrace(16, 1, 0, 0))      # PTRACE_ATTACH
out["kill_init"] = attempt(lambda: os.kill(1, 9))
out["init_root"] = attempt(lambda: os.listdir("/proc/1/root/"))
out["init_environ"] = attempt(lambda: open("/proc/1/environ").read())

seen = []
t = threading.Thread(target=lambda: seen.append(1)); t.start(); t.join()
out["thread"] = seen == [1]
child = os.fork()
if child == 0:
    os._exit(7)
out["fork"] = os.waitpid(child, 0)[1] >> 8

def write(path):
    with open(path, "w") as f:
        f.write("x")
for name, path in (("home", "/home/dify/f"), ("workspace", "/workspace/f"), ("tmp", "/tmp/f"),
                   ("usr", "/usr/shellctl-probe"), ("etc", "/etc/shellctl-probe"),
                   ("inputs", "/inputs/new"), ("input_file", "/inputs/in.txt"),
                   ("run_job", "/run/job/new"), ("script", "/run/job/script"),
                   ("root_dir", "/shellctl-probe"), ("dev_dir", "/dev/shellctl-probe")):
    out["write_" + name] = attempt(lambda: write(path))
out["write_dev_null"] = attempt(lambda: write("/dev/null"))

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
out["nofile"] = [soft, hard]
raised = (ctypes.c_ulong * 2)(hard + 1, hard + 1)   # the kernel's answer, not Python's check
out["raise_nofile"] = err_of(libc.setrlimit(7, raised))  # RLIMIT_NOFILE
out["fsize"] = list(resource.getrlimit(resource.RLIMIT_FSIZE))
def big():
    with open("/tmp/big", "wb") as f:
        f.write(b"y" * (FILE_BYTES + 1))
out["write_past_fsize"] = attempt(big)
print("PROBE " + json.dumps(out))
'''


def seccomp_denying_landlock():
    """A preexec_fn: no_new_privs and a filter answering landlock_create_ruleset with ENOSYS
    (a kernel without Landlock, as the runner sees it); everything else allowed."""
    import ctypes
    prog_bytes = b"".join([
        struct.pack("HBBI", 0x20, 0, 0, 0),                  # ld [nr]
        struct.pack("HBBI", 0x15, 0, 1, 444),                # jeq landlock_create_ruleset
        struct.pack("HBBI", 0x06, 0, 0, 0x00050000 | 38),    # ret ERRNO(ENOSYS)
        struct.pack("HBBI", 0x06, 0, 0, 0x7fff0000),         # ret ALLOW
    ])

    def apply():
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(prog_bytes)

        class prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
        p = prog(4, ctypes.addressof(buf))
        if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(p), 0, 0) != 0:
            os._exit(99)
    return apply


class ScopedJob(unittest.TestCase):
    """As root: the runner's namespaces are made directly."""
    owner = None  # (uid, gid) of the worker's user, None = root

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shellctl-scoped-")
        os.chmod(self.tmp, 0o755)
        self.spool = self.make("spool")
        self.job_dir = self.make("spool/jobs/j1", 0o700)
        self.payload = self.make("payload")
        self.inputs = self.make("inputs")
        self.write("inputs/in.txt", "input bytes\n", 0o444)
        # The worker's catalog with its budget row (docs/native-scopes.md "The scope worker"),
        # as the worker makes it: the output copier reserves every byte there (shellctl
        # native-budget).
        self.secret = os.path.join(self.spool, "shellctl.db")
        self.make_budget(OUTPUT_BYTES)

    def make_budget(self, output_bytes):
        if os.path.exists(self.secret):
            os.unlink(self.secret)
        db = sqlite3.connect(self.secret)
        db.executescript(
            "CREATE TABLE native_identity(scope_id TEXT NOT NULL, generation INTEGER NOT NULL,"
            " created_at TEXT NOT NULL);"
            "CREATE TABLE native_budget(id INTEGER PRIMARY KEY CHECK (id = 1),"
            " input_limit INTEGER NOT NULL, input_used INTEGER NOT NULL,"
            " output_limit INTEGER NOT NULL, output_used INTEGER NOT NULL,"
            " jobs_limit INTEGER NOT NULL, jobs_admitted INTEGER NOT NULL);")
        db.execute("INSERT INTO native_identity VALUES('scope-a', 1, '2026-12-05T00:00:00Z')")
        db.execute("INSERT INTO native_budget VALUES(1, 100000, 0, ?, 0, 64, 0)", (output_bytes,))
        db.commit()
        db.close()
        if self.owner:
            os.chown(self.secret, *self.owner)

    def output_used(self):
        db = sqlite3.connect(self.secret)
        try:
            return db.execute("SELECT output_used FROM native_budget").fetchone()[0]
        finally:
            db.close()

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def make(self, rel, mode=0o755):
        p = os.path.join(self.tmp, rel)
        os.makedirs(p, exist_ok=True)
        os.chmod(p, mode)
        if self.owner:
            os.chown(p, *self.owner)
        return p

    def write(self, rel, text, mode=0o600):
        p = os.path.join(self.tmp, rel)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)
        if self.owner:
            os.chown(p, *self.owner)
        return p

    def env(self, **extra):
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin",
               "HOME": "/root",
               "SHELLCTL_NATIVE_JOB_PAYLOAD": self.payload,
               "SHELLCTL_NATIVE_JOB_INPUTS": self.inputs,
               "SHELLCTL_NATIVE_JOB_SCRIPT_BYTES": str(64 * 1024 + 4096),
               "SHELLCTL_NATIVE_JOB_OPEN_FILES": str(OPEN_FILES),
               "SHELLCTL_NATIVE_JOB_FILE_BYTES": str(FILE_BYTES),
               "SHELLCTL_NATIVE_JOB_BUDGET_HELPER": SHELLCTL,
               "SHELLCTL_NATIVE_JOB_BUDGET_DB": self.secret}
        env.update(extra)
        return env

    def command(self):
        argv = [RUNNER, self.job_dir, "j1", "/home/dify", "stdio"]
        if self.owner:
            uid, gid = self.owner
            # The worker's shape: root of a user namespace mapped to its unprivileged user.
            argv = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                    "unshare", "--user", "--map-root-user", "--net", "--"] + argv
        return argv

    def run_job(self, script, env=None, preexec_fn=None):
        self.write("spool/jobs/j1/script", script, 0o644)
        self.write("spool/jobs/j1/output.log", "")
        self.write("spool/jobs/j1/start-gate", "")
        r = subprocess.run(self.command(), env=env or self.env(), capture_output=True,
                           timeout=HANG_GUARD, preexec_fn=preexec_fn)
        code = open(os.path.join(self.job_dir, "runner-exit-code")).read().strip()
        out = open(os.path.join(self.job_dir, "output.log")).read()
        err = open(os.path.join(self.job_dir, "stderr.log")).read()
        return r, code, out, err

    def probe(self):
        hidden = [self.tmp, self.spool, self.secret, "/run/dify-native", "/root", "/work",
                  "/var", "/sys", "/run/systemd", "/run/user", "/proc/1/root/etc"]
        script = PROBE.replace("HIDDEN", json.dumps(hidden)).replace(
            "FILE_BYTES", str(FILE_BYTES))
        _, code, out, err = self.run_job(script)
        self.assertEqual(code, "0", f"out={out!r} err={err!r}")
        line = [l for l in out.splitlines() if l.startswith("PROBE ")]
        self.assertTrue(line, f"out={out!r} err={err!r}")
        return json.loads(line[0][len("PROBE "):])

    def test_the_job_sees_only_its_world(self):
        p = self.probe()
        for name in ("usr", "etc", "home", "workspace", "tmp", "inputs", "run", "proc", "dev"):
            self.assertIn(name, p["root"])
        for absent in ("var", "sys", "root", "srv", "opt", "mnt", "media", "boot"):
            self.assertNotIn(absent, p["root"])
        self.assertEqual(p["hidden"], {k: False for k in p["hidden"]})
        self.assertEqual(p["sockets"], [])
        self.assertEqual(p["inputs"], ["in.txt"])
        self.assertEqual(p["input_text"], "input bytes\n")
        self.assertEqual(p["script"], "/run/job/script")
        self.assertEqual((p["home"], p["cwd"]), ("/home/dify", "/home/dify"))
        # Its own PID namespace: its init (1), itself, and what it started; nothing else.
        self.assertIn(1, p["pids"])
        self.assertLess(len(p["pids"]), 8, p["pids"])
        self.assertTrue(set(p["dev"]) >= {"null", "zero", "random", "urandom", "tty"}, p["dev"])
        self.assertFalse(set(p["dev"]) & {"sda", "vda", "kmsg", "mem", "kvm", "fuse"}, p["dev"])

    def test_no_capabilities_no_new_privileges_and_a_filter(self):
        p = self.probe()
        self.assertEqual(set(p["caps"].values()), {"0000000000000000"}, p["caps"])
        self.assertEqual(p["no_new_privs"], "1")
        self.assertEqual(p["seccomp"], "2")
        self.assertEqual(p["uid"], 0)  # root of the worker's (or the host's) user namespace

    def test_namespaces_mounts_and_capabilities_cannot_change(self):
        p = self.probe()
        for key in ("unshare_user", "unshare_mount", "unshare_net", "clone_newns", "clone_newpid",
                    "mount", "umount", "capset", "setns"):
            self.assertEqual(p[key], "EPERM", key)
        self.assertEqual(p["clone3"], "ENOSYS")
        self.assertTrue(p["thread"])
        self.assertEqual(p["fork"], 7)

    def test_its_init_is_out_of_reach(self):
        p = self.probe()
        self.assertEqual(p["ptrace_init"], "EPERM")
        self.assertEqual(p["kill_init"], "EPERM")
        self.assertIn(p["init_root"], ("EACCES", "EPERM"))
        self.assertIn(p["init_environ"], ("EACCES", "EPERM"))

    def test_read_only_image_inputs_and_script_writable_home_workspace_tmp(self):
        p = self.probe()
        for name in ("home", "workspace", "tmp"):
            self.assertEqual(p["write_" + name], "ok", name)
        for name in ("usr", "etc", "inputs", "input_file", "run_job", "script", "root_dir",
                     "dev_dir"):
            self.assertIn(p["write_" + name], ("EROFS", "EACCES", "EPERM"), name)
        self.assertEqual(p["write_dev_null"], "ok")
        # What the job wrote is in the payload; the inputs are as they were.
        self.assertEqual(open(os.path.join(self.payload, "home", "f")).read(), "x")
        self.assertEqual(open(os.path.join(self.payload, "workspace", "f")).read(), "x")
        self.assertEqual(sorted(os.listdir(self.inputs)), ["in.txt"])
        self.assertEqual(open(os.path.join(self.inputs, "in.txt")).read(), "input bytes\n")

    def test_rlimits_hold(self):
        p = self.probe()
        self.assertEqual(p["nofile"], [OPEN_FILES, OPEN_FILES])
        self.assertEqual(p["raise_nofile"], "EPERM")
        self.assertEqual(p["fsize"], [FILE_BYTES, FILE_BYTES])
        self.assertEqual(p["write_past_fsize"], "EFBIG")

    def test_a_failing_landlock_is_125_and_nothing_runs(self):
        marker = os.path.join(self.payload, "home", "ran")
        _, code, out, err = self.run_job("touch /home/dify/ran\necho ran\n",
                                         preexec_fn=seccomp_denying_landlock())
        self.assertEqual(code, "125", f"out={out!r} err={err!r}")
        self.assertIn("landlock", err)
        self.assertNotIn("ran", out)
        self.assertFalse(os.path.exists(marker))

    def test_malformed_settings_are_125_and_nothing_runs(self):
        marker = os.path.join(self.payload, "home", "ran")
        for key, value in (("SHELLCTL_NATIVE_JOB_OPEN_FILES", "0"),
                           ("SHELLCTL_NATIVE_JOB_FILE_BYTES", "12x"),
                           ("SHELLCTL_NATIVE_JOB_SCRIPT_BYTES", ""),
                           ("SHELLCTL_NATIVE_JOB_PAYLOAD", "relative/payload"),
                           ("SHELLCTL_NATIVE_JOB_BUDGET_DB", "")):
            _, code, out, err = self.run_job("touch /home/dify/ran\n", env=self.env(**{key: value}))
            self.assertEqual(code, "125", f"{key}={value!r}: out={out!r} err={err!r}")
            self.assertIn(key, err)
            self.assertFalse(os.path.exists(marker))

    def test_output_is_reserved_before_it_is_written(self):
        _, code, out, _ = self.run_job("echo hello from the scope\n")
        self.assertEqual((code, out), ("0", "hello from the scope\n"))
        self.assertEqual(self.output_used(), len(out))

    def test_output_past_the_budget_kills_the_namespace(self):
        self.make_budget(1000)
        marker = os.path.join(self.payload, "tmp", "alive")
        _, code, out, err = self.run_job(
            "(sleep 3; touch /tmp/alive) & "
            "i=0; while [ $i -lt 100000 ]; do echo line-$i; i=$((i+1)); done; sleep 100\n")
        self.assertEqual(len(out), 1000)  # what fits, and not a byte more
        self.assertTrue(out.startswith("line-0\n"))
        self.assertEqual(self.output_used(), 1000)
        self.assertTrue(os.path.exists(os.path.join(self.job_dir, ".output-overflow")))
        self.assertEqual(code, "-1")  # killed: the whole namespace went at once
        time.sleep(4)
        self.assertFalse(os.path.exists(marker), "a background process outlived the overflow")

    def test_a_script_larger_than_its_file_system_is_125(self):
        _, code, _, err = self.run_job("echo x\n" + "#" * 5000 + "\n",
                                       env=self.env(SHELLCTL_NATIVE_JOB_SCRIPT_BYTES="4096"))
        self.assertEqual(code, "125")
        self.assertIn("larger than its 4096-byte file system", err)

    def test_the_script_runs_under_the_ordinary_exit_rules(self):
        _, code, out, _ = self.run_job("echo hello from the scope; exit 3\n")
        self.assertEqual((code, out), ("3", "hello from the scope\n"))
        # A cwd that does not exist in the scoped world: 111, as for any job.
        argv = self.command()
        argv[argv.index("/home/dify")] = "/nowhere"
        self.write("spool/jobs/j1/script", "echo no\n", 0o644)
        subprocess.run(argv, env=self.env(), capture_output=True, timeout=HANG_GUARD)
        self.assertEqual(open(os.path.join(self.job_dir, "runner-exit-code")).read().strip(), "111")


class ScopedJobInWorkerUserNamespace(ScopedJob):
    """As the unprivileged test user, root of a user namespace mapped to it (the worker)."""

    @classmethod
    def setUpClass(cls):
        ids = ensure_test_user()
        assert ids is not None, "these tests need root to create the unprivileged test user"
        cls.owner = ids


if __name__ == "__main__":
    unittest.main()
