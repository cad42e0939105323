"""A native scope's worker (docs/native-scopes.md "The scope worker"; S8, S10, S13, S19, S20),
component tier: the real `shellctl native-worker`, in new user, mount, PID, network, IPC and UTS
namespaces, set up over its setup socket (JSON and descriptors, as the supervisor sends them),
serving its control socket to real HTTP clients, running real jobs through tmux and the runner
in the scoped sandbox.

Until the supervisor spawns workers itself (clone3 into the scope's cgroup), `unshare` makes the
namespaces here, mapping the worker's root to this test's uid as the supervisor's map would.
Checked: the setup answer; the control socket's auth (token, then the peer's uid by the kernel's
word) and its routes (the eight job routes and the identity; /v1/info, snapshots and files are
404); a job's world (Home copied from the base, the inputs read-only, only its own PIDs, the
worker-side output_path); admission (max_jobs, then 409 job_capacity_exhausted with no row; an
over-budget script 409 input_budget_exhausted); a setup whose input changed after it was resolved
refused; the worker's death ends its jobs (it is PID 1 of their namespace)."""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from harness import BIN_DIR, processes_mentioning, wait_until

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
from helper_support import ensure_test_user  # noqa: E402

SHELLCTL = os.path.join(BIN_DIR, "shellctl")
TOKEN = "worker-control-token"


