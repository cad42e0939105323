"""Whole-tree containment (docs/jobs.md "Containment") over real HTTP, tmux and the kernel's cgroup
v2: every process a job starts — a setsid daemon, a nohup'd one, a double fork, one that ignores
SIGTERM, a fork loop still forking — ends with the job, whichever way it ends (terminate, delete,
retention GC, lost, its own exit), checked by pid and by a scan of /proc for the job's marker, and
the job's cgroup directory is gone (rmdir succeeds only once the kernel says `populated 0`). A
server killed with -9 re-adopts its jobs' cgroups; an orphan cgroup is ended at startup; a job
cannot move itself out of its cgroup. Without a writable cgroup root the server says so once and
falls back; limits without their controllers refuse startup.

These run as root on a machine with cgroup2 (CI's): the server's own cgroup is writable, so
detection finds it. A machine without that fails here, loudly."""
import os
import signal
import subprocess
import sys
import time
import unittest
import uuid

from jobs_common import cgroup_root_of
from harness import Server, end_cgroup_tree, process_alive, processes_mentioning, wait_until

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
from helper_support import ensure_test_user  # noqa: E402

TOKEN = "containment-token"
UNIFIED = "/sys/fs/cgroup/unified" if os.path.isdir("/sys/fs/cgroup/unified/") else "/sys/fs/cgroup"
FORK_LOOP_BOUND = 3000  # iterations: if containment failed, the loop still ends


def tag():
    return "ct" + uuid.uuid4().hex[:12]


def tree_script(mk):
    """A job that leaves its session and process group every way a shell can, each process
    carrying `mk` in its argv, then prints 'armed' and waits."""
    return (
        f"setsid sh -c 'sleep 1000; :' {mk}-setsid & "
        f"nohup sh -c 'sleep 1000; :' {mk}-nohup >/dev/null 2>&1 & "
        f"(sh -c 'sleep 1000; :' {mk}-double &) ; "
        f"sh -c 'trap \"\" TERM HUP INT; while :; do sleep 1; done' {mk}-noterm & "
        f"setsid sh -c 'i=0; while [ $i -lt {FORK_LOOP_BOUND} ]; do "
        f"sh -c \"sleep 0.3; :\" {mk}-forked & i=$((i+1)); sleep 0.01; done' {mk}-forkloop & "
        "echo armed; while :; do sleep 0.05; done")


KINDS = ("setsid", "nohup", "double", "noterm", "forkloop", "forked")


def stat_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().strip()
    except OSError as e:
        return str(e)


def read_text(path):
    with open(path) as f:
        return f.read()


def procs(cgroup):
    with open(os.path.join(cgroup, "cgroup.procs")) as f:
        return [int(p) for p in f.read().split()]


def assert_all_inside(test, pids, cgroup):
    """Every one of `pids` (found by a /proc scan) that is still alive after cgroup.procs was
    read is listed there: alive before and after the read, it was alive during it, and a
    process never leaves the job's cgroup. (The fork loop's children come and go.)"""
    members = procs(cgroup)
    for pid in pids:
        if pid not in members:
            test.assertFalse(process_alive(pid), f"{pid} is alive outside {cgroup} ({members})")


