"""The sandbox under attack (docs/security.md, guarantees G1-G7): every attack that
worked against the landed build is tried again, end to end, with the real kernel, tmux,
SQLite and HTTP. A hostile script runs as a job; the attacker holds the token but may only
use the API; a peer without the token gets nothing.

An attack "works" when something outside the job changes: a marker file appears in a
directory only the test can see, a file of the server or of another job changes, a
process of the server or of tmux is stopped, a secret shows up in the job's output.
"""
import os
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

from harness import Server, processes_mentioning, wait_until

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
from helper_support import ensure_test_user  # noqa: E402

PY = "/usr/bin/python3"  # the job sees the system's trees only


def q(s):
    return "'" + s.replace("'", "'\\''") + "'"


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def tmux_server_pid(server):
    r = server.tmux("display-message", "-p", "#{pid}")
    return int(r.stdout.strip())


class AttackBase(unittest.TestCase):
    token = "tok-" + uuid.uuid4().hex

    @classmethod
    def make_server(cls):
        return Server(token=cls.token)

    @classmethod
    def setUpClass(cls):
        cls.server = cls.make_server()
        cls.markers = os.path.join(cls.server.tmp, "markers")  # no job can see this
        os.makedirs(cls.markers)
        os.chmod(cls.markers, 0o777)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def marker(self):
        return os.path.join(self.markers, "m-" + uuid.uuid4().hex)

    def job(self, script, **kw):
        res, out = self.server.run_to_completion(script, **kw)
        self.assertTrue(res["done"], res)
        return res, out

    def start(self, script, **kw):
        """A job that keeps running; deleted (forced) at cleanup."""
        res = self.server.run(script, timeout=0.2, **kw)
        jid = res["job_id"]
        self.addCleanup(lambda: self.server.request("DELETE", f"/v1/jobs/{jid}?force=true&grace_seconds=0"))
        return jid

    def wait_output(self, jid, text):
        def seen():
            st, _, body = self.server.request("GET", f"/v1/jobs/{jid}/log/tail")
            return st == 200 and text in body["output"]
        wait_until(seen, timeout=60, what=f"{text!r} in job {jid}")

    def assert_server_alive(self):
        self.assertEqual(self.server.proc.poll(), None)
        res, out = self.job("echo alive", timeout=30)
        self.assertEqual((res["status"], out), ("exited", "alive\n"))


