"""The native test supervisor's scope service on this host
(docs/native-scopes.md "The scope service", "The scope worker"; component tier: isolation): the
real scope actors, the real `shellctl native-worker` per scope, the real runner, over real HTTP
on loopback, through `shellctl-native-harness` — the supervisor with the harness-only
`group_only` cgroup backend (real cgroup v2 groups that a root fixture creates and chowns to the
test user, as systemd's delegation would; cpu, memory and pids are unenforced here and the
capability document says so). The supervisor runs as the unprivileged test user from
`<unit>/manager`, as in production.

Covered: routes and the order of the checks; the strict create body; refs resolved beneath their
roots without symlinks; creation that never replaces a scope (S6) and generation fencing (S5);
scoped jobs relayed unchanged to the worker; usage; destruction with cgroup.kill, `populated 0`
and storage removal, a tombstone and 410 (S24); an injected clean-up failure → quarantined,
then a retried DELETE; the deadline; the scope cap; `kill -9` of the supervisor mid-job and a
restart that re-adopts the worker with its output going on (S11); a killed worker or a
tampered start time → `lost`, never respawned; escapes from a scoped job through it all.
Root is required (the fixture makes the cgroups and the test user): without it this fails."""
import hashlib
import http.client
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

from harness import BIN_DIR, for_everyone, free_port, wait_until

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
from helper_support import ensure_test_user  # noqa: E402

BUILD_DIR = os.environ.get("SHELLCTL_BUILD_DIR") or os.path.dirname(BIN_DIR)
HARNESS = for_everyone(os.path.join(BUILD_DIR, "tests", "native", "harness", "shellctl-native-harness"))
SHELLCTL = os.path.join(BIN_DIR, "shellctl")
UNIFIED = "/sys/fs/cgroup/unified" if os.path.isdir("/sys/fs/cgroup/unified/") else "/sys/fs/cgroup"
TOKEN = "supervisor-bearer-token"
MAX_SCOPES = 4

LIMITS = {"cpu_millicores": 1000, "memory_bytes": 512 << 20, "swap_bytes": 0, "pids": 256,
          "disk_bytes": 64 << 20, "input_bytes": 1 << 20, "output_bytes": 4 << 20, "max_jobs": 8,
          "job_wall_seconds": 600, "open_files": 256, "file_bytes": 16 << 20,
          "network_bytes": 0, "network_connections": 0}


def utc(seconds_from_now):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds_from_now))


def procs(cgroup_dir):
    try:
        with open(os.path.join(cgroup_dir, "cgroup.procs")) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