def read(path):
    with open(path) as f:
        return f.read()


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=60):
        super().__init__("worker", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


class Worker:
    """One worker with its base, inputs and host directory in a temp tree."""

    def __init__(self, limits=None, inputs=None, swap_input_after_open=False):
        self.tmp = tempfile.mkdtemp(prefix="shellctl-worker-")
        os.chmod(self.tmp, 0o755)
        self.base = os.path.join(self.tmp, "base")
        os.makedirs(self.base + "/proj")
        with open(self.base + "/proj/readme", "w") as f:
            f.write("from the base\n")
        self.inputs_dir = os.path.join(self.tmp, "inputs")
        os.makedirs(self.inputs_dir)
        inputs = inputs if inputs is not None else {"data.txt": "input bytes\n"}
        for name, text in inputs.items():
            with open(os.path.join(self.inputs_dir, name), "w") as f:
                f.write(text)
        self.host = os.path.join(self.tmp, "host")
        os.makedirs(self.host, mode=0o700)
        self.limits = {"input_bytes": 8192, "output_bytes": 1 << 20, "max_jobs": 64,
                       "disk_bytes": 16 << 20, "open_files": 256, "file_bytes": 4 << 20,
                       "job_wall_seconds": 0, "deadline_epoch": 0}
        self.limits.update(limits or {})
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = open(os.path.join(self.tmp, "worker.log"), "w")
        self.proc = subprocess.Popen(
            ["unshare", "--user", "--map-root-user", "--mount", "--pid", "--net", "--ipc",
             "--uts", "--fork", "--kill-child", "--",
             SHELLCTL, "native-worker", "--setup-fd", str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdout=subprocess.DEVNULL, stderr=self.log)
        theirs.close()
        refs = sorted(inputs)
        setup = {"scope_id": "scope-a", "generation": 7, "created_at": "2026-12-05T00:00:00Z",
                 "control_token": TOKEN, "cgroup": "", "image_root": "/", "limits": self.limits,
                 "input_refs": refs, "host_dir": self.host,
                 "input_paths": [os.path.join(self.inputs_dir, r) for r in refs]}
        fds = [os.open(self.base, os.O_PATH | os.O_DIRECTORY),
               os.open(self.host, os.O_PATH | os.O_DIRECTORY)]
        fds += [os.open(os.path.join(self.inputs_dir, r), os.O_PATH) for r in refs]
        if swap_input_after_open:
            # Another file now at the path the supervisor resolved.
            p = os.path.join(self.inputs_dir, refs[0])
            os.rename(p, p + ".old")
            with open(p, "w") as f:
                f.write("swapped\n")
        socket.send_fds(ours, [json.dumps(setup).encode()], fds)
        for fd in fds:
            os.close(fd)
        ours.settimeout(60)
        self.answer = json.loads(ours.recv(4096))
        ours.close()
        self.socket_path = os.path.join(self.host, "control.sock")

    def worker_pid(self):
        """The worker's pid on the host (unshare's only child)."""
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            return int(f.read().split()[0])

    def request(self, method, path, body=None, token=TOKEN):
        c = UnixHTTP(self.socket_path)
        headers = {"Authorization": "Bearer " + token} if token is not None else {}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        raw = r.read()
        c.close()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw

    def run(self, script, **fields):
        fields.setdefault("timeout_seconds", 30)
        return self.request("POST", "/v1/jobs/run", dict(script=script, **fields))

    def close(self):
        if self.proc.poll() is None:
            try:
                os.kill(self.worker_pid(), signal.SIGKILL)
            except (OSError, IndexError, ValueError):
                pass
            self.proc.kill()
        self.proc.wait(30)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class WorkerServes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.w = Worker(limits={"max_jobs": 6})

    @classmethod
    def tearDownClass(cls):
        cls.w.close()

    def test_ready_and_identity(self):
        self.assertEqual(self.w.answer, {"ok": True}, read(self.w.log.name))
        st = os.stat(self.w.socket_path)
        self.assertEqual(st.st_mode & 0o777, 0o600)
        self.assertEqual(self.w.request("GET", "/v1/worker/identity"),
                         (200, {"scope_id": "scope-a", "generation": 7}))

    def test_the_control_token_is_required(self):
        for token in (None, "wrong", TOKEN + "x"):
            status, body = self.w.request("GET", "/v1/worker/identity", token=token)
            self.assertEqual((status, body["error"]["code"]), (401, "unauthorized"))

    def test_only_the_job_routes_and_the_identity(self):
        for method, path in (("GET", "/v1/info"), ("POST", "/v1/snapshot/save"),
                             ("GET", "/v1/files/stat?path=/"), ("GET", "/healthz"),
                             ("GET", "/metrics"), ("GET", "/openapi.json"),
                             ("GET", "/v1/test-scopes"), ("GET", "/nothing")):
            status, body = self.w.request(method, path)
            self.assertEqual((status, body["error"]["code"]), (404, "not_found"), path)
        status, body = self.w.request("GET", "/v1/jobs")
        self.assertEqual(status, 200)

    def test_a_foreign_uid_is_refused_before_a_byte(self):
        ids = ensure_test_user()
        self.assertIsNotNone(ids, "needs root to create the unprivileged test user")
        # Cut off before a byte: the close may come before, during or after our send (EPIPE,
        # ECONNRESET or EOF), never an answer.
        probe = ("import errno,socket,sys\n"
                 "s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
                 "s.settimeout(10)\n"
                 "try:\n"
                 "  s.sendall(b'GET /v1/worker/identity HTTP/1.1\\r\\nHost: w\\r\\n"
                 f"Authorization: Bearer {TOKEN}\\r\\n\\r\\n')\n"
                 "  got=s.recv(4096)\n"
                 "  print('refused' if got == b'' else repr(got))\n"
                 "except OSError as e:\n"
                 "  print('refused' if e.errno in (errno.EPIPE, errno.ECONNRESET) else repr(e))\n")
        # The socket is 0600: even reaching it needs the owner's permission; grant the
        # directory and socket for this check, then see the kernel's uid refused anyway.
        os.chmod(self.w.host, 0o755)
        os.chmod(self.w.socket_path, 0o666)
        try:
            r = subprocess.run(["setpriv", f"--reuid={ids[0]}", f"--regid={ids[1]}",
                                "--clear-groups", sys.executable, "-c", probe,
                                self.w.socket_path], capture_output=True, text=True, timeout=60)
        finally:
            os.chmod(self.w.socket_path, 0o600)
            os.chmod(self.w.host, 0o700)
        self.assertEqual(r.stdout.strip(), "refused", r.stdout + r.stderr)

    def test_a_job_runs_in_the_scoped_world(self):
        status, body = self.w.run(
            "echo uid=$(id -u) home=$HOME pwd=$(pwd); cat /home/dify/proj/readme; "
            "cat /inputs/data.txt; (echo x > /inputs/data.txt) 2>/dev/null || echo inputs-ro; "
            "ls /proc | grep -E '^[0-9]+$' | wc -l; "
            "test -e /run/dify-native && echo SPOOL-VISIBLE; test -S /run/dify-native/host/control.sock && echo SOCKET; "
            "echo home > /home/dify/new && echo home-rw")
        self.assertEqual(status, 200, body)
        self.assertEqual((body["status"], body["exit_code"]), ("exited", 0), body)
        lines = body["output"].splitlines()
        self.assertEqual(lines[0], "uid=0 home=/home/dify pwd=/home/dify")
        self.assertEqual(lines[1:4], ["from the base", "input bytes", "inputs-ro"])
        self.assertLess(int(lines[4]), 8)  # its own PID namespace
        self.assertNotIn("SPOOL-VISIBLE", lines)
        self.assertNotIn("SOCKET", lines)
        self.assertEqual(lines[-1], "home-rw")
        self.assertTrue(body["output_path"].startswith("/run/dify-native/spool/jobs/"), body)
        # The base is as it was; Home was a copy.
        self.assertEqual(read(os.path.join(self.w.base, "proj", "readme")), "from the base\n")
        self.assertFalse(os.path.exists(os.path.join(self.w.base, "new")))

    def test_a_cwd_outside_the_world_is_refused(self):
        for cwd in ("/root", "/work", "/run/dify-native/spool", "/home/dify/../../run/dify-native",
                    "/workspace/../proc"):
            status, body = self.w.run("pwd", cwd=cwd)
            self.assertEqual((status, body["error"]["code"]), (400, "invalid_cwd"), cwd)
        status, body = self.w.run("pwd", cwd="/workspace")
        self.assertEqual((status, body.get("output")), (200, "/workspace\n"), body)

    def test_an_over_budget_script_is_refused_and_leaves_no_row(self):
        before = len(self.w.request("GET", "/v1/jobs")[1]["jobs"])
        status, body = self.w.run("echo " + "y" * 9000)
        self.assertEqual((status, body["error"]["code"]), (409, "input_budget_exhausted"), body)
        self.assertEqual(len(self.w.request("GET", "/v1/jobs")[1]["jobs"]), before)


class WorkerAdmission(unittest.TestCase):
    def test_max_jobs_in_a_lifetime_and_no_refund(self):
        w = Worker(limits={"max_jobs": 3})
        try:
            self.assertEqual(w.answer, {"ok": True})
            ids = []
            for i in range(3):
                status, body = w.run(f"echo {i}")
                self.assertEqual(status, 200, body)
                ids.append(body["job_id"])
            status, body = w.run("echo 3")
            self.assertEqual((status, body["error"]["code"]), (409, "job_capacity_exhausted"))
            self.assertEqual(len(w.request("GET", "/v1/jobs")[1]["jobs"]), 3)
            # Deleting refunds nothing.
            for job in ids:
                self.assertEqual(w.request("DELETE", f"/v1/jobs/{job}")[0], 200)
            status, body = w.run("echo again")
            self.assertEqual((status, body["error"]["code"]), (409, "job_capacity_exhausted"))
        finally:
            w.close()

    def test_usage_counts_what_was_admitted_and_charged(self):
        w = Worker(limits={"max_jobs": 5})
        try:
            self.assertEqual(w.request("GET", "/v1/worker/usage"),
                             (200, {"input_bytes": 0, "output_bytes": 0, "jobs_admitted": 0}))
            status, body = w.run("echo twelve-bytes", timeout_seconds=5)
            self.assertEqual(status, 200, body)
            status, usage = w.request("GET", "/v1/worker/usage")
            self.assertEqual(status, 200)
            self.assertEqual(usage["jobs_admitted"], 1)
            self.assertGreaterEqual(usage["input_bytes"], len("echo twelve-bytes"))
            self.assertGreaterEqual(usage["output_bytes"], len("twelve-bytes\n"))
            self.assertEqual(w.request("POST", "/v1/worker/usage")[0], 405)
            self.assertEqual(w.request("GET", "/v1/worker/usage", token="wrong")[0], 401)
        finally:
            w.close()

    def test_a_job_past_its_wall_deadline_is_terminated(self):
        """Wall deadline min(job_wall_seconds, the scope's deadline); its processes end with it."""
        for limits in ({"job_wall_seconds": 2}, {"deadline_epoch": None}):
            if "deadline_epoch" in limits:
                # Far enough ahead that the worker's setup and the job's start (a second or
                # two on a busy machine) come well before it: the job must have run first.
                limits["deadline_epoch"] = int(time.time()) + 10
            w = Worker(limits=limits)
            try:
                marker = "wall" + str(os.getpid())
                status, body = w.run(f"echo started; sh -c 'sleep 1000; :' {marker} & sleep 1000",
                                     timeout_seconds=0.5)
                self.assertEqual(status, 200, body)
                self.assertFalse(body["done"], body)
                job = body["job_id"]
                out = body["output"]
                done = body["done"]
                deadline = time.monotonic() + 30
                while not done and time.monotonic() < deadline:
                    status, res = w.request("POST", f"/v1/jobs/{job}/wait", {"offset": 0, "timeout": 5})
                    out, done = res["output"], res["done"]
                self.assertTrue(done, limits)
                status, view = w.request("GET", f"/v1/jobs/{job}")
                self.assertEqual(view["status"], "terminated", view)
                self.assertIn("started", out)
                wait_until(lambda: not processes_with(marker), timeout=10, what="its processes gone")
            finally:
                w.close()

    def test_input_is_charged_before_it_is_typed(self):
        w = Worker(limits={"input_bytes": 400})
        try:
            script = "read line; echo got:$line; read again; echo again:$again"
            status, body = w.run(script, timeout_seconds=0.5)
            self.assertEqual(status, 200, body)
            job = body["job_id"]
            used = len(script) + len("{}")  # the script and the env JSON
            status, body = w.request("POST", f"/v1/jobs/{job}/input",
                                     {"text": "x" * 50 + "\n", "timeout_seconds": 5})
            self.assertEqual(status, 200, body)
            self.assertIn("got:" + "x" * 50, body["output"])
            used += 51
            # More than what is left: refused, nothing typed.
            status, body = w.request("POST", f"/v1/jobs/{job}/input",
                                     {"text": "y" * (400 - used + 1), "timeout_seconds": 1})
            self.assertEqual((status, body["error"]["code"]), (409, "input_budget_exhausted"))
            # Exactly what is left: accepted.
            status, body = w.request("POST", f"/v1/jobs/{job}/input",
                                     {"text": "z" * (400 - used - 1) + "\n", "timeout_seconds": 5})
            self.assertEqual(status, 200, body)
            self.assertIn("again:z", body["output"])
        finally:
            w.close()

    def test_a_swapped_input_is_refused_at_setup(self):
        w = Worker(swap_input_after_open=True)
        try:
            self.assertFalse(w.answer["ok"])
            self.assertIn("no longer the file the supervisor resolved", w.answer["error"])
        finally:
            w.close()

    def test_the_workers_death_ends_its_jobs(self):
        w = Worker()
        try:
            marker = "wd" + str(os.getpid()) + str(int(time.time()))
            status, body = w.run(f"setsid sh -c 'sleep 1000; :' {marker} & echo started; sleep 1000",
                                 timeout_seconds=0.5)
            self.assertEqual(status, 200, body)

            wait_until(lambda: processes_with(marker), timeout=30, what="the job's daemon running")
            os.kill(w.worker_pid(), signal.SIGKILL)
            wait_until(lambda: not processes_with(marker), timeout=30, what="the job's daemon gone")
        finally:
            w.close()


def processes_with(marker):
    return [pid for pid, _ in processes_mentioning(marker)]


class OutputBudget(unittest.TestCase):
    """S16, S20: output is reserved before it is written; past the budget the job is failed
    (output_budget_exhausted) and its whole tree killed, and no more output is kept."""

    def overflow(self, mode):
        budget = 3000
        w = Worker(limits={"output_bytes": budget})
        try:
            marker = "ob" + mode + str(os.getpid())
            status, body = w.run(f"sh -c 'sleep 1000; :' {marker} & "
                                 "i=0; while [ $i -lt 100000 ]; do echo line-$i; i=$((i+1)); done; "
                                 "sleep 1000", mode=mode, timeout_seconds=30)
            self.assertEqual(status, 200, body)
            job = body["job_id"]

            def ended():
                st = w.request("GET", f"/v1/jobs/{job}")[1]
                return st if st["done"] else None
            st = wait_until(ended, timeout=60, what="the job failed")
            self.assertEqual((st["status"], st["exit_code"]), ("failed", None), st)
            # What was kept is within the budget, and it is the job's first lines.
            status, tail = w.request("GET", f"/v1/jobs/{job}/log/tail?output_limit=524288")
            self.assertEqual(status, 200, tail)
            self.assertLessEqual(tail["offset"], budget)
            self.assertGreater(tail["offset"], budget // 2)
            self.assertIn("line-0", tail["output"])
            # Its background process went with it.
            wait_until(lambda: not processes_with(marker), timeout=30, what="the tree gone")
            # The budget is spent for the scope: the next job's output is refused at once.
            status, body = w.run("echo more", mode=mode)
            job2 = body["job_id"]
            st2 = wait_until(lambda: (lambda s: s if s["done"] else None)(
                w.request("GET", f"/v1/jobs/{job2}")[1]), timeout=60, what="the second job")
            self.assertEqual(st2["status"], "failed", st2)
            return st
        finally:
            w.close()

    def test_stdio_output_past_the_budget_fails_the_job(self):
        self.overflow("stdio")

    def test_pty_output_past_the_budget_fails_the_job(self):
        self.overflow("pty")


if __name__ == "__main__":
    unittest.main()
