"""What a job leaves running when its script ends, as agents use it: a dev server started with
`nohup … &` by one job is reached by the next. Over real HTTP, tmux, the kernel's cgroup v2 and
real TCP on loopback.

As in the original (a tmux pane whose shell ends): what survives the terminal's hangup
survives the job's end — a nohup'd process, one that ignores SIGHUP, one in a session of its
own (setsid) — and a plain background child does not. The job is `exited` with its script's
code and its output is final; what it left keeps running inside everything that confines the
job (namespaces, Landlock, cgroup, seccomp, capabilities), is counted by the job's activity
view, has its listening ports listed by GET /v1/ports with the job's id, and ends when the job
is terminated, deleted, collected by retention or (its server killed) deleted after a restart.

These run as root on a machine with cgroup2 (CI's), like test_job_containment.py."""
import os
import socket
import time
import unittest
import uuid

from jobs_common import cgroup_root_of
from harness import Server, free_port, process_alive, processes_mentioning, wait_until

TOKEN = "leftovers-token"
PY = "/usr/bin/python3"  # the job sees the system's trees only


def tag():
    return "lo" + uuid.uuid4().hex[:12]


def serve_script(port, address="127.0.0.1"):
    """What an agent types to start a dev server for its next tool call."""
    return f"nohup {PY} -m http.server {port} --bind {address} >/dev/null 2>&1 &"


def fetch_script(port, host="127.0.0.1"):
    """The next tool call: fetch the page (the server may still be binding its port)."""
    return (f"{PY} -c 'import sys, time, urllib.request\n"
            f"for i in range(200):\n"
            f"    try:\n"
            f"        r = urllib.request.urlopen(\"http://{host}:{port}/\", timeout=5)\n"
            f"        print(\"status\", r.status); break\n"
            f"    except OSError as e:\n"
            f"        err = e; time.sleep(0.05)\n"
            f"else:\n"
            f"    print(\"unreachable\", err)'")


def server_pids(port):
    """The dev server serve_script started on `port` (nohup execs it: python3 -m http.server)."""
    return [p for p, argv in processes_mentioning("http.server") if str(port) in argv]


