"""A property of every Home operation, checked over random cases (seeded, so a failure names
its case): whatever a Home holds (symlinks relative, absolute, into the state dir, in
loops, dangling; hard links; FIFOs; sockets) and whatever archive is restored into it,

  * nothing outside Home and nothing in the state dir changes,
  * every restore and every save answers (none blocks: each has a bound), and
  * a save holds only Home's own entries, as they are (symlinks as links, never
    followed; nothing of the state dir; nothing of what lies outside Home).

The server runs with its state dir in the default place inside Home (where a mistake would
reach it) and serves the cases one after another; Home is planted afresh for each.
SHELLCTL_PROPERTY_CASES sets the number of cases (60)."""
import io
import os
import random
import shutil
import socket
import stat
import subprocess
import sys
import tarfile
import tempfile
import unittest

from harness import Server

sys.path.insert(0, os.path.dirname(__file__))
from home_trees import tree_of  # noqa: E402

TOKEN = "home-property"
CASES = int(os.environ.get("SHELLCTL_PROPERTY_CASES", "60"))
OUTSIDE_SECRET = b"outside-secret-3b1f"


tree = tree_of


class Planter:
    """A random Home: names from a small pool, so that archive entries meet them."""

    NAMES = ["a", "b", "c", "d", "e", "sub", "x.txt", "link", "loop", "fifo", "sock"]

    def __init__(self, rng, home, state, outside):
        self.rng, self.home, self.state, self.outside = rng, home, state, outside
        self.rel_state = os.path.relpath(state, home)

    def link_target(self):
        r = self.rng
        return r.choice([
            r.choice(self.NAMES),                                  # inside, maybe dangling
            "../" + r.choice(self.NAMES),                          # relative, maybe out
            "../../outside",                                       # out of Home
            self.outside,                                          # absolute, out
            os.path.join(self.outside, "secret"),
            self.rel_state,                                        # into the state dir
            os.path.join(self.rel_state, "runtime", "bin"),
            os.path.join(self.rel_state, "shellctl.db"),
            self.state,                                            # absolute, state dir
            os.path.join(self.state, "runtime", "tmux.sock"),
            ".local/share",                                        # an ancestor of it
            "/proc/self/root",
            "loop",                                                # a loop (loop -> loop)
        ])

    def plant(self):
        r = self.rng
        made = []
        for _ in range(r.randint(3, 12)):
            parent = self.home if r.random() < 0.6 or not made else r.choice([self.home] + [
                p for p in made if os.path.isdir(p) and not os.path.islink(p)])
            path = os.path.join(parent, r.choice(self.NAMES))
            if os.path.lexists(path):
                continue
            kind = r.choice(["dir", "file", "symlink", "symlink", "hardlink", "fifo", "socket"])
            try:
                if kind == "dir":
                    os.mkdir(path)
                elif kind == "file":
                    with open(path, "wb") as f:
                        f.write(os.urandom(r.randint(0, 64)))
                    os.chmod(path, r.choice([0o644, 0o600, 0o4755, 0o2755, 0o444]))
                elif kind == "symlink":
                    os.symlink(self.link_target(), path)
                elif kind == "hardlink":
                    files = [p for p in made if os.path.isfile(p) and not os.path.islink(p)]
                    if not files:
                        continue
                    os.link(r.choice(files), path)
                elif kind == "fifo":
                    os.mkfifo(path)
                else:
                    s = socket.socket(socket.AF_UNIX)
                    s.bind(path)
                    s.close()
            except OSError:
                continue
            made.append(path)

    def archive(self):
        r = self.rng
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            written = []
            for _ in range(r.randint(1, 10)):
                depth = r.randint(1, 3)
                name = "/".join(r.choice(self.NAMES + ["..", "new"]) for _ in range(depth))
                if r.random() < 0.1:
                    name = os.path.join(self.rel_state, r.choice(["shellctl.db", "runtime/bin/shellctl-runner", "x"]))
                info = tarfile.TarInfo(name)
                kind = r.choice(["file", "file", "dir", "symlink", "hardlink"])
                if kind == "file":
                    data = os.urandom(r.randint(0, 128))
                    info.size = len(data)
                    info.mode = r.choice([0o644, 0o4755, 0o755, 0o2777])
                    t.addfile(info, io.BytesIO(data))
                    written.append(name)
                elif kind == "dir":
                    info.type = tarfile.DIRTYPE
                    info.mode = r.choice([0o755, 0o700, 0o555])
                    t.addfile(info)
                elif kind == "symlink":
                    info.type = tarfile.SYMTYPE
                    info.linkname = self.link_target()
                    t.addfile(info)
                else:
                    info.type = tarfile.LNKTYPE
                    pool = written + self.NAMES + [os.path.join(self.rel_state, "shellctl.db"),
                                                   os.path.join(self.rel_state, "runtime", "tmux.sock")]
                    info.linkname = r.choice(pool)
                    t.addfile(info)
        return subprocess.run(["zstd", "-q", "-c"], input=buf.getvalue(), capture_output=True,
                              check=True).stdout