class ControlPlaneTest(AttackBase):
    """G1: no way back to tmux, the server, the state dir or another job."""

    def test_tmux_socket_and_every_state_socket_are_unreachable(self):
        s = self.server
        victim = self.start("echo victim-ready; sleep 600")
        self.wait_output(victim, "victim-ready")
        sockets = [os.path.join(d, f) for d, _, fs in os.walk(s.state_dir) for f in fs
                   if stat.S_ISSOCK(os.lstat(os.path.join(d, f)).st_mode)]
        self.assertIn(s.tmux_socket, sockets)
        mk = self.marker()
        probe = "; ".join(
            f"{PY} -c 'import socket,sys\n"
            f"c=socket.socket(socket.AF_UNIX)\n"
            f"try:\n c.connect(sys.argv[1]); print(\"CONNECTED\", sys.argv[1])\n"
            f"except OSError as e: print(\"refused\", e.errno)' {q(p)}" for p in sockets)
        script = (f"{probe}\n"
                  f"tmux -S {q(s.tmux_socket)} run-shell {q('touch ' + mk)}; echo rc=$?\n"
                  f"tmux -S {q(s.tmux_socket)} send-keys -t shellctl-{victim}:0.0 "
                  f"'echo pwned' Enter; echo rc=$?\n"
                  f"tmux -S {q(s.tmux_socket)} capture-pane -p -t shellctl-{victim}:0.0; "
                  f"echo rc=$?\n"
                  f"tmux -S {q(s.tmux_socket)} kill-session -t shellctl-{victim}; echo rc=$?\n")
        res, out = self.job(script)
        self.assertNotIn("CONNECTED", out)
        self.assertEqual(out.count("refused"), len(sockets), out)
        self.assertNotIn("victim-ready", out)  # capture-pane showed nothing of the victim
        self.assertEqual(out.count("rc=0"), 0, out)
        self.assertFalse(os.path.exists(mk))
        time.sleep(0.3)
        st, _, tail = s.request("GET", f"/v1/jobs/{victim}/log/tail")
        self.assertNotIn("pwned", tail["output"])
        self.assertEqual(s.status(victim)[1]["status"], "running")

    def test_database_runtime_dir_runner_link_and_other_jobs_are_out_of_reach(self):
        s = self.server
        other_home = os.path.join(s.tmp, "other-agent")
        victim = self.start("echo victim-out; sleep 600", env={"HOME": other_home, "SECRET": "v"})
        self.wait_output(victim, "victim-out")
        vdir = s.job_dir(victim)
        link = os.path.join(s.runtime_dir, "bin", "shellctl-runner")
        link_before = os.readlink(link)
        db = os.path.join(s.state_dir, "shellctl.db")
        with open(db, "rb") as f:
            db_before = f.read()
        script = "\n".join([
            f"cat {q(db)} | head -c 16 | od -c | head -1",
            f"echo x >> {q(db)} && echo WROTE-DB",
            f"ls -la {q(s.runtime_dir)} {q(s.state_dir)} && echo LISTED",
            f"ln -sf /bin/sh {q(link)} && echo RELINKED",
            f"rm -f {q(link)}; cp /bin/sh {q(link)} && echo REPLACED",
            f"cat {q(os.path.join(vdir, '.job-env.json'))} && echo READ-ENV",
            f"cat {q(os.path.join(vdir, 'output.log'))} && echo READ-OUT",
            f"echo evil >> {q(os.path.join(vdir, 'output.log'))} && echo WROTE-OUT",
            f"rm {q(os.path.join(vdir, 'script'))} && echo REMOVED",
            f"echo 0 > {q(os.path.join(vdir, 'runner-exit-code'))} && echo FORGED",
            f"mkdir {q(os.path.join(s.state_dir, 'jobs', 'x'))} && echo MKDIR",
            "true"])
        res, out = self.job(script)
        for word in ("WROTE-DB", "LISTED", "RELINKED", "REPLACED", "READ-ENV", "READ-OUT",
                     "WROTE-OUT", "REMOVED", "FORGED", "MKDIR", "victim-out", "SQLite"):
            self.assertNotIn(word, out)
        self.assertEqual(os.readlink(link), link_before)
        with open(db, "rb") as f:
            self.assertEqual(f.read(), db_before)
        with sqlite3.connect(db) as conn:
            conn.execute("SELECT count(*) FROM jobs").fetchone()
        with open(os.path.join(vdir, "output.log")) as f:
            self.assertEqual(f.read(), "victim-out\n")
        self.assertTrue(os.path.exists(os.path.join(vdir, "script")))
        self.assertFalse(os.path.exists(os.path.join(vdir, "runner-exit-code")))
        self.assertEqual(s.status(victim)[1]["status"], "running")

    def test_no_signal_reaches_the_server_or_tmux(self):
        s = self.server
        tmux_pid = tmux_server_pid(s)
        script = "\n".join(
            [f"kill -0 {pid}; echo kill0=$?; kill -STOP {pid}; echo stop=$?; "
             f"kill -9 {pid}; echo kill9=$?" for pid in (s.pid, tmux_pid)])
        self.job(script)
        with open(f"/proc/{tmux_pid}/stat") as f:
            self.assertNotIn(f.read().rsplit(")", 1)[1].split()[0], ("T", "Z"))
        with open(f"/proc/{s.pid}/stat") as f:
            self.assertNotIn(f.read().rsplit(")", 1)[1].split()[0], ("T", "Z"))
        self.assert_server_alive()

    def test_the_server_cannot_be_traced(self):
        s = self.server
        script = (f"timeout 5 strace -p {s.pid} -o /dev/null; echo strace=$?\n"
                  f"timeout 20 gdb -batch -p {s.pid} -ex 'print 1' >/dev/null 2>&1; echo gdb=$?\n"
                  f"head -c 1 /proc/{s.pid}/mem; echo mem=$?\n"
                  # a debugger still works on the job's own processes
                  "strace -o /dev/null true && echo traced-own=ok\n")
        res, out = self.job(script, timeout=60)
        self.assertIn("traced-own=ok", out)
        for word in ("strace=0", "mem=0"):
            self.assertNotIn(word, out)
        with open(f"/proc/{s.pid}/status") as f:
            tracer = [l for l in f if l.startswith("TracerPid:")][0].split()[1]
        self.assertEqual(tracer, "0")
        self.assert_server_alive()

    def test_a_job_sees_only_its_own_processes(self):
        secret = "s3cr3t-" + uuid.uuid4().hex
        victim = self.start(f"echo up; sleep 600", env={"VICTIM_SECRET": secret})
        self.wait_output(victim, "up")
        res, out = self.job("ps -eo pid,args; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' "
                            "| grep -a VICTIM; echo done")
        self.assertNotIn(secret, out)
        self.assertNotIn("sleep 600", out)
        self.assertNotIn("tmux", out)
        self.assertNotIn("shellctl serve", out)