class Containment(unittest.TestCase):
    server_env = {}

    @classmethod
    def setUpClass(cls):
        cls.server = Server(token=TOKEN, env=cls.server_env)
        cls.root = cgroup_root_of(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def setUp(self):
        self.assertIsNotNone(self.root, "the server found no cgroup root: " +
                             self.server.read_stderr())

    def start_tree(self, **fields):
        """Starts tree_script; returns (job id, marker, the job's pids at full strength)."""
        mk = tag()
        res = self.server.run(tree_script(mk), timeout=0.3, **fields)
        job = res["job_id"]

        def present():
            names = " ".join(" ".join(argv) for _, argv in processes_mentioning(mk))
            return all(f"{mk}-{k}" in names for k in KINDS)
        wait_until(present, timeout=30, what="every kind of process running")
        cg = os.path.join(self.root, "job-" + job)
        self.assertTrue(os.path.isdir(cg), cg)
        # The cgroup holds them all, wherever they moved in sessions and groups.
        assert_all_inside(self, [p for p, _ in processes_mentioning(mk)], cg)
        return job, mk, procs(cg)

    def assert_nothing_left(self, job, mk, pids):
        self.assertFalse(processes_mentioning(mk), processes_mentioning(mk))
        left = [p for p in pids if process_alive(p)]
        self.assertFalse(left, f"still alive: {[stat_of(p) for p in left]}")
        self.assertFalse(os.path.exists(os.path.join(self.root, "job-" + job)))

    # -- the ways a job ends -------------------------------------------------------------
    def test_terminate_ends_the_whole_tree(self):
        job, mk, pids = self.start_tree()
        body = self.server.ok("POST", f"/v1/jobs/{job}/terminate", {"grace_seconds": 0.5})
        self.assertEqual(body["status"], "terminated")
        # Answered once the tree is gone: no wait here.
        self.assert_nothing_left(job, mk, pids)

    def test_forced_delete_ends_the_whole_tree(self):
        job, mk, pids = self.start_tree()
        status, _, body = self.server.request("DELETE", f"/v1/jobs/{job}?force=true&grace_seconds=0")
        self.assertEqual((status, body), (200, {"job_id": job, "deleted": True}))
        self.assert_nothing_left(job, mk, pids)

    def test_the_jobs_own_exit_keeps_what_outlives_the_hangup_until_delete(self):
        """As in the original: the setsid and nohup'd daemons outlive the job's script (a dev
        server for the next job, test_job_leftovers.py), the double-forked child that takes
        the terminal's hangup does not; the job's delete ends the rest and its cgroup."""
        mk = tag()
        res, _ = self.server.run_to_completion(
            f"setsid sh -c 'sleep 1000; :' {mk}-setsid & "
            f"nohup sh -c 'sleep 1000; :' {mk}-nohup >/dev/null 2>&1 & "
            f"(sh -c 'sleep 1000; :' {mk}-double &); sleep 0.3; echo bye")
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0))
        cg = os.path.join(self.root, "job-" + res["job_id"])

        def names():
            return " ".join(" ".join(a) for _, a in processes_mentioning(mk))
        wait_until(lambda: f"{mk}-double" not in names(), timeout=30, what="the double fork hung up")
        self.assertIn(f"{mk}-setsid", names())
        self.assertIn(f"{mk}-nohup", names())
        pids = [p for p, _ in processes_mentioning(mk)]
        assert_all_inside(self, pids, cg)
        self.server.ok("DELETE", f"/v1/jobs/{res['job_id']}")
        self.assert_nothing_left(res["job_id"], mk, pids)

    def test_stdio_jobs_are_contained_too(self):
        job, mk, pids = self.start_tree(mode="stdio")
        self.server.ok("POST", f"/v1/jobs/{job}/terminate", {"grace_seconds": 0})
        self.assert_nothing_left(job, mk, pids)

    def test_signals_and_activity_see_the_cgroup(self):
        job, mk, pids = self.start_tree()
        act = self.server.ok("GET", f"/v1/jobs/{job}/activity")
        # Every process of the cgroup but the namespaced init (when there is one): at
        # least one of each kind (the fork loop's count changes as it forks).
        self.assertGreaterEqual(act["processes"], len(KINDS))
        self.assertEqual(self.server.request("POST", f"/v1/jobs/{job}/signal",
                                             {"signal": "KILL"})[0], 200)
        # KILL reached the daemons too (the fork loop's last children may outlive it by
        # their 0.3 s; they are in the cgroup, which the job's end kills).
        wait_until(lambda: not any(f"{mk}-{k}" in " ".join(a)
                                   for _, a in processes_mentioning(mk)
                                   for k in ("setsid", "nohup", "double", "noterm", "forkloop")),
                   timeout=30, what="the daemons killed by the signal")
        wait_until(lambda: self.server.ok("GET", f"/v1/jobs/{job}")["done"], timeout=30,
                   what="done")
        wait_until(lambda: not processes_mentioning(mk), timeout=30, what="nothing left")

    def test_a_job_cannot_leave_its_cgroup(self):
        """Escape test: the job writes its own pid to the cgroup root's and the hierarchy
        root's cgroup.procs (when it can see them at all) and to a sibling's; it stays in
        its cgroup and dies with it."""
        mk = tag()
        # After the server's startup sweep (a job-* it has no row for is an orphan it
        # ends): a request about jobs is answered only once recovery, the sweep included,
        # is done.
        self.server.ok("GET", "/v1/jobs")
        sibling = os.path.join(self.root, "job-" + "0" * 16)
        os.makedirs(sibling, exist_ok=True)
        try:
            targets = [os.path.join(self.root, "cgroup.procs"), os.path.join(UNIFIED, "cgroup.procs"),
                       os.path.join(sibling, "cgroup.procs")]
            # Escaped means no longer at the root of its cgroup namespace (a write that names
            # its own cgroup, as the job's own cgroup view may, moves nothing).
            script = " ".join(f"(echo $$ > {t}) 2>/dev/null; grep -qx 0::/ /proc/self/cgroup || echo ESCAPED-{i};"
                              for i, t in enumerate(targets))
            res = self.server.run(
                f"exec sh -c '{script} echo tried; while :; do sleep 1; done' {mk}", timeout=0.3)
            job = res["job_id"]
            wait_until(lambda: "tried" in self.server.wait(job, 0, timeout=0)["output"],
                       timeout=30, what="the attempt")
            out = self.server.wait(job, 0, timeout=0)["output"]
            self.assertNotIn("ESCAPED", out)
            pids = [p for p, _ in processes_mentioning(mk)]
            self.assertTrue(pids)
            cg = os.path.join(self.root, "job-" + job)
            assert_all_inside(self, pids, cg)
            self.assertEqual(procs(sibling), [])
            self.server.ok("POST", f"/v1/jobs/{job}/terminate", {"grace_seconds": 0})
            self.assert_nothing_left(job, mk, pids)
        finally:
            os.rmdir(sibling)

    def test_info_says_v2(self):
        self.assertEqual(self.server.ok("GET", "/v1/info")["isolation"]["cgroup"], "v2")


