"""Home operations under attack (docs/security.md "Home operations"): the six attacks
that worked against the server when it saved, restored and served files itself, each tried
again end to end with the real kernel, tmux, SQLite, archives and HTTP, in three layouts
(the state dir in its default place inside Home, under another name inside Home, outside
Home) and with the server as root and as an unprivileged user.

An attack works when something outside Home changes: the state dir's tree (every name,
type, link target and content hash of every file but the database), a marker appears in a
directory only the test can see, or the next job runs outside its sandbox. After every
attack all three are checked, and the server must still answer at once (its snapshot gate
free) and stop on SIGTERM.
"""
import io
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
import uuid

from harness import Server, wait_until

sys.path.insert(0, os.path.dirname(__file__))
from home_trees import tree_of  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
from helper_support import ensure_test_user  # noqa: E402

TOKEN = "home-attack-" + uuid.uuid4().hex


def q(s):
    return "'" + s.replace("'", "'\\''") + "'"


def tar_zst(build):
    """An archive as the restore takes it: `build(tar)` adds members, then zstd."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        build(t)
    return subprocess.run(["zstd", "-q", "-c"], input=buf.getvalue(), capture_output=True,
                          check=True).stdout


def add_file(t, name, data=b"x", mode=0o644):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    t.addfile(info, io.BytesIO(data))


def add_link(t, name, target, hard=False):
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    info.linkname = target
    t.addfile(info)


def untar_names(archive):
    raw = subprocess.run(["zstd", "-q", "-d", "-c"], input=archive, capture_output=True,
                         check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as t:
        return [m.name for m in t.getmembers()], raw


state_tree = tree_of


def settled_state_tree(state_dir, bound=10.0):
    """The state dir's tree once it stops changing (a finished job's last markers land
    just after its answer)."""
    end = time.monotonic() + bound
    tree = state_tree(state_dir)
    while time.monotonic() < end:
        time.sleep(0.3)
        again = state_tree(state_dir)
        if again == tree:
            return tree
        tree = again
    return tree


class HomeAttackBase:
    """One layout and one user; a fresh server per attack."""

    layout = "default"  # default: <home>/.local/share/shellctl; renamed: <home>/st; outside
    unprivileged = False
    snapshot_timeout = "20s"

    def setUp(self):
        owner = None
        if self.unprivileged:
            owner = ensure_test_user()
            if owner is None:
                self.skipTest("needs root to create and switch to an unprivileged user")
        self.tmp = tempfile.mkdtemp(prefix="shellctl-e2e-home-")
        os.chmod(self.tmp, 0o755)
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home)
        if self.layout == "default":
            self.state = os.path.join(self.home, ".local", "share", "shellctl")
        elif self.layout == "renamed":
            self.state = os.path.join(self.home, "st")
        else:
            self.state = os.path.join(self.tmp, "state")
        if owner is not None:
            for d in (self.tmp, self.home):
                os.chown(d, *owner)
            if self.layout == "outside":
                os.makedirs(self.state)
                os.chown(self.state, *owner)
            else:
                d = self.home
                for part in os.path.relpath(self.state, self.home).split("/"):
                    d = os.path.join(d, part)
                    os.makedirs(d, exist_ok=True)
                    os.chown(d, *owner)
        # Markers land here only if something runs outside every sandbox.
        self.markers = os.path.join(self.tmp, "markers")
        os.makedirs(self.markers)
        os.chmod(self.markers, 0o777)
        self.server = Server(token=TOKEN, home=self.home, state_dir=self.state, user=owner,
                             env={"SHELLCTL_SNAPSHOT_TIMEOUT": self.snapshot_timeout})
        self.addCleanup(self.cleanup)
        # The server's files as they are before any attack: its first job has run.
        self.job("echo ready")

    def cleanup(self):
        self.server.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------
    def rel_state(self, *parts):
        """A path of the state dir as an archive entry names it (relative to Home; with
        `..` when the state dir is outside it)."""
        return os.path.relpath(os.path.join(self.state, *parts), self.home)

    def job(self, script, **kw):
        res, out = self.server.run_to_completion(script, **kw)
        self.assertTrue(res["done"], res)
        return res, out

    def marker(self):
        return os.path.join(self.markers, "m-" + uuid.uuid4().hex)

    def evil_script(self):
        """A script in Home that leaves a marker when it runs (outside the sandbox only:
        inside, the markers directory does not exist)."""
        mk = self.marker()
        path = os.path.join(self.home, "evil.sh")
        self.job(f"printf '#!/bin/sh\\ntouch {mk}\\n' > {q(path)} && chmod 755 {q(path)}")
        return path, mk

    def save(self, excludes=None):
        body = None if excludes is None else {"excludes": excludes}
        st, _, data = self.server.request("POST", "/v1/snapshot/save", body, timeout=60)
        self.assertEqual(st, 200, data)
        return data

    def restore(self, archive):
        st, _, body = self.server.request("POST", "/v1/snapshot/restore", raw_body=archive, timeout=60)
        return st, body

    def assert_refused(self, answer, codes=(400,)):
        st, body = answer
        self.assertIn(st, codes, body)
        if st >= 400:
            self.assertEqual(body["error"]["code"], "archive_malformed" if st == 400 else "restore_failed", body)

    def assert_state_unchanged(self, tree_before):
        self.assertEqual(state_tree(self.state), tree_before)
        self.assertEqual(os.listdir(self.markers), [])

    def assert_held(self, tree_before):
        """Nothing outside Home changed, the next job runs sandboxed, the server answers."""
        if tree_before is not None:
            self.assert_state_unchanged(tree_before)
        db = os.path.join(self.state, "shellctl.db")
        res, out = self.job(f"test -e {q(db)} && echo STATE-VISIBLE; "
                            f"touch {q(os.path.join(self.markers, 'from-job'))} 2>/dev/null && echo OUTSIDE; "
                            "echo sandboxed")
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0), out)
        self.assertEqual(out, "sandboxed\n")
        self.assertEqual(os.listdir(self.markers), [])
        # The snapshot gate is free (nothing is stuck in a restore), and the database whole.
        self.save()
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
            self.assertEqual(c.execute("PRAGMA integrity_check").fetchone()[0], "ok")

    # -- the six attacks ---------------------------------------------------------------
    def test_a_restore_cannot_replace_the_runner_link(self):
        evil, mk = self.evil_script()
        before = settled_state_tree(self.state)
        archive = tar_zst(lambda t: add_link(t, self.rel_state("runtime", "bin", "shellctl-runner"), evil))
        self.assert_refused(self.restore(archive))
        self.assert_held(before)
        self.assertFalse(os.path.exists(mk))

    def test_a_restore_cannot_link_the_database_or_the_tmux_socket_into_home(self):
        before = settled_state_tree(self.state)

        def build(t):
            add_link(t, "sock", self.rel_state("runtime", "tmux.sock"), hard=True)
            add_link(t, "state.db", self.rel_state("shellctl.db"), hard=True)

        self.assert_refused(self.restore(tar_zst(build)))
        self.assertFalse(os.path.lexists(os.path.join(self.home, "sock")))
        self.assertFalse(os.path.lexists(os.path.join(self.home, "state.db")))
        st, _, body = self.server.request("GET", "/v1/files/content?path=state.db")
        self.assertIn(st, (403, 404), body)
        self.assert_state_unchanged(before)
        mk = self.marker()
        res, out = self.job(f"tmux -S ~/sock run-shell {q('id > ' + mk)}; echo rc=$?")
        self.assertNotIn("rc=0", out)
        self.assert_held(None)

    def test_a_job_and_a_rollback_cannot_steer_a_restore_into_the_state_dir(self):
        # No crafted archive: a hostile job plants a link, the backend saves Home as usual,
        # the job swaps a directory for a link to the runner's directory, the backend rolls
        # Home back to the saved archive.
        evil, mk = self.evil_script()
        self.job(f"mkdir -p ~/c && ln -s {q(evil)} ~/c/shellctl-runner")
        archive = self.save()
        names, _ = untar_names(archive)
        self.assertIn("c/shellctl-runner", names)
        bin_dir = os.path.join(self.state, "runtime", "bin")
        into = os.path.relpath(bin_dir, self.home) if self.layout != "outside" else bin_dir
        self.job(f"rm -rf ~/c && ln -s {q(into)} ~/c && ls -ld ~/c")
        before = settled_state_tree(self.state)
        self.assert_refused(self.restore(archive))
        self.assert_held(before)
        self.assertFalse(os.path.exists(mk))

    def test_a_save_never_ships_the_state_dir_and_a_restore_never_rewrites_it(self):
        secret = "secret-" + uuid.uuid4().hex
        res, _ = self.job("echo has-a-secret", env={"HOME": self.home, "API_KEY": secret})
        archive = self.save()
        names, raw = untar_names(archive)
        if self.layout != "outside":
            rel = self.rel_state()
            self.assertEqual([n for n in names if n == rel or n.startswith(rel + "/")], [])
        self.assertEqual([n for n in names if n.endswith(".job-env.json") or "shellctl.db" in n], [])
        self.assertNotIn(secret.encode(), raw)
        # Even asked for by name (the excludes cannot bring the state dir back).
        self.assertNotIn(secret.encode(), untar_names(self.save(excludes=["!*"]))[1])
        before = settled_state_tree(self.state)
        job_dir = os.path.join(self.state, "jobs", res["job_id"])

        def build(t):
            add_file(t, self.rel_state("shellctl.db"), b"not a database")
            add_file(t, os.path.relpath(os.path.join(job_dir, ".job-env.json"), self.home), b"{}")

        self.assert_refused(self.restore(tar_zst(build)))
        self.assert_held(before)

    def test_a_planted_fifo_never_blocks_a_restore_the_gate_or_shutdown(self):
        # A FIFO nobody reads (open for writing would block for ever), and one a job holds
        # open for reading (the bytes would go to the job).
        self.job("mkfifo ~/lonely")
        st, _, res = self.server.request(
            "POST", "/v1/jobs/run", {"script": "mkfifo ~/read && exec cat ~/read > ~/got", "timeout": 0.2})
        self.assertEqual(st, 200, res)
        wait_until(lambda: os.path.exists(os.path.join(self.home, "read")), what="the job's FIFO")
        time.sleep(0.3)  # cat is in open(), waiting for a writer
        before = settled_state_tree(self.state)
        for name in ("lonely", "read"):
            t0 = time.monotonic()
            answer = self.restore(tar_zst(lambda t: add_file(t, name, b"bytes for nobody")))
            self.assertEqual(answer[0], 400, answer)
            self.assertEqual(answer[1]["error"]["code"], "archive_malformed")
            self.assertLess(time.monotonic() - t0, 15, "the restore waited on the FIFO")
            self.assertTrue(stat.S_ISFIFO(os.lstat(os.path.join(self.home, name)).st_mode))
        # The reader was never even woken: it still waits for a writer, and got nothing.
        self.assertEqual(self.server.status(res["job_id"])[1]["status"], "running")
        self.assertEqual(os.path.getsize(os.path.join(self.home, "got")), 0)
        self.assert_state_unchanged(before)
        self.server.request("DELETE", f"/v1/jobs/{res['job_id']}?force=true&grace_seconds=0")
        self.assert_held(None)
        self.assertEqual(self.server.stop(timeout=15), 0)

    def test_an_upload_over_a_set_uid_file_is_never_set_uid(self):
        self.job("printf x > ~/suid && chmod 4755 ~/suid && printf y > ~/sgid && chmod 2755 ~/sgid")
        path = os.path.join(self.home, "suid")
        self.assertTrue(os.lstat(path).st_mode & stat.S_ISUID)
        before = settled_state_tree(self.state)
        for name in ("suid", "sgid"):
            st, _, body = self.server.request("PUT", f"/v1/files/content?path={name}", raw_body=b"#!/bin/sh\nid\n")
            self.assertEqual(st, 200, body)
            mode = stat.S_IMODE(os.lstat(os.path.join(self.home, name)).st_mode)
            self.assertEqual(mode, 0o755, oct(mode))
            st, _, body = self.server.request("GET", f"/v1/files/stat?path={name}")
            self.assertEqual(body["mode"], "0755")
        self.assert_held(before)


class DefaultLayoutAsRoot(HomeAttackBase, unittest.TestCase):
    layout = "default"


class RenamedStateDirAsRoot(HomeAttackBase, unittest.TestCase):
    layout = "renamed"


class StateDirOutsideHomeAsRoot(HomeAttackBase, unittest.TestCase):
    layout = "outside"


class DefaultLayoutUnprivileged(HomeAttackBase, unittest.TestCase):
    layout = "default"
    unprivileged = True


class RenamedStateDirUnprivileged(HomeAttackBase, unittest.TestCase):
    layout = "renamed"
    unprivileged = True


class StateDirOutsideHomeUnprivileged(HomeAttackBase, unittest.TestCase):
    layout = "outside"
    unprivileged = True


if __name__ == "__main__":
    unittest.main(verbosity=2)