def port_open(port, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


class Leftovers(unittest.TestCase):
    server_env = {}

    @classmethod
    def setUpClass(cls):
        cls.server = Server(token=TOKEN, env=cls.server_env)
        cls.root = cgroup_root_of(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def setUp(self):
        self.assertIsNotNone(self.root, "the server found no cgroup root: " + self.server.read_stderr())

    def cgroup(self, job):
        return os.path.join(self.root, "job-" + job)

    def finished(self, script, **fields):
        res, out = self.server.run_to_completion(script, **fields)
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0), (res, out))
        self.addCleanup(lambda: self.server.request("DELETE", f"/v1/jobs/{res['job_id']}?force=true&grace_seconds=0"))
        return res["job_id"], out

    def ports_of(self, job):
        return [p for p in self.server.ok("GET", "/v1/ports")["ports"] if p["job_id"] == job]

    # -- the agent's case -------------------------------------------------------------
    def test_a_nohup_dev_server_serves_the_next_job(self):
        for mode in ("pty", "stdio"):
            with self.subTest(mode=mode):
                port = free_port()
                job, _ = self.finished(serve_script(port), mode=mode)
                res, out = self.server.run_to_completion(fetch_script(port), mode=mode)
                self.assertEqual(out.strip(), "status 200", out)
                # GET /v1/ports names the port and the job that left the server running.
                self.assertEqual(self.ports_of(job),
                                 [{"job_id": job, "port": port, "address": "127.0.0.1", "family": "ipv4"}])
                act = self.server.ok("GET", f"/v1/jobs/{job}/activity")
                self.assertTrue(act["done"])
                self.assertEqual((act["status"], act["processes"]), ("exited", 1), act)
                # The job's end is final: status, exit code and output stay what they were.
                self.assertEqual(self.server.ok("GET", f"/v1/jobs/{job}")["status"], "exited")

    def test_setsid_and_hup_ignorers_survive_a_plain_background_child_does_not(self):
        for mode in ("pty", "stdio"):
            with self.subTest(mode=mode):
                mk = tag()
                job, _ = self.finished(
                    f"setsid sh -c 'sleep 1000; :' {mk}-setsid >/dev/null 2>&1 & "
                    f"nohup sh -c 'sleep 1000; :' {mk}-nohup >/dev/null 2>&1 & "
                    f"setsid nohup sh -c 'sleep 1000; :' {mk}-both >/dev/null 2>&1 & "
                    f"sh -c 'trap \"\" HUP; sleep 1000; :' {mk}-hupignore >/dev/null 2>&1 & "
                    f"sh -c 'sleep 1000; :' {mk}-plain >/dev/null 2>&1 & "
                    "sleep 0.3; echo bye", mode=mode)

                def kinds():
                    return {a[-1].split("-", 1)[1] for _, a in processes_mentioning(mk) if a and a[-1].startswith(mk)}
                wait_until(lambda: "plain" not in kinds(), timeout=30, what="the plain child ended by the hangup")
                time.sleep(1)  # nothing ends the others a moment later
                self.assertEqual(kinds(), {"setsid", "nohup", "both", "hupignore"})
                pids = [p for p, _ in processes_mentioning(mk)]
                with open(os.path.join(self.cgroup(job), "cgroup.procs")) as f:
                    members = {int(p) for p in f.read().split()}
                self.assertTrue(set(pids) <= members, (pids, members))
                act = self.server.ok("GET", f"/v1/jobs/{job}/activity")
                self.assertEqual(act["processes"], 8, act)  # each kind: its sh and its sleep
                self.server.ok("DELETE", f"/v1/jobs/{job}")
                self.assertFalse(processes_mentioning(mk))
                self.assertFalse([p for p in pids if process_alive(p)])
                self.assertFalse(os.path.exists(self.cgroup(job)))

    def test_what_is_left_stays_confined(self):
        """Escape test: the leftover, once its job's script and runner are gone, tries what a
        job may not (the state dir, a directory no job can see, a file outside Home, the
        server's port); it fails as the job would, and it carries the job's confinement
        (seccomp, no_new_privs, capabilities, PID namespace, cgroup namespace), compared
        with what the job's script itself saw."""
        s = self.server
        markers = os.path.join(s.tmp, "markers")  # no job can see this
        os.makedirs(markers, exist_ok=True)
        os.chmod(markers, 0o777)
        mk = tag()
        db = os.path.join(s.state_dir, "shellctl.db")
        before = os.stat(db)
        report = os.path.join(s.home, f"report-{mk}")
        # The API refuses a job's connections before a byte is read: no answer comes.
        with open(os.path.join(s.home, f"api-{mk}.py"), "w") as f:
            f.write("import socket\n"
                    "try:\n"
                    f"    c = socket.create_connection(('127.0.0.1', {s.port}), 5)\n"
                    "    c.settimeout(5)\n"
                    "    c.sendall(b'GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
                    "    print('API-ANSWERED' if c.recv(100) else 'api closed')\n"
                    "except OSError as e:\n"
                    "    print('api refused', e.errno)\n")
        probes = (
            "grep -E \"^(Seccomp|NoNewPrivs|CapEff|CapBnd):\" /proc/self/status; "
            "echo nspid $(grep NSpid: /proc/self/status | wc -w); cat /proc/self/cgroup; "
            f"touch {markers}/{mk} && echo WROTE-MARKER; "
            f"touch {s.state_dir}/{mk} && echo WROTE-STATE; "
            f"echo x >> {db} && echo WROTE-DB; "
            f"touch /etc/{mk} && echo WROTE-ETC; "
            f"{PY} $HOME/api-{mk}.py; "
            "echo probes-done")
        with open(os.path.join(s.home, f"probe-{mk}.sh"), "w") as f:
            f.write(probes + "\n")
        job, out = self.finished(
            f"sh $HOME/probe-{mk}.sh; "
            f"nohup sh -c 'sleep 1; sh $HOME/probe-{mk}.sh > {report} 2>&1; sleep 1000' {mk} >/dev/null 2>&1 &")
        wait_until(lambda: os.path.exists(report) and "probes-done" in open(report).read(), timeout=30,
                   what="the leftover's report")
        with open(report) as f:
            later = f.read()
        self.assertTrue(processes_mentioning(mk), "the leftover ended")
        for line in ("WROTE-MARKER", "WROTE-STATE", "WROTE-DB", "WROTE-ETC", "API-ANSWERED"):
            self.assertNotIn(line, out)
            self.assertNotIn(line, later)
        self.assertFalse(os.path.exists(os.path.join(markers, mk)))
        self.assertFalse(os.path.exists(os.path.join(s.state_dir, mk)))
        self.assertFalse(os.path.exists(f"/etc/{mk}"))
        after = os.stat(db)
        self.assertEqual(before.st_ino, after.st_ino)
        self.assertIn("api ", later)

        def confinement(text):
            return [l for l in text.splitlines()
                    if l.split(":")[0] in ("Seccomp", "NoNewPrivs", "CapEff", "CapBnd") or l.startswith(("nspid", "0::"))]
        self.assertEqual(confinement(later), confinement(out), (out, later))
        self.assertIn("Seccomp:\t2", out)
        self.assertIn("NoNewPrivs:\t1", out)
        self.assertIn("0::/", out)  # its own cgroup is the root of its cgroup namespace
        pids = [p for p, _ in processes_mentioning(mk)]
        with open(os.path.join(self.cgroup(job), "cgroup.procs")) as f:
            members = {int(p) for p in f.read().split()}
        self.assertTrue(set(pids) <= members, (pids, members))

    def test_the_output_is_final_although_a_leftover_writes_to_the_terminal(self):
        mk = tag()
        job, out = self.finished(
            f"sh -c 'trap \"\" HUP; while :; do echo late-{mk} 2>/dev/null; sleep 0.05; done' {mk} & "
            "sleep 0.3; echo bye")
        self.assertIn("bye", out)
        first = self.server.wait(job, 0, timeout=0)
        time.sleep(1.5)
        again = self.server.wait(job, 0, timeout=0)
        self.assertEqual((again["output"], again["offset"]), (first["output"], first["offset"]))
        self.assertTrue(processes_mentioning(mk), "the HUP-ignoring loop is left running")
        path = os.path.join(self.server.state_dir, "jobs", job, "output.log")
        size = os.path.getsize(path)
        time.sleep(0.5)
        self.assertEqual(os.path.getsize(path), size)

    # -- what ends them ----------------------------------------------------------------
    def left_server(self, **fields):
        """A finished job that left a dev server: (job, port, pids)."""
        port = free_port()
        job, _ = self.finished(serve_script(port), **fields)
        wait_until(lambda: port_open(port), timeout=30, what="the dev server")
        pids = server_pids(port)
        self.assertTrue(pids)
        return job, port, pids

    def assert_ended(self, job, port, pids):
        self.assertFalse([p for p in pids if process_alive(p)])
        self.assertFalse(port_open(port))
        self.assertFalse(self.ports_of(job))
        self.assertFalse(os.path.exists(self.cgroup(job)))

    def test_terminate_of_a_finished_job_ends_what_it_left(self):
        job, port, pids = self.left_server()
        before = self.server.ok("GET", f"/v1/jobs/{job}")
        after = self.server.ok("POST", f"/v1/jobs/{job}/terminate", {"grace_seconds": 0})
        # The job stays what it was (exited, its code): only what it left is ended.
        self.assertEqual(after, before)
        self.assert_ended(job, port, pids)
        self.assertEqual(self.server.ok("GET", f"/v1/jobs/{job}/activity")["processes"], 0)

    def test_delete_ends_what_it_left(self):
        job, port, pids = self.left_server(mode="stdio")
        self.assertEqual(self.server.ok("DELETE", f"/v1/jobs/{job}"), {"job_id": job, "deleted": True})
        self.assert_ended(job, port, pids)

    def test_a_job_that_leaves_nothing_keeps_nothing(self):
        job, out = self.finished("echo plain")
        wait_until(lambda: not os.path.exists(self.cgroup(job)), timeout=30, what="the cgroup ended")
        self.assertEqual(self.server.ok("GET", f"/v1/jobs/{job}/activity")["processes"], 0)

    def test_ports_lists_jobs_only_and_both_families(self):
        port4, port6 = free_port(), free_port()
        job, _ = self.finished(
            f"nohup {PY} -c 'import socket, time\n"
            f"a = socket.socket(); a.bind((\"0.0.0.0\", {port4})); a.listen()\n"
            f"b = socket.socket(socket.AF_INET6); b.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)\n"
            f"b.bind((\"::1\", {port6})); b.listen(); time.sleep(1000)' >/dev/null 2>&1 &")
        mine = socket.socket()
        mine.bind(("127.0.0.1", 0))
        mine.listen()
        try:
            wait_until(lambda: len(self.ports_of(job)) == 2, timeout=30, what="both listeners")
            self.assertEqual(sorted(self.ports_of(job), key=lambda p: p["port"]), sorted([
                {"job_id": job, "port": port4, "address": "0.0.0.0", "family": "ipv4"},
                {"job_id": job, "port": port6, "address": "::1", "family": "ipv6"}], key=lambda p: p["port"]))
            listed = {p["port"] for p in self.server.ok("GET", "/v1/ports")["ports"]}
            self.assertNotIn(mine.getsockname()[1], listed)  # not a job's
            self.assertNotIn(self.server.port, listed)  # the server's own
        finally:
            mine.close()