class SecretsTest(AttackBase):
    """G2: the token is never visible to a job, nor in the server's own /proc files."""

    def assert_no_token(self, server, token):
        script = ("cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' "
                  f"| grep -c {q(token)}; env | grep -c SHELLCTL_; echo end")
        for mode in ("pty", "stdio"):
            res, out = server.run_to_completion(script, mode=mode)
            self.assertNotIn(token, out)
            self.assertIn("end", out)
        pids = [server.pid, tmux_server_pid(server)]
        for pid in pids:
            for name in ("cmdline", "environ"):
                with open(f"/proc/{pid}/{name}", "rb") as f:
                    self.assertNotIn(token.encode(), f.read(), f"/proc/{pid}/{name}")

    def test_token_from_the_flag(self):
        self.assert_no_token(self.server, self.token)
        with open(f"/proc/{self.server.pid}/cmdline", "rb") as f:
            self.assertIn(b"--token\0" + b"x" * len(self.token), f.read())

    def test_token_from_the_environment(self):
        token = "env-tok-" + uuid.uuid4().hex
        s = Server(env={"SHELLCTL_AUTH_TOKEN": token})
        try:
            s.token = token
            self.assertEqual(s.request("GET", "/v1/jobs", auth=False)[0], 401)
            self.assert_no_token(s, token)
        finally:
            s.close()


class RequestFieldsTest(AttackBase):
    """G3: cwd, env, ids and values are data; nothing reaches tmux or a shell as syntax."""

    def assert_refused(self, body, status, code):
        st, _, r = self.server.request("POST", "/v1/jobs/run", body)
        self.assertEqual((st, r["error"]["code"]), (status, code), (body, r))

    def test_control_characters_in_cwd_are_refused(self):
        mk = self.marker()
        inj = f"run-shell 'touch {mk}'"
        real = os.path.join(self.server.home, "nl\n" + inj)
        os.makedirs(real)  # a directory whose name holds a newline (a job could make one)
        for cwd in (self.server.home + "\0\n" + inj, self.server.home + "\n" + inj,
                    self.server.home + "\r" + inj, real, self.server.home + "\x1b[2J",
                    self.server.home + "\x7f"):
            self.assert_refused({"script": "true", "cwd": cwd}, 400, "invalid_cwd")
        time.sleep(0.3)
        self.assertFalse(os.path.exists(mk))
        self.assert_server_alive()

    def test_cwd_with_tmux_and_shell_syntax_is_just_a_name(self):
        mk = self.marker()
        name = (f"a';touch {mk};'b \\'\\\\ #{{pane_pid}} #(touch {mk}) $(touch {mk}) `touch {mk}` "
                f"~ $HOME ${{HOME}} {{x}} ; %if \xe9\u00ff")
        cwd = os.path.join(self.server.home, name)
        os.makedirs(cwd)
        for mode in ("pty", "stdio"):
            res, out = self.job("pwd; echo ran", cwd=cwd, mode=mode)
            self.assertEqual((res["status"], res["exit_code"]), ("exited", 0), out)
            self.assertEqual(out, cwd + "\nran\n")
        self.assertFalse(os.path.exists(mk))

    def test_env_names_and_nul_are_refused_values_arrive_intact(self):
        mk = self.marker()
        for env in ({"A=B": "x"}, {"A\0B": "x"}, {"A": "x\0y"}, {"": "x"}):
            self.assert_refused({"script": "true", "env": env}, 422, "validation_error")
        pem = ("-----BEGIN KEY-----\nMIIB'x\"y\\z$(touch " + mk + ")\n#{pane_pid};\r\n"
               "\x1b]0;t\x07\xff-----END KEY-----\n")
        for mode in ("pty", "stdio"):
            res, out = self.job(f"{PY} -c 'import os,sys; sys.stdout.write(repr(os.environ[\"PEM\"]))'",
                                env={"PEM": pem}, mode=mode)
            self.assertEqual(out.strip(), repr(pem), mode)
        self.assertFalse(os.path.exists(mk))