def cgroup2_state():
    """(mount point, nsdelegate) of the cgroup2 hierarchy the tests' cgroups live in."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            tail = line.split(" - ", 1)[1].split()
            if tail[0] == "cgroup2" and fields[4] == UNIFIED:
                return fields[4], "nsdelegate" in tail[2].split(",")
    return None, None


def set_nsdelegate(point, on):
    """Remounts the host's cgroup2 with or without nsdelegate (the option is the file
    system's, so this changes the host: callers put it back as they found it). mount(2)
    itself: mount(8) would keep the options it finds."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    ms_remount = 32
    if libc.mount(None, point.encode(), None, ms_remount, b"nsdelegate" if on else b"") != 0:
        raise OSError(ctypes.get_errno(), f"remount {point}")
    if cgroup2_state()[1] != on:
        raise AssertionError(f"could not set nsdelegate={on} on {point}")


class OwnCgroupServer(Server):
    """A server in a cgroup of its own (made by the test below the test's cgroup): whatever a
    job of it breaks in cgroups, it breaks there, never the test runner's."""

    def __init__(self, **kw):
        with open("/proc/self/cgroup") as f:
            mine = [l.split("::", 1)[1].strip() for l in f if l.startswith("0::")][0]
        self.own_cgroup = os.path.join(UNIFIED + mine, "shellctl-e2e-" + uuid.uuid4().hex[:12])
        os.makedirs(self.own_cgroup)
        super().__init__(**kw)

    def command(self):
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', self.own_cgroup] + super().command()

    def close(self):
        try:
            super().close()
        finally:
            end_cgroup_tree(self.own_cgroup)


