"""The startup probe (docs/deployment.md "Hosts the sandbox needs"): on a host where the job
sandbox cannot be built, the server says so once before serving and in `/v1/info`, and what
it says is true — a job there does fail with 125, for the reason named. Two such hosts, made
for real and only for the server under test (nothing of the machine changes):

* a root directory that is not a mount point: the server runs chrooted into a plain
  directory (in a mount namespace of its own, where the system trees are bound in); the
  same directory bound onto itself first, as the warning advises, then works;
* user namespaces refused: a non-root server in a user namespace whose
  `user.max_user_namespaces` is 0 (that limit is per user namespace: the host's stays).

And on this machine as it is, the probe finds nothing (`ok: true`)."""
import os
import shlex
import sys
import unittest

from harness import Server

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
from helper_support import ensure_test_user  # noqa: E402

TOKEN = "probe-token"
WARNING = "cannot build the job sandbox"


class ChrootedServer(Server):
    """`shellctl serve` chrooted into <tmp>/root, a plain directory, in its own mount
    namespace: /usr and /etc read-only, /dev, /proc, /sys, a /tmp of its own, and the
    binaries and the test's directories at their own paths. `bound`: the root is first
    bound onto itself (so it is a mount point)."""

    def __init__(self, bound, **kw):
        self.bound = bound
        super().__init__(start=False, **kw)
        self.root = os.path.join(self.tmp, "root")
        for d in ("usr", "etc", "dev", "proc", "sys", "tmp"):
            os.makedirs(os.path.join(self.root, d))
        os.chmod(os.path.join(self.root, "tmp"), 0o1777)
        for link in ("bin", "sbin", "lib", "lib64"):  # Debian 12 has merged /usr
            if os.path.islink("/" + link):
                os.symlink(os.readlink("/" + link), os.path.join(self.root, link))
        self.start()

    def command(self):
        inner = super().command()
        bin_dir = os.path.abspath(self.bin_dir_used)
        r = shlex.quote(self.root)
        steps = [f"mount --bind {r} {r}"] if self.bound else []
        steps += [f"mount --rbind /usr {r}/usr", f"mount -o remount,bind,ro {r}/usr",
                  f"mount --rbind /etc {r}/etc", f"mount --rbind /dev {r}/dev",
                  f"mount -t proc proc {r}/proc", f"mount --rbind /sys {r}/sys"]
        # The binaries and the server's directories, at the paths the test knows them by.
        for d in (bin_dir, self.tmp):
            steps += [f"mkdir -p {r}{shlex.quote(d)}", f"mount --bind {shlex.quote(d)} {r}{shlex.quote(d)}"]
        steps.append(f"exec chroot {r} " + " ".join(shlex.quote(a) for a in inner))
        return ["unshare", "--mount", "--propagation", "private", "sh", "-ec", "; ".join(steps)]


# Runs as root: makes a user namespace with every id mapped onto itself (a helper child in
# the parent namespace writes the maps), sets that namespace's max_user_namespaces to 0,
# becomes uid:gid and execs the server. ctypes: os.unshare is Python 3.12.
USERNS_REFUSED = r"""
import ctypes, os, sys
uid, gid, cmd = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
unshared_r, unshared_w = os.pipe()
mapped_r, mapped_w = os.pipe()
helper = os.fork()
if helper == 0:
    os.read(unshared_r, 1)
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{os.getppid()}/{name}", "w") as f:
            f.write("0 0 4294967295\n")
    os.write(mapped_w, b"m")
    os._exit(0)
CLONE_NEWUSER = 0x10000000
if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUSER) != 0:
    sys.exit("unshare: " + os.strerror(ctypes.get_errno()))
os.write(unshared_w, b"u")
os.read(mapped_r, 1)
os.waitpid(helper, 0)
with open("/proc/sys/user/max_user_namespaces", "w") as f:
    f.write("0\n")
os.setgroups([])
os.setgid(gid)
os.setuid(uid)
os.execvp(cmd[0], cmd)
"""


class UsernsRefusedServer(Server):
    def command(self):
        inner = super().command()
        assert inner[0] == "setpriv", inner  # Server(user=...) switches with setpriv; we do it here
        uid, gid = self.user
        return [sys.executable, "-c", USERNS_REFUSED, str(uid), str(gid), *inner[4:]]


class HostProbe(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root: a mount namespace and chroot, or a user namespace's maps")

    def assert_refused_for(self, server, reason):
        """The warning precedes the startup line, /v1/info says the same, and a job fails
        with 125 saying it too."""
        err = server.read_stderr()
        self.assertIn(WARNING, err)
        self.assertIn(reason, err)
        self.assertLess(err.index(WARNING), err.index("shellctl serving on"), err)
        sandbox = server.ok("GET", "/v1/info")["isolation"]["job_sandbox"]
        self.assertFalse(sandbox["ok"], sandbox)
        self.assertIn(reason, sandbox["problem"])
        self.assertIn(sandbox["problem"], err, "the warning and /v1/info say the same")
        res, out = server.run_to_completion("echo ran")
        self.assertEqual(res["exit_code"], 125, out)
        self.assertNotIn("ran", out.split())

    def test_this_machine_can_build_it(self):
        with Server(token=TOKEN) as s:
            self.assertNotIn(WARNING, s.read_stderr())
            self.assertEqual(s.ok("GET", "/v1/info")["isolation"]["job_sandbox"],
                             {"ok": True, "problem": None})
            res, out = s.run_to_completion("echo ran")
            self.assertEqual((res["exit_code"], out.strip()), (0, "ran"))

    def test_a_root_that_is_not_a_mount_point_is_named_at_startup(self):
        s = ChrootedServer(bound=False, token=TOKEN)
        try:
            self.assert_refused_for(s, "the root directory is not a mount point")
            res, out = s.run_to_completion("echo ran")
            self.assertIn("make private /", out, "the job names the same step")
        finally:
            s.close()

    def test_the_advice_works_a_root_bound_onto_itself(self):
        s = ChrootedServer(bound=True, token=TOKEN)
        try:
            self.assertNotIn(WARNING, s.read_stderr())
            self.assertTrue(s.ok("GET", "/v1/info")["isolation"]["job_sandbox"]["ok"])
            res, out = s.run_to_completion("echo ran")
            self.assertEqual((res["exit_code"], out.strip()), (0, "ran"), out)
        finally:
            s.close()

    def test_user_namespaces_refused_are_named_at_startup(self):
        owner = ensure_test_user()
        if owner is None:
            self.skipTest("cannot create the unprivileged test user")
        s = UsernsRefusedServer(token=TOKEN, user=owner)
        try:
            # clone(CLONE_NEWUSER) with the limit at 0: ENOSPC.
            self.assert_refused_for(s, os.strerror(28))
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