class GrantsTest(AttackBase):
    """G4: HOME and cwd never widen the writable area."""

    def test_forbidden_homes_are_refused(self):
        s = self.server
        for home in ("/", "..", "rel/home", "/usr", "/usr/local/x", "/etc/agent", "/proc",
                     "/sys/x", "/dev/shm/x", "/boot", "/run/x", "/lib/x", s.state_dir,
                     os.path.join(s.state_dir, "runtime", "bin"), os.path.join(s.state_dir, "jobs"),
                     s.tmp):  # s.tmp holds the state dir
            st, _, r = s.request("POST", "/v1/jobs/run", {"script": "true", "env": {"HOME": home}})
            self.assertEqual((st, r["error"]["code"]), (422, "validation_error"), (home, r))
        # A symlink that leads there is resolved first.
        link = os.path.join(s.home, "to-usr")
        os.symlink("/usr", link)
        st, _, r = s.request("POST", "/v1/jobs/run", {"script": "true", "env": {"HOME": link}})
        self.assertEqual((st, r["error"]["code"]), (422, "validation_error"), r)
        self.assertTrue(os.path.isdir(os.path.join(s.state_dir, "runtime", "bin")))

    def test_a_home_through_a_link_into_the_state_dir_never_runs(self):
        s = self.server
        base = os.path.join(s.home, "agents")
        os.makedirs(base, exist_ok=True)
        link = os.path.join(base, "swap")
        os.symlink(os.path.join(s.state_dir, "jobs"), link)
        mk = self.marker()
        st, _, r = s.request("POST", "/v1/jobs/run",
                             {"script": f"touch {mk}", "env": {"HOME": os.path.join(link, "x")}})
        self.assertEqual((st, r["error"]["code"]), (422, "validation_error"), r)
        self.assertFalse(os.path.exists(mk))
        # (A link planted after this check is the runner's to refuse: tests/e2e/helpers.)

    def test_cwd_in_a_system_tree_is_a_working_directory_without_a_grant(self):
        for cwd in ("/", "/usr", "/etc"):
            mk = os.path.join(cwd, "shellctl-e2e-" + uuid.uuid4().hex)
            res, out = self.job(f"pwd; echo x > {q(mk)} && echo WROTE; touch ./y && echo WROTE2; "
                                "echo end", cwd=cwd)
            self.assertEqual(res["status"], "exited", out)
            self.assertTrue(out.startswith(cwd + "\n"), out)
            self.assertNotIn("WROTE", out)
            self.assertFalse(os.path.exists(mk))

    def test_cwd_tmp_keeps_its_grant(self):
        # (Unless /tmp holds the state dir, as it does for the other servers here: an
        # ancestor of the state dir gets no grant.)
        base = tempfile.mkdtemp(prefix="shellctl-e2e-", dir="/var/tmp")
        s = Server(state_dir=os.path.join(base, "state"), home=os.path.join(base, "home"))
        name = "shellctl-e2e-" + uuid.uuid4().hex
        try:
            os.makedirs(s.home, exist_ok=True)
            res, out = s.run_to_completion(f"echo x > {name} && echo WROTE", cwd="/tmp")
            self.assertEqual(out, "WROTE\n")
            self.assertTrue(os.path.exists(os.path.join("/tmp", name)))
            res, out = self.job(f"echo x > {name}-2 && echo WROTE", cwd="/tmp")
            self.assertNotIn("WROTE", out)
        finally:
            s.close()
            subprocess.run(["rm", "-rf", base, os.path.join("/tmp", name)])

    def test_metadata_outside_the_grants_cannot_change(self):
        # Probe files of the test's own in a system tree and in /tmp (never the machine's
        # real files: on a build without the sandbox this attack works).
        probes = [os.path.join("/usr/local", "shellctl-e2e-meta-" + uuid.uuid4().hex),
                  os.path.join(tempfile.gettempdir(), "shellctl-e2e-meta-" + uuid.uuid4().hex)]
        for p in probes:
            with open(p, "w") as f:
                f.write("p")
            os.chmod(p, 0o644)
        try:
            script = "".join(f"chmod 777 {q(p)}; echo chmod=$?; chown 1:1 {q(p)}; echo chown=$?; "
                             f"touch -d 2000-01-01 {q(p)}; echo touch=$?; "
                             f"rm {q(p)}; echo rm=$?\n" for p in probes)
            res, out = self.job(script + "mknod ./dev b 8 0; echo mknod=$?\n")
            for word in ("chmod=0", "chown=0", "touch=0", "rm=0", "mknod=0"):
                self.assertNotIn(word, out)
            for p in probes:
                st = os.stat(p)
                self.assertEqual((stat.S_IMODE(st.st_mode), st.st_uid), (0o644, os.geteuid()))
                self.assertGreater(st.st_mtime, 946684800 + 86400)
        finally:
            for p in probes:
                if os.path.exists(p):
                    os.remove(p)

    def test_capabilities_are_cut_and_the_sandbox_cannot_be_rebuilt(self):
        res, out = self.job(
            "grep -E 'CapEff|CapBnd|NoNewPrivs|Seccomp:' /proc/self/status\n"
            "unshare -U true; echo userns=$?\nunshare -m true; echo mountns=$?\n"
            "mount -t tmpfs t \"$HOME\"; echo mount=$?\n"
            f"{PY} -c 'import fcntl,termios,sys\n"
            "try: fcntl.ioctl(1, termios.TIOCSTI, b\"x\"); print(\"sti=ok\")\n"
            "except OSError as e: print(\"sti-errno\", e.errno)'\n")
        caps = dict(l.split(":\t") for l in out.splitlines() if "\t" in l)
        if os.geteuid() == 0:
            # Docker's default set without CAP_MKNOD: chown dac_override fowner fsetid kill
            # setgid setuid setpcap net_bind_service net_raw sys_chroot audit_write setfcap
            docker = sum(1 << b for b in (0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 18, 29, 31))
            self.assertEqual(int(caps["CapBnd"], 16), docker)
            self.assertEqual(int(caps["CapEff"], 16), docker)
        self.assertEqual(caps["NoNewPrivs"].strip(), "1")
        self.assertEqual(caps["Seccomp"].strip(), "2")
        for word in ("userns=0", "mountns=0", "mount=0", "sti=ok"):
            self.assertNotIn(word, out)