class ContainmentOnTheHostRoot(Containment):
    """Namespaces without path isolation: the job sees the machine's tree as root, but not
    its cgroups: /sys/fs/cgroup is a cgroup2 mounted inside the job's cgroup namespace, whose
    root is the job's own cgroup. That, not nsdelegate, is what keeps it in and keeps its
    hands off every other cgroup."""
    server_env = {"SHELLCTL_ENABLE_PATH_ISOLATION": "false"}

    @classmethod
    def setUpClass(cls):
        cls.server = OwnCgroupServer(token=TOKEN, env=cls.server_env)
        cls.root = cgroup_root_of(cls.server)

    def test_a_job_cannot_leave_its_cgroup(self):
        """With nsdelegate and without (the host's option, set and put back here): the job
        stays in."""
        point, was = cgroup2_state()
        self.assertIsNotNone(point, "no cgroup2 at " + UNIFIED)
        try:
            for state in (was, not was):
                with self.subTest(nsdelegate=state):
                    set_nsdelegate(point, state)
                    super().test_a_job_cannot_leave_its_cgroup()
        finally:
            set_nsdelegate(point, was)

    def test_no_job_can_kill_or_freeze_another_job_or_the_server(self):
        mk = tag()
        victim = self.server.run(f"exec sh -c 'echo ready; while :; do sleep 1; done' {mk}", timeout=0.3)["job_id"]
        wait_until(lambda: "ready" in self.server.wait(victim, 0, timeout=0)["output"], timeout=30, what="the victim")
        victim_cg = os.path.join(self.root, "job-" + victim)
        server_cg = self.server.own_cgroup
        files = [os.path.join(cg, name) for cg in (victim_cg, self.root, server_cg)
                 for name in ("cgroup.freeze", "cgroup.kill")]
        script = " ".join(f"(echo 1 > {f}) 2>/dev/null && echo WROTE-{i};" for i, f in enumerate(files))
        res, out = self.server.run_to_completion(script + " echo tried")
        self.assertEqual((res["exit_code"], out), (0, "tried\n"))
        for cg in (victim_cg, self.root, server_cg):
            with open(os.path.join(cg, "cgroup.events")) as f:
                self.assertIn("frozen 0", f.read(), cg)
        self.assertEqual(self.server.status(victim)[1]["status"], "running")
        self.assertTrue(processes_mentioning(mk))
        self.assertEqual(self.server.request("GET", "/healthz", auth=False)[0], 200)
        self.server.ok("POST", f"/v1/jobs/{victim}/terminate", {"grace_seconds": 0})

    def test_a_process_hidden_in_a_child_cgroup_is_counted_signalled_and_ended(self):
        for ending in ("signal", "terminate"):
            with self.subTest(ending=ending):
                mk = tag()
                res = self.server.run(
                    f"mkdir {UNIFIED}/hide; sh -c 'echo $$ > {UNIFIED}/hide/cgroup.procs && exec sleep 1000' {mk}-hidden & "
                    "exec sleep 1000", timeout=0.3)
                job = res["job_id"]
                cg = os.path.join(self.root, "job-" + job)
                hide = os.path.join(cg, "hide")
                wait_until(lambda: os.path.isdir(hide) and procs(hide), timeout=30, what="the hidden process")
                hidden = procs(hide)
                act = self.server.ok("GET", f"/v1/jobs/{job}/activity")
                # The script (exec'd into a sleep) and the hidden sleep; not the job's init.
                self.assertEqual(act["processes"], 2, act)
                if ending == "signal":
                    self.assertEqual(self.server.request("POST", f"/v1/jobs/{job}/signal", {"signal": "KILL"})[0], 200)
                    wait_until(lambda: not any(process_alive(p) for p in hidden), timeout=30,
                               what="the hidden process killed by the signal")
                    wait_until(lambda: self.server.ok("GET", f"/v1/jobs/{job}")["done"], timeout=30, what="done")
                else:
                    self.server.ok("POST", f"/v1/jobs/{job}/terminate", {"grace_seconds": 0})
                self.assertFalse([p for p in hidden if process_alive(p)])
                wait_until(lambda: not os.path.exists(cg), timeout=30, what="the job's cgroup tree gone")
                wait_until(lambda: not processes_mentioning(mk), timeout=30, what="nothing left")


class ContainmentWithoutNamespaces(Containment):
    """The original's unsandboxed jobs: no PID namespace whose end would take the daemons
    along; the cgroup alone contains them."""
    server_env = {"SHELLCTL_ENABLE_PATH_ISOLATION": "false", "SHELLCTL_JOB_NAMESPACES": "off"}

    def test_a_job_cannot_leave_its_cgroup(self):
        # Without namespaces a root job is root on the host (the original's mode): it can
        # move itself anywhere; docs/jobs.md "Containment" says so. Nothing to test here.
        pass