class Supervisor:
    """The harness as the test user, placed in <unit>/manager before it runs."""

    def __init__(self, fixture, extra_args=()):
        self.fx = fixture
        self.extra_args = list(extra_args)
        self.port = free_port()
        self.proc = None
        self.stderr_path = os.path.join(fixture.tmp, f"supervisor-{self.port}.log")

    def start(self):
        fx = self.fx
        manager_procs = os.path.join(fx.unit, "manager", "cgroup.procs")
        uid, gid = fx.ids

        def become_the_supervisor():
            with open(manager_procs, "w") as f:
                f.write(str(os.getpid()))
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)

        env = {"PATH": BIN_DIR + ":/usr/local/bin:/usr/bin:/bin",
               "SHELLCTL_NATIVE_MAX_SCOPES": str(MAX_SCOPES), "HOME": fx.tmp}
        self.stderr = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(
            [HARNESS, "--shellctl", SHELLCTL, "--cgroup-dir", fx.unit, "--native-test-supervisor",
             "--token", TOKEN, "--listen", f"127.0.0.1:{self.port}", "--state-dir", fx.state,
             "--native-base-root", fx.base, "--native-input-root", fx.inputs] + self.extra_args,
            env=env, stdout=subprocess.DEVNULL, stderr=self.stderr, preexec_fn=become_the_supervisor)
        wait_until(lambda: "serving on" in self.log() or self.proc.poll() is not None, timeout=60,
                   what="the supervisor serving")
        if self.proc.poll() is not None:
            raise AssertionError("the supervisor stopped: " + self.log())

    def log(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.stderr.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()

    def request(self, method, path, body=None, headers=None, bearer=TOKEN, raw=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        if bearer is not None:
            h["Authorization"] = "Bearer " + bearer
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        if data is not None:
            h["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        text = r.read().decode()
        conn.close()
        try:
            return r.status, json.loads(text) if text else None
        except ValueError:
            return r.status, text


class SupervisorFixture:
    """Roots, state, the test user's unit cgroup and its manager/ — made by root."""

    def __init__(self):
        self.ids = ensure_test_user()
        if self.ids is None:
            raise AssertionError("the supervisor's component tests need root and useradd")
        self.tmp = tempfile.mkdtemp(prefix="shellctl-supervisor-")
        os.chmod(self.tmp, 0o755)
        self.base = os.path.join(self.tmp, "base")
        self.inputs = os.path.join(self.tmp, "inputs")
        self.state = os.path.join(self.tmp, "state")
        os.makedirs(os.path.join(self.base, "canary", "docs"))
        with open(os.path.join(self.base, "canary", "readme"), "w") as f:
            f.write("base-canary\n")
        os.symlink("/etc", os.path.join(self.base, "leads-out"))
        os.makedirs(os.path.join(self.inputs, "data"))
        with open(os.path.join(self.inputs, "data", "in.txt"), "w") as f:
            f.write("input-canary\n")
        os.symlink("/etc/passwd", os.path.join(self.inputs, "link.txt"))
        for root, dirs, files in os.walk(self.tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        os.makedirs(self.state, mode=0o700)
        os.chown(self.state, *self.ids)
        # The unit cgroup, delegated to the test user as systemd does (the directory and
        # the files a delegate writes), with manager/ for the supervisor itself.
        self.unit = os.path.join(UNIFIED, "shellctl-test-" + uuid.uuid4().hex[:10])
        os.mkdir(self.unit)
        os.mkdir(os.path.join(self.unit, "manager"))
        for d in (self.unit, os.path.join(self.unit, "manager")):
            os.chown(d, *self.ids)
            for f in ("cgroup.procs", "cgroup.threads", "cgroup.subtree_control"):
                os.chown(os.path.join(d, f), *self.ids)

    def close(self):
        # Whatever a failed test left: every process of the unit killed, the tree removed.
        for root, dirs, _ in sorted(os.walk(self.unit, topdown=False), key=lambda t: -len(t[0])):
            try:
                with open(os.path.join(root, "cgroup.kill"), "w") as f:
                    f.write("1")
            except OSError:
                pass
        deadline = time.monotonic() + 10
        for root, dirs, _ in sorted(os.walk(self.unit, topdown=False), key=lambda t: -len(t[0])):
            while True:
                try:
                    os.rmdir(root)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
        subprocess.run(["umount", "-R", "-l", self.tmp], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


class ScopeService(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fx = SupervisorFixture()
        cls.sv = Supervisor(cls.fx)
        try:
            cls.sv.start()
            cls.digest = cls.sv.request("GET", "/v1/native-test/capabilities")[1]["capability_digest"]
        except BaseException:
            cls.sv.stop()
            cls.fx.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.sv.stop()
        cls.fx.close()

    # -- helpers ----------------------------------------------------------------------------
    def body(self, scope_id, generation=1, **over):
        b = {"scope_id": scope_id, "generation": generation, "binding_ref": "binding-1",
             "base_snapshot_ref": "canary", "input_file_refs": ["data/in.txt"],
             "capability_digest": self.digest, "deadline": utc(3600), "network_targets": [],
             "limits": dict(LIMITS)}
        b.update(over)
        return b

    def create(self, scope_id, generation=1, **over):
        status, view = self.sv.request("POST", "/v1/test-scopes", self.body(scope_id, generation, **over))
        self.assertEqual(status, 201, view)
        self.addCleanup(self.destroy_quietly, scope_id, generation)
        return view

    def destroy_quietly(self, scope_id, generation):
        self.sv.request("DELETE", f"/v1/test-scopes/{scope_id}",
                        headers={"X-Scope-Generation": str(generation)})

    def scoped(self, view, method, path, body=None, token=None, generation=None):
        headers = {"X-Scope-Generation": str(generation or view["generation"]),
                   "X-Scope-Token": token or view["transport"]["scope_token"]}
        return self.sv.request(method, view["transport"]["base_path"] + path, body, headers=headers)

    def run_job(self, view, script, **fields):
        status, res = self.scoped(view, "POST", "/jobs/run", dict({"script": script}, **fields))
        self.assertEqual(status, 200, res)
        return res

    def run_to_end(self, view, script):
        res = self.run_job(view, script, timeout_seconds=30)
        job, out = res["job_id"], res["output"]
        while not res["done"]:
            status, res = self.scoped(view, "POST", f"/jobs/{job}/wait", {"offset": res["offset"], "timeout": 10})
            self.assertEqual(status, 200, res)
            out += res["output"]
        return res, out

    def scope_cgroup(self, view):
        return os.path.join(self.fx.unit, f"{view['scope_id']}.g{view['generation']}")

    def inspect(self, scope_id, generation):
        return self.sv.request("GET", f"/v1/test-scopes/{scope_id}", headers={"X-Scope-Generation": str(generation)})

    def error_code(self, answer):
        status, body = answer
        return status, (body or {}).get("error", {}).get("code") if isinstance(body, dict) else body

    # -- routes and checks ---------------------------------------------------------------------
    def test_capabilities_pin_a_digest_of_what_this_host_enforces(self):
        status, caps = self.sv.request("GET", "/v1/native-test/capabilities")
        self.assertEqual(status, 200)
        digest = caps.pop("capability_digest")
        canonical = json.dumps(caps, sort_keys=True, separators=(",", ":"))
        self.assertEqual(digest, "sha256:" + hashlib.sha256(canonical.encode()).hexdigest())
        self.assertEqual(caps["protocol"], "dify-native-test/1")
        self.assertEqual(caps["cgroup_controllers"], [])  # group_only: nothing bounded here
        self.assertGreaterEqual(caps["landlock_abi"], 1)
        self.assertEqual(self.sv.request("GET", "/healthz", bearer=None), (200, {"status": "ok"}))

    def test_other_paths_are_not_found_and_the_bearer_comes_first(self):
        for path in ("/v1/jobs", "/v1/jobs/run", "/v1/snapshot/save", "/v1/info", "/nope"):
            self.assertEqual(self.error_code(self.sv.request("GET", path)), (404, "not_found"), path)
        # The bearer before the route, even for a path that does not exist.
        for path in ("/v1/test-scopes/none", "/nope", "/v1/jobs"):
            self.assertEqual(self.error_code(self.sv.request("GET", path, bearer="wrong")),
                             (401, "unauthorized"), path)
        self.assertEqual(self.error_code(self.sv.request("POST", "/v1/test-scopes", {}, bearer=None)),
                         (401, "unauthorized"))
        self.assertEqual(self.sv.request("PUT", "/v1/test-scopes/x")[0], 405)
        # Extensions are not served for scopes.
        for path in ("/v1/test-scopes/x/jobs/abc/stream", "/v1/test-scopes/x/v1/jobs",
                     "/v1/test-scopes/x/snapshot/save"):
            self.assertEqual(self.error_code(self.sv.request("GET", path)), (404, "not_found"), path)

    def test_check_order_scope_then_generation_then_token_then_state(self):
        v = self.create("order")
        # No such scope: 404 whatever the generation and token say.
        self.assertEqual(self.error_code(self.sv.request(
            "GET", "/v1/test-scopes/nosuch/jobs", headers={"X-Scope-Generation": "x"})), (404, "scope_not_found"))
        for gen in (None, "", "01", "+1", "0", "9007199254740992", "1.0"):
            headers = {} if gen is None else {"X-Scope-Generation": gen}
            self.assertEqual(self.error_code(self.sv.request("GET", "/v1/test-scopes/order", headers=headers)),
                             (400, "scope_generation_required"), gen)
        self.assertEqual(self.error_code(self.inspect("order", 2)), (409, "scope_generation_mismatch"))
        # A wrong generation is refused before the (also wrong) token.
        self.assertEqual(self.error_code(self.scoped(v, "GET", "/jobs", token="nst1.a.b", generation=2)),
                         (409, "scope_generation_mismatch"))
        self.assertEqual(self.error_code(self.sv.request(
            "GET", "/v1/test-scopes/order/jobs", headers={"X-Scope-Generation": "1"})),
            (401, "scope_token_required"))
        tok = v["transport"]["scope_token"]
        for bad in ("nst1.a.b", tok[:-2] + ("AA" if not tok.endswith("AA") else "BB"), "x" + tok):
            self.assertEqual(self.error_code(self.scoped(v, "GET", "/jobs", token=bad)),
                             (403, "scope_token_invalid"), bad)
        # Each inspect mints a fresh token; every one verifies.
        _, again = self.inspect("order", 1)
        self.assertNotEqual(again["transport"]["scope_token"], tok)
        self.assertEqual(self.scoped(again, "GET", "/jobs")[0], 200)
        self.assertEqual(self.scoped(v, "GET", "/jobs")[0], 200)

    def test_the_create_body_is_strict(self):
        bad_json = self.sv.request("POST", "/v1/test-scopes", raw="{not json")
        self.assertEqual(self.error_code(bad_json), (400, "invalid_request"))
        cases = {
            "unknown key": dict(self.body("strict"), extra=1),
            "missing key": {k: v for k, v in self.body("strict").items() if k != "binding_ref"},
            "null value": dict(self.body("strict"), binding_ref=None),
            "bad id": self.body("Strict_ID"),
            "generation 0": self.body("strict", 0),
            "string generation": dict(self.body("strict"), generation="1"),
            "dot-dot ref": self.body("strict", base_snapshot_ref="../etc"),
            "absolute ref": self.body("strict", base_snapshot_ref="/etc"),
            "duplicate inputs": self.body("strict", input_file_refs=["data/in.txt", "data/in.txt"]),
            "past deadline": self.body("strict", deadline=utc(-10)),
            "beyond the horizon": self.body("strict", deadline=utc(3 * 86400)),
            "bad deadline": self.body("strict", deadline="tomorrow"),
            "limits key missing": self.body("strict", limits={k: v for k, v in LIMITS.items() if k != "pids"}),
            "limits unknown key": self.body("strict", limits=dict(LIMITS, more=1)),
            "zero limit": self.body("strict", limits=dict(LIMITS, disk_bytes=0)),
            "too many jobs": self.body("strict", limits=dict(LIMITS, max_jobs=65)),
            "memory too small": self.body("strict", limits=dict(LIMITS, memory_bytes=100 << 20)),
            "network limits without targets": self.body("strict", limits=dict(LIMITS, network_bytes=1)),
        }
        for name, b in cases.items():
            self.assertEqual(self.error_code(self.sv.request("POST", "/v1/test-scopes", b)),
                             (422, "validation_error"), name)
        self.assertEqual(self.error_code(self.sv.request("POST", "/v1/test-scopes", self.body(
            "strict", capability_digest="sha256:" + "0" * 64))), (412, "capability_digest_mismatch"))
        for ref in ("missing", "leads-out", "canary/readme"):
            self.assertEqual(self.error_code(self.sv.request("POST", "/v1/test-scopes", self.body(
                "strict", base_snapshot_ref=ref))), (422, "base_snapshot_ref_invalid"), ref)
        for ref in ("link.txt", "data", "none.txt"):
            self.assertEqual(self.error_code(self.sv.request("POST", "/v1/test-scopes", self.body(
                "strict", input_file_refs=[ref]))), (422, "input_file_ref_invalid"), ref)
        self.assertEqual(self.error_code(self.sv.request("POST", "/v1/test-scopes", self.body(
            "strict", network_targets=[{"host": "example.com", "port": 443}],
            limits=dict(LIMITS, network_bytes=1, network_connections=1)))), (422, "network_target_denied"))
        # None of them left a scope, a cgroup or a directory behind.
        self.assertEqual(self.error_code(self.inspect("strict", 1)), (404, "scope_not_found"))
        self.assertFalse(os.path.exists(os.path.join(self.fx.unit, "strict.g1")))
        self.assertFalse(os.path.exists(os.path.join(self.fx.state, "native", "scopes", "strict.g1")))

    # -- lifecycle -----------------------------------------------------------------------------
    def test_a_scope_from_creation_to_tombstone(self):
        v = self.create("life")
        self.assertEqual((v["state"], v["state_reason"]), ("ready", None))
        self.assertEqual(v["transport"]["base_path"], "/v1/test-scopes/life")
        self.assertEqual(v["transport"]["expires_at"], v["deadline"])
        self.assertEqual(v["limits"], LIMITS)
        cg = self.scope_cgroup(v)
        worker_cg = os.path.join(cg, "worker")
        self.assertTrue(procs(worker_cg), "the worker lives in <scope>/worker")
        with open(os.path.join(cg, "cgroup.max.descendants")) as f:
            self.assertEqual(f.read().strip(), str(LIMITS["max_jobs"] + 1))

        # A job, relayed unchanged: the scoped world (Home from the base, inputs read-only).
        res, out = self.run_to_end(v, "cat ~/readme /inputs/data/in.txt; pwd; echo $HOME; "
                                      "cat /proc/self/cgroup; touch ~/made && echo wrote")
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0), out)
        self.assertIn("base-canary\ninput-canary\n/home/dify\n/home/dify\n", out)
        self.assertIn("wrote", out)
        self.assertTrue(res["output_path"].startswith("/run/dify-native/spool/jobs/"), res)
        self.assertEqual(self.scoped(v, "GET", f"/jobs/{res['job_id']}")[1]["status"], "exited")
        status, listed = self.scoped(v, "GET", "/jobs")
        self.assertEqual([j["job_id"] for j in listed["jobs"]], [res["job_id"]])
        # A scoped job's HOME is /home/dify whatever the request's env says.
        res = self.run_job(v, "echo home=$HOME", env={"HOME": "/tmp/elsewhere"}, timeout_seconds=10)
        self.assertIn("home=/home/dify", res["output"])
        # The base itself is unchanged.
        self.assertFalse(os.path.exists(os.path.join(self.fx.base, "canary", "made")))
        # Usage counts the admitted job and its script.
        _, now = self.inspect("life", 1)
        self.assertEqual(now["usage"]["jobs_admitted"], 2)
        self.assertGreater(now["usage"]["input_bytes"], 0)

        # S6: a live scope is never replaced, whatever the generation.
        for gen in (1, 2):
            self.assertEqual(self.error_code(self.sv.request("POST", "/v1/test-scopes", self.body("life", gen))),
                             (409, "scope_exists"))

        # A job still running when the scope goes: its processes die with it.
        running = self.run_job(v, "echo up; sleep 1000", timeout_seconds=2)
        self.assertIn("up", running["output"])
        victims = procs(worker_cg) + [p for d in os.listdir(cg) if d.startswith("job-")
                                      for p in procs(os.path.join(cg, d))]
        self.assertGreater(len(victims), 1)
        status, gone = self.sv.request("DELETE", "/v1/test-scopes/life", headers={"X-Scope-Generation": "1"})
        self.assertEqual((status, gone), (200, {"scope_id": "life", "generation": 1, "destroyed": True,
                                                "reason": "deleted"}))
        self.assertFalse(os.path.exists(cg), "the scope's cgroups are removed")
        self.assertFalse(os.path.exists(os.path.join(self.fx.state, "native", "scopes", "life.g1")))
        for pid in victims:
            self.assertFalse(os.path.exists(f"/proc/{pid}/cgroup") and
                             "life.g1" in open(f"/proc/{pid}/cgroup").read(), pid)
        # The tombstone: 410 for its generation, 404 for another; a job route too.
        self.assertEqual(self.error_code(self.inspect("life", 1)), (410, "scope_destroyed"))
        self.assertEqual(self.error_code(self.inspect("life", 2)), (404, "scope_not_found"))
        self.assertEqual(self.error_code(self.scoped(v, "GET", "/jobs")), (410, "scope_destroyed"))
        # S5: a destroyed generation never comes back; a higher one may.
        self.assertEqual(self.error_code(self.sv.request("POST", "/v1/test-scopes", self.body("life", 1))),
                         (409, "scope_generation_stale"))
        v2 = self.create("life", 2)
        self.assertEqual(v2["state"], "ready")
        # The old generation's token does not open the new one.
        self.assertEqual(self.error_code(self.scoped(v, "GET", "/jobs", generation=2)),
                         (403, "scope_token_invalid"))

    def test_a_failed_cleanup_quarantines_and_delete_retries(self):
        v = self.create("stuck")
        host_dir = os.path.join(self.fx.state, "native", "scopes", "stuck.g1")
        busy = os.path.join(host_dir, "busy")
        os.mkdir(busy)
        subprocess.run(["mount", "-t", "tmpfs", "none", busy], check=True)
        try:
            status, body = self.sv.request("DELETE", "/v1/test-scopes/stuck", headers={"X-Scope-Generation": "1"})
            self.assertEqual((status, body["error"]["code"]), (500, "scope_cleanup_failed"), body)
            _, q = self.inspect("stuck", 1)
            self.assertEqual((q["state"], q["transport"]), ("quarantined", None))
            self.assertEqual(self.error_code(self.scoped(v, "GET", "/jobs")), (409, "scope_quarantined"))
            # Its processes are gone already (the cgroup end came first).
            self.assertFalse(os.path.exists(self.scope_cgroup(v)))
        finally:
            subprocess.run(["umount", busy], check=True)
        status, body = self.sv.request("DELETE", "/v1/test-scopes/stuck", headers={"X-Scope-Generation": "1"})
        self.assertEqual(status, 200, body)
        self.assertFalse(os.path.exists(host_dir))
        self.assertEqual(self.error_code(self.inspect("stuck", 1)), (410, "scope_destroyed"))

    def test_the_deadline_destroys_the_scope(self):
        self.create("brief", deadline=utc(3))
        wait_until(lambda: self.inspect("brief", 1)[0] == 410, timeout=30, what="the deadline's destruction")
        status, body = self.inspect("brief", 1)
        self.assertIn("deadline", body["error"]["message"])
        self.assertFalse(os.path.exists(os.path.join(self.fx.unit, "brief.g1")))

    def test_the_scope_cap_holds(self):
        made = [self.create(f"cap{i}") for i in range(MAX_SCOPES)]
        self.assertEqual(len(made), MAX_SCOPES)
        self.assertEqual(self.error_code(self.sv.request("POST", "/v1/test-scopes", self.body("cap-over"))),
                         (503, "scope_capacity_unavailable"))
        self.destroy_quietly("cap0", 1)
        self.create("cap-over")

    def test_the_qualification_suite_refuses_this_host(self):
        """S33: tier Q fails (exit 1, never 77) where its prerequisites are missing, naming each:
        with nothing set, and against this very supervisor (which enforces no controller)."""
        suite = os.path.join(os.path.dirname(__file__), "..", "..", "native", "qualify",
                             "integration_native_test.py")
        base_env = {"PATH": os.environ.get("PATH", ""), "SHELLCTL_BIN": SHELLCTL, "HOME": self.fx.tmp}
        r = subprocess.run([sys.executable, suite], env=base_env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("DIFY_AGENT_LOCAL_NATIVE_TEST_ENDPOINT is not set", r.stdout)
        self.assertIn("--native-check: apparmor", r.stdout)
        env = dict(base_env, DIFY_AGENT_LOCAL_NATIVE_TEST_ENDPOINT=f"http://127.0.0.1:{self.sv.port}",
                   DIFY_AGENT_LOCAL_NATIVE_TEST_AUTH_TOKEN=TOKEN)
        r = subprocess.run([sys.executable, suite], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("enforces no cpu memory pids", r.stdout)
        self.assertIn("without its AppArmor profile", r.stdout)
        self.assertNotIn("ENDPOINT is not set", r.stdout)

    def test_escapes_from_a_scoped_job_fail(self):
        v = self.create("escape")
        state = self.fx.state
        script = "; ".join([
            f"ls {state} >/dev/null 2>&1 && echo SAW-STATE",
            f"cat {state}/native/catalog.db >/dev/null 2>&1 && echo READ-CATALOG",
            "ls /run/dify-native >/dev/null 2>&1 && echo SAW-SPOOL",
            "mount -t tmpfs none /tmp 2>/dev/null && echo MOUNTED",
            "unshare -m true 2>/dev/null && echo UNSHARED",
            "echo x > /usr/escape 2>/dev/null && echo WROTE-IMAGE",
            "echo x > /inputs/data/in.txt 2>/dev/null && echo WROTE-INPUT",
            "sh -c 'ulimit -n 100000' 2>/dev/null && echo RAISED-NOFILE",
            "kill -9 1 2>/dev/null && echo KILLED-INIT",
            "ls /proc | grep -qx 1 || echo NO-INIT-VISIBLE",
            "echo done"])
        res, out = self.run_to_end(v, script)
        self.assertIn("done", out)
        for word in ("SAW-STATE", "READ-CATALOG", "SAW-SPOOL", "MOUNTED", "UNSHARED", "WROTE-IMAGE",
                     "WROTE-INPUT", "RAISED-NOFILE", "KILLED-INIT"):
            self.assertNotIn(word, out)
        # ptrace of the worker from the job: its pid namespace does not even show it.
        res, out = self.run_to_end(v, "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; "
                                      "echo; done | grep -c '[n]ative-worker' || true")
        self.assertEqual(out.strip().splitlines()[-1], "0", out)


class Reattach(unittest.TestCase):
    """S11: a supervisor killed with -9 and restarted re-adopts its scopes' workers by boot id,
    pidfd, start time, cgroup and an authenticated identity call; otherwise the scope is lost,
    never respawned, and still destroyable."""

    def setUp(self):
        self.fx = SupervisorFixture()
        self.sv = Supervisor(self.fx)
        self.sv.start()
        self.digest = self.sv.request("GET", "/v1/native-test/capabilities")[1]["capability_digest"]

    def tearDown(self):
        self.sv.stop()
        self.fx.close()

    def create(self, scope_id):
        body = {"scope_id": scope_id, "generation": 1, "binding_ref": "b", "base_snapshot_ref": "canary",
                "input_file_refs": [], "capability_digest": self.digest, "deadline": utc(3600),
                "network_targets": [], "limits": dict(LIMITS)}
        status, v = self.sv.request("POST", "/v1/test-scopes", body)
        self.assertEqual(status, 201, v)
        return v

    def restart(self):
        self.sv.kill9()
        self.sv = Supervisor(self.fx)
        self.sv.start()

    def scoped(self, view, method, path, body=None):
        return self.sv.request(method, view["transport"]["base_path"] + path, body,
                               headers={"X-Scope-Generation": "1", "X-Scope-Token": view["transport"]["scope_token"]})

    def worker_cgroup(self, scope_id):
        return os.path.join(self.fx.unit, f"{scope_id}.g1", "worker")

    def test_a_restart_mid_job_reattaches_and_the_output_goes_on(self):
        v = self.create("keep")
        status, res = self.scoped(v, "POST", "/jobs/run",
                                  {"script": "i=0; while [ $i -lt 40 ]; do echo tick-$i; i=$((i+1)); sleep 0.1; done",
                                   "timeout_seconds": 0.5})
        self.assertEqual(status, 200, res)
        before = procs(self.worker_cgroup("keep"))
        self.restart()
        self.assertIn("1 retained scope(s)", self.sv.log())
        status, again = self.sv.request("GET", "/v1/test-scopes/keep", headers={"X-Scope-Generation": "1"})
        self.assertEqual((status, again["state"]), (200, "ready"), again)
        # The token minted before the restart still verifies: same worker identity, same T.
        out, offset, done = res["output"], res["offset"], res["done"]
        while not done:
            status, w = self.scoped(v, "POST", f"/jobs/{res['job_id']}/wait", {"offset": offset, "timeout": 10})
            self.assertEqual(status, 200, w)
            out, offset, done = out + w["output"], w["offset"], w["done"]
        self.assertIn("tick-39", out)
        self.assertEqual(procs(self.worker_cgroup("keep"))[:1], before[:1], "the same worker, not a new one")

    def test_a_killed_worker_makes_the_scope_lost_and_it_is_never_respawned(self):
        v = self.create("dies")
        with open(os.path.join(self.worker_cgroup("dies"), "cgroup.kill"), "w") as f:
            f.write("1")
        wait_until(lambda: not procs(self.worker_cgroup("dies")), timeout=10, what="the worker dead")
        # A job request meets the dead worker first: 502, and the scope checks its worker.
        status, body = self.scoped(v, "GET", "/jobs")
        self.assertEqual((status, body["error"]["code"]), (502, "scope_worker_unreachable"), body)
        status, lost = self.sv.request("GET", "/v1/test-scopes/dies", headers={"X-Scope-Generation": "1"})
        self.assertEqual((status, lost["state"], lost["transport"]), (200, "lost", None), lost)
        self.assertIn("exited", lost["state_reason"])
        self.assertEqual(self.scoped(v, "GET", "/jobs")[1]["error"]["code"], "scope_worker_lost")
        self.restart()
        _, still = self.sv.request("GET", "/v1/test-scopes/dies", headers={"X-Scope-Generation": "1"})
        self.assertEqual(still["state"], "lost")
        self.assertEqual(procs(self.worker_cgroup("dies")), [], "never respawned")
        self.assertEqual(self.sv.request("DELETE", "/v1/test-scopes/dies", headers={"X-Scope-Generation": "1"})[0], 200)

    def test_a_tampered_start_time_is_not_adopted(self):
        v = self.create("tamper")
        worker_pids = procs(self.worker_cgroup("tamper"))
        self.sv.kill9()
        with sqlite3.connect(os.path.join(self.fx.state, "native", "catalog.db")) as db:
            db.execute("UPDATE native_scopes SET worker_starttime = worker_starttime + 1 WHERE scope_id='tamper'")
        self.sv = Supervisor(self.fx)
        self.sv.start()
        status, lost = self.sv.request("GET", "/v1/test-scopes/tamper", headers={"X-Scope-Generation": "1"})
        self.assertEqual((status, lost["state"]), (200, "lost"), lost)
        self.assertIn("start time", lost["state_reason"])
        # The tokens minted for the recorded identity no longer verify (S11: a token dies
        # with the identity it names); a lost scope hands out none.
        self.assertEqual(self.scoped(v, "GET", "/jobs")[1]["error"]["code"], "scope_token_invalid")
        self.assertIsNone(lost["transport"])
        # Not adopted, and not respawned either: only the old worker's processes are there,
        # and the destruction (by cgroup path) still ends them.
        self.assertTrue(set(procs(self.worker_cgroup("tamper"))) <= set(worker_pids))
        self.assertEqual(self.sv.request("DELETE", "/v1/test-scopes/tamper", headers={"X-Scope-Generation": "1"})[0], 200)
        for pid in worker_pids:
            wait_until(lambda: not os.path.exists(f"/proc/{pid}/cgroup") or "tamper.g1" not in open(f"/proc/{pid}/cgroup").read(),
                       timeout=10, what="the old worker gone")


if __name__ == "__main__":
    unittest.main(verbosity=2)