class ContainmentTest(AttackBase):
    """G6 and D9: terminate and delete end every process of a job."""

    def survivors(self, tag):
        return [p for p, argv in processes_mentioning(tag)]

    @staticmethod
    def new_tag():
        # A sleep length no other process uses: it names the job's processes in argv.
        return f"9{uuid.uuid4().int % 10**7:07d}"

    def daemon_script(self, tag):
        # A setsid daemon, a SIGHUP-ignoring child and a nohup'd one, each `sleep <tag>`.
        return (f"setsid sh -c 'exec sleep {tag}' &\n"
                f"(trap '' HUP; exec sleep {tag}) &\n"
                f"nohup sh -c 'exec sleep {tag}' >/dev/null 2>&1 &\n"
                "echo started; sleep 900\n")

    def wait_survivors(self, tag, n):
        wait_until(lambda: len(self.survivors(tag)) >= n, timeout=30, what=f"{n} {tag} processes")

    def test_terminate_ends_daemons_and_hup_ignorers(self):
        for mode in ("pty", "stdio"):
            tag = self.new_tag()
            jid = self.start(self.daemon_script(tag), mode=mode)
            self.wait_output(jid, "started")
            self.wait_survivors(tag, 3)
            v = self.server.ok("POST", f"/v1/jobs/{jid}/terminate", {"grace_seconds": 1})
            self.assertEqual(v["status"], "terminated")
            wait_until(lambda: not self.survivors(tag), timeout=30, what=f"{mode}: no survivors")

    def test_forced_delete_ends_daemons(self):
        tag = self.new_tag()
        jid = self.start(self.daemon_script(tag))
        self.wait_output(jid, "started")
        self.wait_survivors(tag, 3)
        st, _, body = self.server.request("DELETE", f"/v1/jobs/{jid}?force=true&grace_seconds=1")
        self.assertEqual((st, body), (200, {"job_id": jid, "deleted": True}))
        wait_until(lambda: not self.survivors(tag), timeout=30, what="no survivors")

    def test_what_a_finished_job_left_ends_with_its_deletion(self):
        """What outlives the terminal's hangup outlives the job's script (the original's
        contract, test_job_leftovers.py), and nothing of the job outlives its deletion."""
        tag = self.new_tag()
        res, out = self.job(self.daemon_script(tag).replace("sleep 900\n", "true\n"))
        self.assertEqual(res["status"], "exited")
        self.wait_survivors(tag, 3)
        self.server.ok("DELETE", f"/v1/jobs/{res['job_id']}")
        wait_until(lambda: not self.survivors(tag), timeout=30, what="no survivors")