class ContainmentAcrossRestarts(unittest.TestCase):
    """kill -9 of the server: the job keeps running in tmux, the new server adopts its
    cgroup again; a job that was lost meanwhile and an orphan cgroup are ended."""

    def setUp(self):
        self.server = Server(token=TOKEN, env={"SHELLCTL_ENABLE_PATH_ISOLATION": "false",
                                               "SHELLCTL_JOB_NAMESPACES": "off"})
        self.root = cgroup_root_of(self.server)
        self.assertIsNotNone(self.root, self.server.read_stderr())

    def tearDown(self):
        self.server.close()

    def tree(self):
        """tree_script's job, once every kind of process runs."""
        mk = tag()
        res = self.server.run(tree_script(mk), timeout=0.3)

        def present():
            names = " ".join(" ".join(argv) for _, argv in processes_mentioning(mk))
            return all(f"{mk}-{k}" in names for k in KINDS)
        wait_until(present, timeout=30, what="every kind of process running")
        return res["job_id"], mk

    def test_a_restarted_server_adopts_running_jobs_and_ends_the_rest(self):
        kept, kept_mk = self.tree()
        lost, lost_mk = self.tree()
        # An orphan: a cgroup of our root that no job of ours owns, with a process in it.
        orphan = os.path.join(self.root, "job-" + "f" * 16)
        os.makedirs(orphan)
        omk = tag()
        squatter = subprocess.Popen(["sh", "-c", f"echo $$ > {orphan}/cgroup.procs && "
                                     f"exec sh -c 'sleep 1000; :' {omk}"],
                                    start_new_session=True, stdin=subprocess.DEVNULL)
        wait_until(lambda: processes_mentioning(omk), timeout=30, what="the orphan's process")
        self.assertEqual(self.server.kill(), -signal.SIGKILL)
        # `lost`: its pane and runner go while nobody watches; its daemon stays behind.
        runner = int(self.server.tmux("display-message", "-p", "-t", f"shellctl-{lost}:0.0",
                                      "#{pane_pid}").stdout.strip())
        os.kill(runner, signal.SIGKILL)
        self.server.tmux("kill-session", "-t", f"shellctl-{lost}")
        self.assertTrue(processes_mentioning(f"{lost_mk}-setsid"))
        lost_pids = [p for p, _ in processes_mentioning(lost_mk)]
        self.server.start()
        try:
            st = wait_until(lambda: self.server.ok("GET", f"/v1/jobs/{lost}")["status"] == "lost",
                            timeout=30, what="lost")
            self.assertTrue(st)
            wait_until(lambda: not processes_mentioning(lost_mk), timeout=30, what="lost tree gone")
            self.assertFalse([p for p in lost_pids if process_alive(p)])
            wait_until(lambda: not os.path.exists(os.path.join(self.root, "job-" + lost)),
                       timeout=30, what="lost cgroup gone")
            wait_until(lambda: squatter.poll() is not None, timeout=30, what="orphan killed")
            wait_until(lambda: not os.path.exists(orphan), timeout=30, what="orphan removed")
            # The kept job runs on, in its cgroup, and its end still takes the daemon along.
            self.assertEqual(self.server.ok("GET", f"/v1/jobs/{kept}")["status"], "running")
            cg = os.path.join(self.root, "job-" + kept)
            assert_all_inside(self, [p for p, _ in processes_mentioning(kept_mk)], cg)
            kept_pids = [p for p, _ in processes_mentioning(kept_mk)]
            self.server.ok("POST", f"/v1/jobs/{kept}/terminate", {"grace_seconds": 0})
            self.assertFalse(processes_mentioning(kept_mk))
            self.assertFalse([p for p in kept_pids if process_alive(p)])
            self.assertFalse(os.path.exists(cg))
        finally:
            if squatter.poll() is None:
                squatter.kill()
            squatter.wait()
            if os.path.isdir(orphan):
                os.rmdir(orphan)


class ContainmentAtAStop(unittest.TestCase):
    """A graceful stop (SIGTERM, Ctrl-C) removes the job cgroups that have no process left
    and then its detected root; a job still running in tmux keeps its cgroup (and the root)
    for the next start, and that start's own stop cleans up once the job is gone."""

    def test_a_stopping_server_removes_its_empty_job_cgroups(self):
        with Server(token=TOKEN) as s:
            root = cgroup_root_of(s)
            self.assertIsNotNone(root, s.read_stderr())
            # A finished job whose background process ended after the job did: its cgroup
            # outlived the job's end (it was populated then) and is empty now.
            ended, _ = s.run_to_completion("nohup sh -c 'sleep 1' >/dev/null 2>&1 & echo bye")
            ended_cg = os.path.join(root, "job-" + ended["job_id"])
            self.assertTrue(os.path.isdir(ended_cg), "the leftover keeps the cgroup while it runs")
            wait_until(lambda: "populated 0" in read_text(os.path.join(ended_cg, "cgroup.events")),
                       timeout=30, what="the leftover ended")
            # A job that runs on in tmux across the stop.
            mk = tag()
            running = s.run(f"sh -c 'sleep 1000; :' {mk} & echo armed; wait", timeout=0.3)["job_id"]
            running_cg = os.path.join(root, "job-" + running)
            wait_until(lambda: processes_mentioning(mk), timeout=30, what="the running job's process")
            self.assertEqual(s.stop(), 0, s.read_stderr())
            self.assertFalse(os.path.exists(ended_cg), "an empty job cgroup outlived the stop")
            self.assertTrue(os.path.isdir(running_cg), "a running job's cgroup was removed")
            self.assertTrue(processes_mentioning(mk), "the running job's process did not outlive the stop")
            # The next start adopts it; once it is ended and the server stops, nothing is left.
            s.start()
            self.assertEqual(cgroup_root_of(s), root)
            s.ok("POST", f"/v1/jobs/{running}/terminate", {"grace_seconds": 0})
            self.assertFalse(processes_mentioning(mk))
            self.assertEqual(s.stop(), 0, s.read_stderr())
            self.assertFalse(os.path.exists(root), os.listdir(root) if os.path.isdir(root) else "")