class LeftoversWithoutNamespaces(Leftovers):
    """The original's unsandboxed jobs (no PID namespace, no Landlock): the cgroup alone keeps
    and later ends what they leave."""
    server_env = {"SHELLCTL_ENABLE_PATH_ISOLATION": "false", "SHELLCTL_JOB_NAMESPACES": "off"}

    def test_what_is_left_stays_confined(self):
        # Without namespaces and Landlock a root job is root on the host (the original's
        # mode): there is no confinement to keep. The cgroup is checked by the other cases.
        pass


class LeftoversAcrossRestarts(unittest.TestCase):
    def setUp(self):
        self.server = Server(token=TOKEN)
        self.root = cgroup_root_of(self.server)
        self.assertIsNotNone(self.root, self.server.read_stderr())

    def tearDown(self):
        self.server.close()

    def test_a_restart_keeps_what_a_job_left_and_delete_ends_it(self):
        for stop in ("kill", "stop"):
            with self.subTest(stop=stop):
                port = free_port()
                res, _ = self.server.run_to_completion(serve_script(port))
                job = res["job_id"]
                wait_until(lambda: port_open(port), timeout=30, what="the dev server")
                pids = server_pids(port)
                self.assertTrue(pids)
                self.server.kill() if stop == "kill" else self.server.stop()
                self.server.start()
                self.assertTrue(port_open(port))
                self.assertEqual(self.server.ok("GET", f"/v1/jobs/{job}")["status"], "exited")
                self.assertEqual(self.server.ok("GET", f"/v1/jobs/{job}/activity")["processes"], 1)
                self.assertEqual([p["port"] for p in self.server.ok("GET", "/v1/ports")["ports"]
                                  if p["job_id"] == job], [port])
                self.server.ok("DELETE", f"/v1/jobs/{job}")
                self.assertFalse([p for p in pids if process_alive(p)])
                self.assertFalse(port_open(port))
                self.assertFalse(os.path.exists(os.path.join(self.root, "job-" + job)))