class SameHomeOutputTest(AttackBase):
    """G7: a later job of the same HOME reads (never writes) earlier outputs."""

    def test_output_path_of_the_same_home(self):
        s = self.server
        h1 = os.path.join(s.tmp, "agent-1")
        h2 = os.path.join(s.tmp, "agent-2")
        first, _ = self.job("echo first-output", env={"HOME": h1})
        path = first["output_path"]
        res, out = self.job(f"cat {q(path)}; echo x >> {q(path)} && echo WROTE; "
                            f"cat {q(os.path.join(os.path.dirname(path), 'script'))} && echo SCRIPT",
                            env={"HOME": h1})
        self.assertIn("first-output\n", out)
        self.assertNotIn("WROTE", out)
        self.assertNotIn("SCRIPT", out)
        res, out = self.job(f"cat {q(path)} && echo READ", env={"HOME": h2})
        self.assertNotIn("first-output", out)
        self.assertNotIn("READ", out)
        with open(path) as f:
            self.assertEqual(f.read(), "first-output\n")
        # Deleted jobs leave no view entry behind.
        s.ok("DELETE", f"/v1/jobs/{first['job_id']}")
        views = os.path.join(s.runtime_dir, "home-views")
        leftovers = [os.path.join(d, f) for d, _, fs in os.walk(views) for f in fs
                     if first["job_id"] in d]
        self.assertEqual(leftovers, [])