class ContainmentByRetention(unittest.TestCase):
    """The retention GC removes a finished job; nothing of it is left then either (its own
    exit ended its tree already: the GC finds an empty cgroup or none)."""

    def test_collected_jobs_leave_nothing(self):
        with Server(token=TOKEN, env={"SHELLCTL_RESULT_RETENTION": "1s",
                                      "SHELLCTL_GC_INTERVAL": "1s"}) as s:
            root = cgroup_root_of(s)
            self.assertIsNotNone(root, s.read_stderr())
            mk = tag()
            res, _ = s.run_to_completion(f"setsid sh -c 'sleep 1000; :' {mk} & sleep 0.2; echo bye")
            wait_until(lambda: s.request("GET", f"/v1/jobs/{res['job_id']}")[0] == 404,
                       timeout=30, what="collected")
            self.assertFalse(processes_mentioning(mk))
            self.assertFalse(os.path.exists(os.path.join(root, "job-" + res["job_id"])))


class ChosenRoots(unittest.TestCase):
    """--cgroup-root / SHELLCTL_CGROUP_ROOT, and what happens without a usable root."""

    def refusal(self, **server_kwargs):
        """What a server that must refuse to start says (it must not start)."""
        s = Server(token=TOKEN, start=False, **server_kwargs)
        try:
            with self.assertRaises(RuntimeError) as ctx:
                s.start()
            return str(ctx.exception)
        finally:
            s.close()

    def test_a_given_root_holds_the_jobs_directly(self):
        root = os.path.join(UNIFIED, "shellctl-e2e-" + uuid.uuid4().hex[:8])
        try:
            with Server(token=TOKEN, args=["--cgroup-root", root]) as s:
                self.assertEqual(cgroup_root_of(s), root)
                mk = tag()
                res = s.run(f"setsid sh -c 'sleep 1000; :' {mk} & echo armed; sleep 1000",
                            timeout=0.3)
                wait_until(lambda: processes_mentioning(mk), timeout=30, what="daemon")
                self.assertTrue(os.path.isdir(os.path.join(root, "job-" + res["job_id"])))
                status, _, _ = s.request("DELETE", f"/v1/jobs/{res['job_id']}?force=true")
                self.assertEqual(status, 200)
                self.assertFalse(processes_mentioning(mk))
                self.assertEqual(sorted(d for d in os.listdir(root) if d.startswith("job-")), [])
            with Server(token=TOKEN, env={"SHELLCTL_CGROUP_ROOT": root}) as s:
                self.assertEqual(cgroup_root_of(s), root)
        finally:
            if os.path.isdir(root):
                os.rmdir(root)

    def test_none_turns_containment_off_without_a_warning(self):
        with Server(token=TOKEN, args=["--cgroup-root", "none"]) as s:
            self.assertEqual(s.ok("GET", "/v1/info")["isolation"]["cgroup"], "none")
            self.assertNotIn("warning", s.read_stderr())
            self.assertIn("no cgroup containment", s.read_stderr())
            res, out = s.run_to_completion("echo ok")
            self.assertEqual((res["status"], out), ("exited", "ok\n"))

    def test_an_unusable_given_root_refuses_startup(self):
        not_cgroup = os.path.join("/tmp", "shellctl-notcg-" + uuid.uuid4().hex[:8])
        os.makedirs(not_cgroup)
        try:
            self.assertIn("is not a cgroup v2 directory",
                          self.refusal(args=["--cgroup-root", not_cgroup]))
        finally:
            os.rmdir(not_cgroup)

    def test_limits_without_their_controllers_refuse_startup(self):
        """This machine's cgroup2 has no memory, pids or cpu controller (they are bound to
        v1): each limit asked for names the missing controller and stops the server."""
        with open(os.path.join(UNIFIED, "cgroup.controllers")) as f:
            have = f.read().split()
        for name, value, controller in (("SHELLCTL_JOB_MEMORY_MAX", "512M", "memory"),
                                        ("SHELLCTL_JOB_PIDS_MAX", "256", "pids"),
                                        ("SHELLCTL_JOB_CPU_MAX", "50000 100000", "cpu")):
            if controller in have:
                self.fail(f"this test expects a host without the {controller} controller")
            said = self.refusal(env={name: value})
            self.assertIn(f"controller(s) {controller}", said)
            self.assertIn("shellctl: initialize:", said)

    def test_limit_syntax_is_checked(self):
        self.assertIn("SHELLCTL_JOB_PIDS_MAX: must be",
                      self.refusal(env={"SHELLCTL_JOB_PIDS_MAX": "lots"}))

    def test_a_relative_root_is_a_config_error(self):
        self.assertIn("must be an absolute path",
                      self.refusal(args=["--cgroup-root", "relative/dir"]))