class LeftoversCollected(unittest.TestCase):
    def test_retention_ends_what_a_collected_job_left(self):
        with Server(token=TOKEN, env={"SHELLCTL_RESULT_RETENTION": "2s", "SHELLCTL_GC_INTERVAL": "1s"}) as s:
            root = cgroup_root_of(s)
            self.assertIsNotNone(root, s.read_stderr())
            port = free_port()
            res, _ = s.run_to_completion(serve_script(port))
            job = res["job_id"]
            wait_until(lambda: port_open(port), timeout=30, what="the dev server")
            pids = server_pids(port)
            self.assertTrue(pids)
            wait_until(lambda: s.request("GET", f"/v1/jobs/{job}")[0] == 404, timeout=60, what="collected")
            wait_until(lambda: not [p for p in pids if process_alive(p)], timeout=30, what="the server ended")
            self.assertFalse(port_open(port))
            self.assertFalse(os.path.exists(os.path.join(root, "job-" + job)))


class PortsWithoutContainment(unittest.TestCase):
    def test_ports_says_why_it_cannot_tell(self):
        with Server(token=TOKEN, env={"SHELLCTL_CGROUP_ROOT": "none"}) as s:
            status, _, body = s.request("GET", "/v1/ports")
            self.assertEqual(status, 503, body)
            self.assertEqual(body["error"]["code"], "unavailable")
            self.assertIn("cgroup", body["error"]["message"])
            # And what a job leaves goes with it, as before: nothing could end it later.
            mk = tag()
            res, _ = s.run_to_completion(f"nohup sh -c 'sleep 1000; :' {mk} >/dev/null 2>&1 &")
            self.assertEqual(res["status"], "exited")
            wait_until(lambda: not processes_mentioning(mk), timeout=30, what="the leftover ended with its job")


if __name__ == "__main__":
    unittest.main()