class UnauthenticatedPeersTest(AttackBase):
    """G5: a peer without the token costs nothing."""

    def test_thirty_large_uploads_without_the_token(self):
        s = self.server
        idle = rss_mib(s.pid)
        answers, peak = [], [idle]

        def upload():
            c = socket.create_connection(("127.0.0.1", s.port))
            c.sendall(b"POST /v1/jobs/run HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                      % (60 << 20))
            chunk = b"x" * (1 << 20)
            try:
                for _ in range(60):
                    c.sendall(chunk)
            except OSError:
                pass
            try:
                answers.append(c.recv(64))
            except OSError as e:
                answers.append(repr(e).encode())
            c.close()

        ts = [threading.Thread(target=upload) for _ in range(30)]
        for t in ts:
            t.start()
        while any(t.is_alive() for t in ts):
            peak.append(rss_mib(s.pid))
            time.sleep(0.02)
        for a in answers:
            self.assertTrue(a.startswith(b"HTTP/1.1 401") or b"Connection reset" in a, a)
        self.assertLess(max(peak), idle + 16, f"RSS went from {idle:.1f} to {max(peak):.1f} MiB")
        self.assert_server_alive()


class HalfSentHeadsTest(unittest.TestCase):
    """G5: 2,000 connections that each send half a request head and wait (any peer can,
    a job among them) never keep a token holder out: the oldest guest is closed to make room
    for a new connection, and a head must be complete within seconds."""

    def test_half_sent_heads_never_keep_a_token_holder_out(self):
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
        token = "g5-" + uuid.uuid4().hex
        s = Server(token=token)
        stop = threading.Event()
        held = []
        opened = [0]

        def flood():
            socks = []
            try:
                while not stop.is_set():
                    while len(socks) < 2000 and not stop.is_set():
                        try:
                            c = socket.create_connection(("127.0.0.1", s.port), timeout=2)
                            c.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Half: ")
                            c.setblocking(False)
                            socks.append(c)
                            opened[0] += 1
                        except OSError:
                            time.sleep(0.01)
                    # The ones the server closed are refilled (peek: EOF or a reset).
                    alive = []
                    for c in socks:
                        try:
                            gone = c.recv(1, socket.MSG_PEEK) == b""
                        except BlockingIOError:
                            gone = False
                        except OSError:
                            gone = True
                        if gone:
                            c.close()
                        else:
                            alive.append(c)
                    socks = alive
                    held.append(len(socks))
                    time.sleep(0.05)
            finally:
                for c in socks:
                    c.close()

        t = threading.Thread(target=flood)
        try:
            t.start()
            # The server holds at most 1024 connections (its limit here): the flood fills
            # them all, and keeps opening more as the oldest are closed.
            wait_until(lambda: opened[0] >= 2000 and held and max(held) >= 1000, timeout=60,
                       what="the flood to fill every connection")
            idle_rss = rss_mib(s.pid)
            ok, statuses, peak = 0, [], idle_rss
            for _ in range(200):  # spread over 20 s
                try:
                    st, _, _ = s.request("GET", "/v1/jobs", timeout=10)
                except OSError as e:
                    st = repr(e)
                statuses.append(st)
                ok += st == 200
                peak = max(peak, rss_mib(s.pid))
                time.sleep(0.1)
            self.assertGreaterEqual(ok, 198, statuses)
            # docs/layout.md "Settings": about 20 MiB for a full house of guests.
            self.assertLess(peak, 64, f"RSS {peak:.1f} MiB under the flood")
            print(f"under 2000 half-sent heads: {ok}/200 answered, server RSS {peak:.1f} MiB "
                  f"(idle {idle_rss:.1f}), the flood opened {opened[0]} and held up to {max(held)} connections")
            metrics = s.request("GET", "/metrics")[2].decode()
            self.assertRegex(metrics, r'shellctl_http_connections_refused_total\{reason="guest"\} [1-9]')
        finally:
            stop.set()
            t.join()
            s.close()


    def test_a_burst_behind_a_token_holder_never_pushes_it_out(self):
        # The token holder's whole head is in its socket before 200 guests connect behind
        # it, all while the server is stopped (the kernel queues every connection). Taken
        # in one batch, as libuv does, the guests fill the 16 places and close the oldest
        # guest, the token holder, before its head is read.
        token = "g5-" + uuid.uuid4().hex
        s = Server(token=token, env={"SHELLCTL_HTTP_MAX_CONNECTIONS": "16"})
        guests = []
        holder = None
        try:
            os.kill(s.pid, signal.SIGSTOP)
            try:
                holder = socket.create_connection(("127.0.0.1", s.port), timeout=10)
                holder.sendall(f"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                               "Connection: close\r\n\r\n".encode())
                for _ in range(200):
                    g = socket.create_connection(("127.0.0.1", s.port), timeout=10)
                    g.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Half: ")
                    guests.append(g)
            finally:
                os.kill(s.pid, signal.SIGCONT)
            answer = b""
            try:
                while chunk := holder.recv(65536):
                    answer += chunk
            except OSError as e:
                self.fail(f"the token holder's connection was closed unanswered: {e!r}")
            self.assertTrue(answer.startswith(b"HTTP/1.1 200 "), answer[:200])
            metrics = s.request("GET", "/metrics")[2].decode()
            self.assertRegex(metrics, r'shellctl_http_connections_refused_total\{reason="guest"\} [1-9]')
        finally:
            for g in guests:
                g.close()
            if holder:
                holder.close()
            s.close()


class JobsCannotCallTheApiTest(unittest.TestCase):
    """No job may call the control API, with the token or without, auth on or off: its
    connection is closed before a byte is read (its socket's cgroup, from the kernel). The
    backend's connections keep working."""

    def check(self, token, env=None):
        s = Server(token=token, env=env or {})
        try:
            import base64
            head = "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n" + (f"Authorization: Bearer {token}\r\n" if token else "") + "\r\n"
            program = ("import socket\n"
                       f"c = socket.create_connection(('127.0.0.1', {s.port}))\n"
                       f"c.sendall({head.encode()!r})\n"
                       "try:\n"
                       "    data = c.recv(100)\n"
                       "    print('ANSWERED' if data else 'CLOSED')\n"
                       "except OSError as e:\n"
                       "    print('CLOSED', e.errno)\n")
            encoded = base64.b64encode(program.encode()).decode()
            probe = (f"echo {encoded} | base64 -d | {PY} -\n"
                     f"curl -s -m 10 -o /dev/null -w 'curl=%{{http_code}}\\n' http://127.0.0.1:{s.port}/healthz; echo rc=$?")
            res, out = s.run_to_completion(probe)
            self.assertIn("CLOSED", out)
            self.assertNotIn("ANSWERED", out)
            self.assertIn("curl=000", out)
            self.assertNotIn("rc=0", out)
            info = s.ok("GET", "/v1/info")
            self.assertTrue(info["isolation"]["api_refuses_jobs"], info)
            self.assertIn("jobs' connections to the API refused", s.read_stderr())
            metrics = s.request("GET", "/metrics", auth=bool(token))[2].decode()
            self.assertRegex(metrics, r'shellctl_http_connections_refused_total\{reason="job"\} [2-9]')
            # The backend is not a job: its requests go on.
            self.assertEqual(s.ok("GET", "/healthz", auth=False), {"status": "ok"})
            self.assertEqual(s.run_to_completion("echo still")[1], "still\n")
        finally:
            s.close()

    def test_auth_on(self):
        self.check("jobs-" + uuid.uuid4().hex)

    def test_auth_off(self):
        self.check(None)

    def test_path_isolation_off(self):
        self.check(None, {"SHELLCTL_ENABLE_PATH_ISOLATION": "false"})


class DefaultLayoutTest(AttackBase):
    """The state dir inside the server's HOME (the default ~/.local/share/shellctl):
    jobs whose HOME is the server's see the mask, and cannot rename their way around it."""

    @classmethod
    def make_server(cls):
        s = Server(token=cls.token, start=False)
        s.state_dir = os.path.join(s.home, ".local", "share", "shellctl")
        return s.start()

    def test_state_dir_in_home_is_masked_and_pinned(self):
        s = self.server
        local = os.path.join(s.home, ".local")
        res, out = self.job(
            f"ls -a {q(s.state_dir)}; cat {q(os.path.join(s.state_dir, 'shellctl.db'))} | head -c 4;"
            f"mv {q(local)} {q(local + '-moved')} && echo MOVED-LOCAL;"
            f"mv {q(os.path.join(local, 'share'))} {q(os.path.join(s.home, 'share-moved'))} && echo MOVED-SHARE;"
            f"rm -rf {q(local)} && echo REMOVED; echo in-home > \"$HOME/file\" && echo WROTE-HOME")
        self.assertIn("WROTE-HOME", out)
        self.assertIn(".\n..\njobs\n", out.replace("  ", "\n"))  # the mask: only jobs/
        for word in ("MOVED-LOCAL", "MOVED-SHARE", "REMOVED", "SQLite"):
            self.assertNotIn(word, out)
        self.assertTrue(os.path.isdir(s.runtime_dir))
        self.assertTrue(os.path.exists(os.path.join(s.state_dir, "shellctl.db")))
        self.assert_server_alive()


class UnprivilegedServerTest(unittest.TestCase):
    """The same walls when the server is not root (a user namespace per job)."""

    def test_jobs_of_a_non_root_server(self):
        owner = ensure_test_user()
        if owner is None:
            self.skipTest("needs root to create and switch to an unprivileged user")
        token = "unpriv-" + uuid.uuid4().hex
        s = Server(token=token, user=owner)
        try:
            markers = os.path.join(s.tmp, "markers")
            os.makedirs(markers)
            os.chmod(markers, 0o777)
            mk = os.path.join(markers, "m")
            res, out = s.run_to_completion(
                f"id -u; tmux -S {q(s.tmux_socket)} run-shell {q('touch ' + mk)}; echo rc=$?; "
                f"cat /proc/[0-9]*/cmdline | tr '\\0' '\\n' | grep -c {q(token)}; "
                f"kill -STOP {s.pid}; echo stop=$?; grep CapEff /proc/self/status; "
                "echo x > /tmp/shellctl-unpriv && echo WROTE; echo end")
            self.assertEqual(res["status"], "exited", out)
            lines = out.splitlines()
            self.assertEqual(lines[0], str(owner[0]))
            self.assertNotIn("rc=0", out)
            self.assertNotIn("stop=0", out)
            self.assertNotIn("WROTE", out)
            self.assertNotIn(token, out)
            self.assertIn("CapEff:\t0000000000000000", out)
            self.assertFalse(os.path.exists(mk))
            with open(f"/proc/{s.pid}/stat") as f:
                self.assertNotIn(f.read().rsplit(")", 1)[1].split()[0], ("T", "Z"))
            # The startup probe must tell what the jobs then get: namespaces.
            self.assertIn("own namespaces", s.read_stderr())
            self.assertNotIn("cannot build the job sandbox", s.read_stderr())
        finally:
            s.close()

    def test_a_service_account_without_a_login_shell(self):
        # nobody's passwd shell is /usr/sbin/nologin and a service manager may not set
        # SHELL: tmux would run every pane with nologin, and nothing could start.
        if os.geteuid() != 0:
            self.skipTest("needs root to switch to nobody")
        nobody = (65534, 65534)
        s = Server(user=nobody, env={"SHELL": None})
        try:
            res, out = s.run_to_completion("id -u; echo \"shell=$SHELL\"")
            self.assertEqual(res["status"], "exited", out)
            self.assertEqual(res["exit_code"], 0, out)
            self.assertEqual(out, "65534\nshell=/bin/sh\n")
            self.assertIn("own namespaces", s.read_stderr())
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