class Unprivileged(unittest.TestCase):
    """A non-root server: without a delegated cgroup it falls back (said once at startup);
    inside a cgroup delegated to its user (as systemd's Delegate= does: the directory and its
    cgroup.procs chowned, the server started inside it) its jobs are contained."""

    def setUp(self):
        self.owner = ensure_test_user()
        self.assertIsNotNone(self.owner, "needs root to create the unprivileged test user")

    def test_fallback_without_a_writable_cgroup(self):
        with Server(token=TOKEN, user=self.owner) as s:
            err = s.read_stderr()
            self.assertEqual(err.count("no cgroup v2 containment"), 1, err)
            self.assertEqual(s.ok("GET", "/v1/info")["isolation"]["cgroup"], "none")
            mk = tag()
            res = s.run(f"sh -c 'sleep 1000; :' {mk} & echo armed; sleep 1000", timeout=0.3)
            wait_until(lambda: processes_mentioning(mk), timeout=30, what="child")
            s.ok("POST", f"/v1/jobs/{res['job_id']}/terminate", {"grace_seconds": 0})
            # The fallback still ends the job's process group (and, here, its PID namespace).
            wait_until(lambda: not processes_mentioning(mk), timeout=30, what="child gone")

    def test_a_delegated_cgroup_contains_the_jobs_of_a_non_root_server(self):
        delegated = os.path.join(UNIFIED, "shellctl-e2e-deleg-" + uuid.uuid4().hex[:8])
        os.makedirs(delegated)
        uid, gid = self.owner
        for name in ("", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
            os.chown(os.path.join(delegated, name), uid, gid)
        s = Server(token=TOKEN, user=self.owner, start=False)
        # The server starts inside the delegated cgroup (moved in by root, then setpriv).
        base = s.command
        s.command = lambda: ["sh", "-c", f"echo $$ > {delegated}/cgroup.procs && exec \"$@\"",
                             "sh"] + base()
        try:
            s.start()
            root = cgroup_root_of(s)
            self.assertIsNotNone(root, s.read_stderr())
            self.assertTrue(root.startswith(delegated + "/shellctl-"), root)
            job, mk = None, tag()
            res = s.run(f"setsid sh -c 'sleep 1000; :' {mk} & echo armed; sleep 1000", timeout=0.3)
            job = res["job_id"]
            wait_until(lambda: processes_mentioning(mk), timeout=30, what="daemon")
            cg = os.path.join(root, "job-" + job)
            assert_all_inside(self, [p for p, _ in processes_mentioning(mk)], cg)
            s.ok("POST", f"/v1/jobs/{job}/terminate", {"grace_seconds": 0})
            self.assertFalse(processes_mentioning(mk))
            self.assertFalse(os.path.exists(cg))
        finally:
            s.close()
            s.reap()
            # Whatever of the server's tree is left in the delegated cgroup ends with it.
            end_cgroup_tree(delegated)


if __name__ == "__main__":
    unittest.main(verbosity=2)