def save_members(archive):
    raw = subprocess.run(["zstd", "-q", "-d", "-c"], input=archive, capture_output=True,
                         check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as t:
        return t.getmembers(), raw


class HomeProperty(unittest.TestCase):
    def test_random_homes_and_archives(self):
        tmp = tempfile.mkdtemp(prefix="shellctl-e2e-prop-")
        os.chmod(tmp, 0o755)
        home = os.path.join(tmp, "home")
        state = os.path.join(home, ".local", "share", "shellctl")
        outside = os.path.join(tmp, "outside")
        os.makedirs(state)
        os.makedirs(outside)
        with open(os.path.join(outside, "secret"), "wb") as f:
            f.write(OUTSIDE_SECRET)
        server = Server(token=TOKEN, home=home, state_dir=state,
                        env={"SHELLCTL_SNAPSHOT_TIMEOUT": "20s"})
        try:
            res, _ = server.run_to_completion("echo ready")
            self.assertEqual(res["exit_code"], 0)
            self.statuses = {}
            for case in range(CASES):
                with self.subTest(case=case):
                    self.one_case(random.Random(case), server, home, state, outside, tmp)
            # The cases reach both ends: restores that went through and ones refused.
            print(f"restores answered: {dict(sorted(self.statuses.items()))}")
            self.assertGreater(self.statuses.get(200, 0), CASES // 10, self.statuses)
            self.assertGreater(self.statuses.get(400, 0), CASES // 10, self.statuses)
        finally:
            server.close()
            shutil.rmtree(tmp, ignore_errors=True)

    def one_case(self, rng, server, home, state, outside, tmp):
        # Home afresh (but the state dir and the directories leading to it).
        keep = {os.path.join(home, ".local"), os.path.join(home, ".local", "share"), state}
        for base, dirs, files in os.walk(home, topdown=False):
            for name in files + dirs:
                path = os.path.join(base, name)
                if path == state or path.startswith(state + "/") or path in keep:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    os.chmod(path, 0o700)
                    os.rmdir(path)
                else:
                    os.unlink(path)
        p = Planter(rng, home, state, outside)
        p.plant()
        state_before = tree(state)
        outside_before = tree(outside)
        siblings_before = sorted(os.listdir(tmp))
        for attempt in range(2):
            st, _, body = server.request("POST", "/v1/snapshot/restore", raw_body=p.archive(), timeout=40)
            self.assertIn(st, (200, 400, 500), body)
            self.statuses[st] = self.statuses.get(st, 0) + 1
            if st != 200:
                self.assertIn(body["error"]["code"], ("archive_malformed", "restore_failed"), body)
                # The machine's failures here can only be the kernel refusing a write to the
                # read-only mask over the state dir; never a timeout.
                self.assertNotIn("timeout", body["error"]["message"])
        self.assertEqual(tree(state), state_before)
        self.assertEqual(tree(outside), outside_before)
        self.assertEqual(sorted(os.listdir(tmp)), siblings_before)
        st, _, archive = server.request("POST", "/v1/snapshot/save", timeout=40)
        self.assertEqual(st, 200, archive)
        members, raw = save_members(archive)
        self.assertNotIn(OUTSIDE_SECRET, raw)
        rel_state = os.path.relpath(state, home)
        for m in members:
            name = m.name.rstrip("/")
            self.assertFalse(name == rel_state or name.startswith(rel_state + "/"), name)
            path = os.path.join(home, name)
            st_ = os.lstat(path)  # exists in Home, as what the archive says it is
            if m.issym():
                self.assertTrue(stat.S_ISLNK(st_.st_mode), name)
                self.assertEqual(m.linkname, os.readlink(path))
            elif m.isdir():
                self.assertTrue(stat.S_ISDIR(st_.st_mode), name)
            else:
                self.assertTrue(m.isfile() and stat.S_ISREG(st_.st_mode), name)
        self.assertEqual(tree(state), state_before)


class HomeUnderDevShm(unittest.TestCase):
    """The server's HOME under /dev/shm (a tmpfs some deployments and this project's
    benchmarks use; jobs may not be granted it, /dev being a system tree, but the file API
    and snapshots serve it): the helper's world mounts its own /dev, and must bind the HOME
    after it, or the file API and a save see an empty directory."""

    def test_home_operations_see_it(self):
        if not os.path.isdir("/dev/shm"):
            self.skipTest("no /dev/shm")
        home = tempfile.mkdtemp(prefix="shellctl-e2e-shm-", dir="/dev/shm")
        try:
            with open(os.path.join(home, "seed.txt"), "w") as f:
                f.write("seed\n")
            with Server(token=TOKEN, home=home) as server:
                st, _, body = server.request("GET", "/v1/files/content?path=seed.txt")
                self.assertEqual((st, body), (200, b"seed\n"))
                st, _, body = server.request("PUT", "/v1/files/content?path=put.txt", raw_body=b"put\n")
                self.assertEqual(st, 200, body)
                st, _, archive = server.request("POST", "/v1/snapshot/save")
                self.assertEqual(st, 200, archive)
                names = sorted(m.name for m in save_members(archive)[0])
                self.assertEqual(names, ["put.txt", "seed.txt"])
        finally:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
