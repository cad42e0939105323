"""Starts real shellctl servers for end-to-end tests and talks HTTP to them.

Stdlib only. Every server gets its own temporary HOME and state dir, so its tmux server
(socket under <state>/runtime) and SQLite file are private to the test. Nothing is mocked.
"""
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import unittest


def open_to_everyone(path):
    """Whether every directory from / down to path lets any user through (o+x)."""
    p = os.path.abspath(path)
    while True:
        if not os.stat(p).st_mode & stat.S_IXOTH:
            return False
        parent = os.path.dirname(p)
        if parent == p:
            return True
        p = parent


def for_everyone(path):
    """path (a file, or a directory of executables) where every user can reach it.

    The tests run servers, helpers, jobs and scripts as the unprivileged `shellctl-test`
    user too. A clone in a Home that others may not enter (root's /root, or any Home
    adduser makes on Debian 12: mode 0700) keeps that user from them: then the file, or the
    directory's executables, are hard-linked (copied across file systems) into
    /var/tmp/shellctl-bin-<digest>, named by the path and the files' sizes and times, made
    once and shared by the test processes."""
    path = os.path.abspath(path)
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    if os.geteuid() != 0 or not os.path.exists(path) or open_to_everyone(folder):
        return path  # (a build not made yet is named as it is: its user says it is missing)
    if folder == path:
        names = sorted(n for n in os.listdir(folder)
                       if os.path.isfile(os.path.join(folder, n))
                       and os.access(os.path.join(folder, n), os.X_OK))
    else:
        names = [os.path.basename(path)]
    stamp = hashlib.sha256(path.encode())
    prefix = "shellctl-bin-" + stamp.hexdigest()[:12] + "-"
    for n in names:
        st = os.stat(os.path.join(folder, n))
        stamp.update(f"{n} {st.st_size} {st.st_mtime_ns}\n".encode())
    staged = os.path.join("/var/tmp", prefix + stamp.hexdigest()[:12])
    if not os.path.lexists(staged):
        part = tempfile.mkdtemp(prefix=prefix + "part-", dir="/var/tmp")
        for n in names:
            try:
                os.link(os.path.join(folder, n), os.path.join(part, n))
            except OSError:
                shutil.copy2(os.path.join(folder, n), os.path.join(part, n))
        os.chmod(part, 0o755)
        try:
            os.rename(part, staged)
        except OSError:  # the name was taken meanwhile (another test process, or not)
            shutil.rmtree(part, ignore_errors=True)
        for old in os.listdir("/var/tmp"):  # earlier builds of this path
            if (old.startswith(prefix) and not old.startswith(prefix + "part-")
                    and os.path.join("/var/tmp", old) != staged):
                shutil.rmtree(os.path.join("/var/tmp", old), ignore_errors=True)
    # /var/tmp is everyone's and the name can be foreseen: only a directory of root's that
    # nobody else may change is taken.
    st = os.lstat(staged)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        raise RuntimeError(f"{staged} is not a directory root alone may change: remove it")
    return staged if folder == path else os.path.join(staged, names[0])


BIN_DIR = for_everyone(os.environ.get("SHELLCTL_BIN_DIR") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "bin"))
SHELLCTL = os.path.join(BIN_DIR, "shellctl")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running `shellctl serve` on a free loopback port."""

    def __init__(self, token=None, env=None, args=(), home=None, state_dir=None,
                 keep_dirs=False, start=True, user=None, bin_dir=None):
        self.tmp = tempfile.mkdtemp(prefix="shellctl-e2e-")
        os.chmod(self.tmp, 0o755)
        self.home = home or os.path.join(self.tmp, "home")
        os.makedirs(self.home, exist_ok=True)
        self.state_dir = state_dir or os.path.join(self.tmp, "state")
        self.token = token
        self.extra_env = dict(env or {})
        self.args = list(args)
        self.keep_dirs = keep_dirs
        # Another build's binaries (the job benchmark's --compare): shellctl finds its
        # helpers next to itself.
        self.bin_dir_used = bin_dir or BIN_DIR
        self.user = user  # (uid, gid): the server runs as this user (its dirs are chowned)
        if user is not None:
            for d in (self.tmp, self.home):
                os.chown(d, *user)
        self.proc = None
        self.port = None
        self.stderr_path = os.path.join(self.tmp, "server.stderr")
        if start:
            self.start()

    # -- lifecycle -----------------------------------------------------------------
    def environment(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("SHELLCTL_") and not k.startswith("TMUX")}
        env["HOME"] = self.home
        env["PATH"] = self.bin_dir_used + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        env.pop("XDG_DATA_HOME", None)
        env.update(self.extra_env)
        return {k: v for k, v in env.items() if v is not None}  # None: not set at all

    def command(self):
        cmd = [os.path.join(self.bin_dir_used, "shellctl"), "serve", "--listen", f"127.0.0.1:{self.port}",
               "--state-dir", self.state_dir]
        if self.user is not None:
            uid, gid = self.user
            cmd = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"] + cmd
        if self.token is not None:
            cmd += ["--token", self.token]
        return cmd + self.args

    def start(self, wait=True):
        self.port = free_port()
        self.stderr = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(self.command(), env=self.environment(),
                                     stdout=self.stderr, stderr=self.stderr,
                                     stdin=subprocess.DEVNULL)
        if wait:
            self.wait_healthy()
        return self

    def wait_healthy(self, timeout=20, interval=0.02):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"shellctl exited with {self.proc.returncode}: "
                                   f"{self.read_stderr()}")
            try:
                status, _, body = self.request("GET", "/healthz", auth=False, timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(interval)
        raise RuntimeError("shellctl did not become healthy: " + self.read_stderr())

    def read_stderr(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Stops the server process (jobs keep running in tmux). Returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def kill(self):
        """SIGKILL, as a crash would."""
        return self.stop(signal.SIGKILL)

    def restart(self):
        self.stop()
        return self.start()

    @property
    def runtime_dir(self):
        return os.path.join(self.state_dir, "runtime")

    @property
    def tmux_socket(self):
        return os.path.join(self.runtime_dir, "tmux.sock")

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.tmux_socket, *args],
                              capture_output=True, text=True)

    def close(self):
        try:
            self.stop(signal.SIGKILL)
        finally:
            self.tmux("kill-server")
            self.release_cgroup_root()
            if self.stderr:
                self.stderr.close()
            if not self.keep_dirs:
                shutil.rmtree(self.tmp, ignore_errors=True)

    def release_cgroup_root(self):
        """The job cgroups of a killed server outlive it (a stopped one ends only its root
        when empty; a SIGKILLed one ends nothing): each job-* of the root it announced is
        ended as the server would (cgroup.kill, populated 0, rmdir), so that no process of
        a failed test lingers; then its detected root (shellctl-<hash>) goes too. A given
        root is the test's own business."""
        import re
        m = re.search(r"\), cgroup (/[^,\s\"]+)", self.read_stderr())
        if not m:
            return
        root = m.group(1)
        name = os.path.basename(root)
        end_cgroup_tree(root, keep_root=not name.startswith("shellctl-") or
                        name.startswith("shellctl-e2e-"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- HTTP ------------------------------------------------------------------------
    def request(self, method, path, body=None, auth=True, timeout=60, headers=None,
                raw_body=None):
        """Returns (status, headers dict (lower-case names), parsed JSON or raw bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            hdrs = dict(headers or {})
            if auth and self.token:
                hdrs["Authorization"] = "Bearer " + self.token
            data = raw_body
            if body is not None:
                data = json.dumps(body).encode()
                hdrs["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            payload = resp.read()
            rh = {k.lower(): v for k, v in resp.getheaders()}
            try:
                parsed = json.loads(payload)
            except ValueError:
                parsed = payload
            return resp.status, rh, parsed
        finally:
            conn.close()

    def ok(self, method, path, body=None, **kw):
        status, _, data = self.request(method, path, body, **kw)
        if status != 200:
            # A 500 is the server's own fault: its log says why (CI keeps only this text).
            why = ""
            if status == 500:
                why = "\nserver log (tail):\n" + self.read_stderr()[-4000:]
            raise AssertionError(f"{method} {path} -> {status} {data!r}{why}")
        return data

    # -- job helpers -----------------------------------------------------------------
    def run(self, script, **fields):
        fields.setdefault("timeout", 30)
        return self.ok("POST", "/v1/jobs/run", dict(script=script, **fields))

    def wait(self, job_id, offset=0, timeout=30, **fields):
        return self.ok("POST", f"/v1/jobs/{job_id}/wait",
                       dict(offset=offset, timeout=timeout, **fields))

    def run_to_completion(self, script, deadline=120, **fields):
        """Run, then page with wait until done and not truncated. Returns (last, output)."""
        end = time.monotonic() + deadline
        res = self.run(script, **fields)
        out = [res["output"]]
        limit = fields.get("output_limit")
        while not res["done"] or res["truncated"]:
            if time.monotonic() > end:
                raise AssertionError(f"job {res['job_id']} did not complete: {res}")
            extra = {"output_limit": limit} if limit else {}
            res = self.wait(res["job_id"], res["offset"], timeout=30, **extra)
            out.append(res["output"])
        return res, "".join(out)


def end_cgroup_tree(path, keep_root=False, bound=5.0):
    """cgroup.kill, then populated 0 (looked at every 10 ms, at most `bound` s), then rmdir,
    deepest first, for `path` and every cgroup below it (only the ones below when
    `keep_root`). Best effort: for tests' clean-up only."""
    if not os.path.isdir(path):
        return
    for entry in sorted(os.listdir(path)):
        child = os.path.join(path, entry)
        if os.path.isdir(child):
            end_cgroup_tree(child, bound=bound)
    if keep_root:
        return
    try:
        with open(os.path.join(path, "cgroup.kill"), "w") as f:
            f.write("1")
    except OSError:
        pass
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(path, "cgroup.events")) as f:
                if "populated 0" in f.read():
                    break
        except OSError:
            break
        time.sleep(0.01)
    try:
        os.rmdir(path)
    except OSError:
        pass


class ServerTestCase(unittest.TestCase):
    """A test case with one server for the whole class (cls.server)."""
    server_kwargs = {}

    @classmethod
    def setUpClass(cls):
        cls.server = Server(**cls.server_kwargs)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()


# -- additions for the recovery / fault / load suites (tests/e2e/recovery) -----------------
# Helpers only: nothing above changes behaviour.

def wait_until(predicate, timeout=30.0, interval=0.02, what="condition"):
    """Polls predicate() until it returns a truthy value, which is returned."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def exited_stat(stat):
    """Whether a /proc/<pid>/stat line (bytes) is of a process that has exited or is exiting:
    state Z (a zombie, not yet reaped) or X (dead, being released), or PF_EXITING (0x4) in
    its flags (field 9: it is in the kernel's exit path and never runs its own code again).
    The kernel counts a process out of its cgroup early in that path and wakes a pidfd's
    pollers before an auto-reaped child leaves /proc, so a process the server rightly
    waited out may still show for a moment in one of these forms (seen under CPU hogs: an
    exiting shellctl-runner in state R with PF_EXITING, and children in state X)."""
    fields = stat[stat.rfind(b")") + 2:].split()
    if not fields:
        return True
    return fields[0] in (b"Z", b"X") or (len(fields) > 6 and int(fields[6]) & 0x4 != 0)


def process_alive(pid):
    """Whether pid names a process that has not exited (see exited_stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return not exited_stat(f.read())
    except OSError:
        return False


def processes_mentioning(text):
    """[(pid, argv list)] of live processes whose argv contains text (exited ones skipped)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                raw = f.read()
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        if not raw or exited_stat(stat):
            continue
        argv = [a.decode(errors="replace") for a in raw.rstrip(b"\0").split(b"\0")]
        if any(text in a for a in argv):
            found.append((int(entry), argv))
    return found


def _server_pid(self):
    return self.proc.pid if self.proc is not None else None


def _job_dir(self, job_id):
    return os.path.join(self.state_dir, "jobs", job_id)


def _helper_processes(self):
    """shellctl-runner / shellctl-sanitize-pty / shellctl-runner-exit processes of this
    server's state dir (their argv names it, or a job dir below it)."""
    names = ("shellctl-runner", "shellctl-sanitize-pty", "shellctl-runner-exit")
    out = []
    for pid, argv in processes_mentioning(self.state_dir):
        if argv and any(os.path.basename(argv[0]).startswith(n) or
                        (len(argv) > 1 and os.path.basename(argv[1]).startswith(n))
                        for n in names):
            out.append((pid, argv))
        elif argv and "shellctl-sanitize-pty" in " ".join(argv):
            out.append((pid, argv))
    return out


def _status(self, job_id):
    """(http status, body) of GET /v1/jobs/{id}."""
    status, _, body = self.request("GET", f"/v1/jobs/{job_id}")
    return status, body


def _wait_done(self, job_id, deadline=60):
    """Pages with wait until done and not truncated; returns (last result, full output)."""
    end = time.monotonic() + deadline
    offset, out = 0, []
    while True:
        res = self.wait(job_id, offset, timeout=min(30, max(1, end - time.monotonic())))
        out.append(res["output"])
        offset = res["offset"]
        if res["done"] and not res["truncated"]:
            return res, "".join(out)
        if time.monotonic() > end:
            raise AssertionError(f"job {job_id} not done after {deadline}s: {res}")


def _tmux_sessions(self):
    r = self.tmux("list-sessions", "-F", "#{session_name}")
    return set(r.stdout.split()) if r.returncode == 0 else set()


Server.pid = property(_server_pid)
Server.job_dir = _job_dir
Server.helper_processes = _helper_processes
Server.status = _status
Server.wait_done = _wait_done
Server.tmux_sessions = _tmux_sessions


def process_at_gate_latch(runner_pid):
    """The runner's descendant blocked reading its end of the start gate's latch (a
    socket): the job's process, built with its sandbox and waiting for the gate, or its
    PID 1 when a setup step of PID 1 failed first. None while there is none."""
    for pid in descendants(runner_pid):
        try:
            with open(f"/proc/{pid}/syscall") as f:
                fields = f.read().split()
            if fields[0] != "0":  # read(2) on x86_64
                continue
            if os.readlink(f"/proc/{pid}/fd/{int(fields[1], 16)}").startswith("socket:"):
                return pid
        except (OSError, IndexError, ValueError):
            continue
    return None


def descendants(pid):
    """pids of every live descendant of pid (from /proc/*/stat)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _reap(self):
    """SIGKILLs every process that still names this server's temp dir (its tmux server and
    control clients, runners, sanitizers): only this Server's own processes. For after
    close(), when a crash left a tmux client that keeps kill-server from finishing."""
    me = os.getpid()
    for pid, _ in processes_mentioning(self.tmp):
        if pid == me:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


Server.reap = _reap


def in_thread(fn):
    """Runs fn() in a thread; returns (thread, box): box["value"] or box["error"]."""
    import threading
    box = {}

    def target():
        try:
            box["value"] = fn()
        except Exception as e:  # noqa: BLE001
            box["error"] = e
    t = threading.Thread(target=target)
    t.start()
    return t, box


class WrappedSanitizerServer(Server):
    """A server whose shellctl-sanitize-pty is a shell wrapper: `before` runs before the
    real sanitizer (a slow ready handshake), `after` once it exited (a late pipe
    finalizer). Its own copy of shellctl in a temp bin dir, since the helpers are found
    next to the executable."""

    def __init__(self, before="", after="", **kw):
        self.bin_dir = tempfile.mkdtemp(prefix="shellctl-wrapbin-")
        real = os.path.abspath(BIN_DIR)
        shutil.copy2(SHELLCTL, os.path.join(self.bin_dir, "shellctl"))
        for name in ("shellctl-runner", "shellctl-runner-exit"):
            os.symlink(os.path.join(real, name), os.path.join(self.bin_dir, name))
        wrapper = os.path.join(self.bin_dir, "shellctl-sanitize-pty")
        with open(wrapper, "w") as f:
            f.write(f"#!/bin/sh\n{before}\n'{real}/shellctl-sanitize-pty' \"$@\"\ns=$?\n"
                    f"{after}\nexit $s\n")
        os.chmod(wrapper, 0o755)
        super().__init__(**kw)

    def command(self):
        cmd = super().command()
        cmd[0] = os.path.join(self.bin_dir, "shellctl")
        return cmd

    def close(self):
        try:
            super().close()
            self.reap()
        finally:
            shutil.rmtree(self.bin_dir, ignore_errors=True)


class TmpfsCase(unittest.TestCase):
    """A test with a small tmpfs of its own at self.mnt (mounted per test)."""
    tmpfs_size = "16m"

    def setUp(self):
        self.mnt = tempfile.mkdtemp(prefix="shellctl-tmpfs-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.tmpfs_size},mode=0755",
                        "tmpfs", self.mnt], check=True)
        self.server = None

    def tearDown(self):
        try:
            if self.server:
                self.server.close()
                self.server.reap()
        finally:
            subprocess.run(["umount", "-l", self.mnt])
            os.rmdir(self.mnt)
