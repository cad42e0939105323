"""The /v1/jobs API against the contract: the client contract's checklist
(docs/compatibility.md "The client contract"), exact response shapes, exit codes, list, long-poll
semantics and request validation (docs/api.md "Conventions" to "Errors"; D3-D5, D11).

Real `shellctl serve`, real tmux, real SQLite, loopback HTTP. No speed assertions; only
generous upper bounds where the contract promises a return.
"""
import base64
import hashlib
import json
import os
import threading
import time
import unittest

from jobs_common import (JobsTestCase, Server, PY3, MAX_LIMIT, RESULT_KEYS, SharedServerTestCase, ID_RE,
                         TIME_RE)

TOKEN = "jobs-e2e-token"


class ChecklistTest(JobsTestCase):
    """The client contract's checklist (docs/compatibility.md "The client contract"): its
    fourteen behaviours, numbered as in the test names (c6_01 to c6_13; 14 is AuthTest), one
    server without a token."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(keep_dirs=os.environ.get("JOBS_E2E_KEEP") == "1")

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    # 1 --------------------------------------------------------------------------------
    def test_c6_01_error_envelopes_are_json(self):
        s = self.server
        for method, path, body in [("GET", "/v1/jobs/0123456789abcdef", None),
                                   ("POST", "/v1/jobs/0123456789abcdef/wait", {}),
                                   ("POST", "/v1/jobs/0123456789abcdef/input", {"text": "x"}),
                                   ("GET", "/v1/jobs/0123456789abcdef/log/tail", None),
                                   ("POST", "/v1/jobs/0123456789abcdef/terminate", {}),
                                   ("DELETE", "/v1/jobs/0123456789abcdef", None),
                                   ("GET", "/v1/jobs/nonexistent-id-xyz", None)]:
            self.assert_error(s, method, path, body, 404, "job_not_found", "Unknown job id")
        # D11: unknown route and wrong method are JSON too
        self.assert_error(s, "GET", "/v1/nope", None, 404, "not_found")
        self.assert_error(s, "GET", "/", None, 404, "not_found")
        self.assert_error(s, "PUT", "/v1/jobs/0123456789abcdef", {}, 405, "method_not_allowed")
        self.assert_error(s, "POST", "/v1/jobs", {}, 405, "method_not_allowed")
        self.assert_error(s, "DELETE", "/healthz", None, 405, "method_not_allowed")
        # GET /v1/jobs/run is the status route with job_id "run"
        self.assert_error(s, "GET", "/v1/jobs/run", None, 404, "job_not_found")

    # 2 --------------------------------------------------------------------------------
    def test_c6_02_exact_field_sets(self):
        s = self.server
        st, hdrs, health = s.request("GET", "/healthz")
        self.assertEqual((st, health), (200, {"status": "ok"}))
        self.assertIn("application/json", hdrs["content-type"])
        r = self.check_result(s.run("echo shape", timeout=30), s)
        jid = r["job_id"]
        last, out = self.wait_done(s, jid)
        self.assertEqual(out, "shape\n")
        self.assertEqual((last["status"], last["exit_code"]), ("exited", 0))
        self.check_result(s.wait(jid, 0, timeout=0), s)
        st, _, tail = s.request("GET", f"/v1/jobs/{jid}/log/tail")
        self.assertEqual(st, 200)
        self.check_result(tail, s)
        self.assertEqual((tail["output"], tail["offset"], tail["truncated"]), ("shape\n", 6, False))
        v = self.status(s, jid)
        self.assertEqual(v["offset"], 6)
        self.assertRegex(v["started_at"], TIME_RE)
        lst = s.ok("GET", "/v1/jobs")
        self.assertEqual(set(lst), {"jobs"})
        infos = [self.check_info(i) for i in lst["jobs"] if i["job_id"] == jid]
        self.assertEqual(len(infos), 1)
        self.assertEqual(set(infos[0]), {"job_id", "status", "created_at", "started_at",
                                         "ended_at"})
        t = self.check_status_view(s.ok("POST", f"/v1/jobs/{jid}/terminate",
                                        {"grace_seconds": 1}))
        self.assertEqual((t["status"], t["exit_code"]), ("exited", 0))
        d = s.ok("DELETE", f"/v1/jobs/{jid}")
        self.assertEqual(d, {"job_id": jid, "deleted": True})

    # 3 --------------------------------------------------------------------------------
    def test_c6_03_long_poll_returns_within_timeout(self):
        s = self.server
        r = s.run("echo begin; sleep 120", timeout=30)
        jid = r["job_id"]
        try:
            _, off, _ = self.wait_for_output(s, jid, "begin\n")
            t0 = time.monotonic()
            w = self.check_result(s.wait(jid, off, timeout=2))
            self.assertLess(time.monotonic() - t0, 2 + 5)
            self.assertEqual((w["output"], w["offset"], w["done"], w["truncated"]),
                             ("", off, False, False))
            t0 = time.monotonic()
            w = self.check_result(s.wait(jid, off, timeout=0))
            self.assertLess(time.monotonic() - t0, 5)
            self.assertEqual((w["output"], w["offset"], w["done"]), ("", off, False))
        finally:
            self.force_delete(s, jid)

    # 4 --------------------------------------------------------------------------------
    def test_c6_04_truncated_false_once_everything_handed_out(self):
        s = self.server
        res, out = s.run_to_completion("seq 1 3000", output_limit=1000)
        self.assertEqual(out, "".join(f"{i}\n" for i in range(1, 3001)))
        self.assertTrue(res["done"])
        self.assertFalse(res["truncated"])
        # asking again at the end: done, empty, not truncated
        w = self.check_result(s.wait(res["job_id"], res["offset"], timeout=5))
        self.assertEqual((w["done"], w["output"], w["truncated"], w["offset"]),
                         (True, "", False, res["offset"]))

    # 5 --------------------------------------------------------------------------------
    def test_c6_05_wait_on_finished_job_answers_at_once(self):
        s = self.server
        res, _ = s.run_to_completion("echo fin")
        jid = res["job_id"]
        t0 = time.monotonic()
        w = self.check_result(s.wait(jid, 0, timeout=300))
        self.assertLess(time.monotonic() - t0, 30)
        self.assertEqual((w["done"], w["output"], w["status"]), (True, "fin\n", "exited"))
        self.assertEqual(self.status(s, jid)["status"], "exited")

    # 6 --------------------------------------------------------------------------------
    def test_c6_06_exit_codes_pass_through(self):
        for code in (0, 1, 17, 66, 255):
            res, _ = self.server.run_to_completion(f"exit {code}")
            self.assertEqual((res["status"], res["exit_code"]), ("exited", code))

    # 7 --------------------------------------------------------------------------------
    def test_c6_07_pty_keeps_sentinels_and_base64_4096_cols(self):
        data = bytes((i * 37 + 11) % 256 for i in range(6000))
        b64 = base64.b64encode(data).decode()
        s = self.server
        path = os.path.join(s.home, "blob.bin")
        with open(path, "wb") as f:
            f.write(data)
        script = ("set -eu\npath='%s'\nif [ ! -f \"$path\" ]; then exit 66; fi\n"
                  "printf '%%s' '<<<DIFY_SHELL_FILE_BEGIN>>>'\n"
                  "base64 < \"$path\" | tr -d \"\\n\"\n"
                  "printf '%%s' '<<<DIFY_SHELL_FILE_END>>>'\n") % path
        res, out = s.run_to_completion(script, terminal={"cols": 4096, "rows": 200},
                                       output_limit=16384)
        self.assertEqual(res["exit_code"], 0)
        begin = out.index("<<<DIFY_SHELL_FILE_BEGIN>>>") + len("<<<DIFY_SHELL_FILE_BEGIN>>>")
        end = out.index("<<<DIFY_SHELL_FILE_END>>>")
        self.assertEqual("".join(out[begin:end].split()), b64)
        self.assertEqual(out[begin:end], b64)
        res, _ = s.run_to_completion(script.replace("blob.bin", "missing.bin"))
        self.assertEqual(res["exit_code"], 66)

    # 8 --------------------------------------------------------------------------------
    def test_c6_08_env_overlay_cwd_and_many_mib_script(self):
        s = self.server
        home2 = os.path.join(s.home, "agenthome")
        work = os.path.join(s.home, "ws")
        os.makedirs(work)
        res, out = s.run_to_completion(
            'echo "H=$HOME P=${PATH:+set} X=$XTRA"; pwd', cwd=work,
            env={"HOME": home2, "XTRA": "it's \"quoted\" ü"})
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0), (res, out))
        self.assertEqual(out, f"H={home2} P=set X=it's \"quoted\" ü\n{work}\n")
        # client-style upload: ~8 MiB of base64 inside the script text
        data = os.urandom(6 * 1024 * 1024)
        b64 = base64.b64encode(data).decode()
        target = os.path.join(work, "up", "file.bin")
        script = ("set -eu\nmkdir -p \"$(dirname -- '%s')\"\n"
                  "printf %%s '%s' | base64 -d > '%s'\n") % (target, b64, target)
        res, out = s.run_to_completion(script, timeout=300, deadline=600)
        self.assertEqual(res["exit_code"], 0, out[-256:])
        with open(target, "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(),
                             hashlib.sha256(data).hexdigest())

    # 9 --------------------------------------------------------------------------------
    def test_c6_09_session_id_terminal_and_unknown_keys_accepted(self):
        res = self.server.run("echo sess", session_id="abc_DEF-1",
                              terminal={"cols": 80, "rows": 24}, whatever={"x": [1]},
                              idle_flush_seconds=0.5, output_limit=16384)
        last, out = self.wait_done(self.server, res["job_id"])
        self.assertEqual((out, last["status"], last["exit_code"]), ("sess\n", "exited", 0),
                         last)

    # 10 -------------------------------------------------------------------------------
    def test_c6_10_output_limit_above_max_is_clamped(self):
        s = self.server
        res = s.run("head -c 1200000 /dev/zero | tr '\\0' a", mode="stdio",
                    output_limit=1048576, timeout=60)
        jid = res["job_id"]
        self.check_result(res)
        self.assertLessEqual(len(res["output"].encode()), MAX_LIMIT)
        total = res["output"]
        r = res
        while not r["done"] or r["truncated"]:
            r = self.check_result(s.wait(jid, r["offset"], timeout=30, output_limit=1048576))
            self.assertLessEqual(len(r["output"].encode()), MAX_LIMIT)
            total += r["output"]
        self.assertEqual(total, "a" * 1200000)
        st, _, tail = s.request("GET", f"/v1/jobs/{jid}/log/tail?output_limit=1048576")
        self.assertEqual(st, 200)
        self.assertEqual(len(tail["output"]), MAX_LIMIT)
        self.assertEqual(tail["offset"], 1200000)
        self.assertFalse(tail["truncated"])

    # 11 -------------------------------------------------------------------------------
    def test_c6_11_forced_delete_of_running_job(self):
        s = self.server
        r = s.run("echo up; sleep 300", timeout=30)
        jid = r["job_id"]
        self.wait_for_output(s, jid, "up\n")
        t0 = time.monotonic()
        d = s.ok("DELETE", f"/v1/jobs/{jid}?force=true&grace_seconds=5", timeout=60)
        self.assertLess(time.monotonic() - t0, 5 + 10)
        self.assertEqual(d, {"job_id": jid, "deleted": True})
        self.assert_error(s, "GET", f"/v1/jobs/{jid}", None, 404, "job_not_found")
        self.assertFalse(os.path.exists(os.path.join(s.state_dir, "jobs", jid)))
        self.assertNotEqual(s.tmux("has-session", "-t", f"shellctl-{jid}").returncode, 0)
        self.assert_error(s, "DELETE", "/v1/jobs/fedcba9876543210?force=true", None, 404,
                          "job_not_found")

    # 12 -------------------------------------------------------------------------------
    def test_c6_12_terminate_returns_status_view_with_offset(self):
        s = self.server
        r = s.run("echo before-term; sleep 300", timeout=30)
        jid = r["job_id"]
        _, off, _ = self.wait_for_output(s, jid, "before-term\n")
        t0 = time.monotonic()
        v = self.check_status_view(s.ok("POST", f"/v1/jobs/{jid}/terminate",
                                        {"grace_seconds": 5.0}, timeout=60))
        self.assertLess(time.monotonic() - t0, 5 + 10)
        self.assertEqual((v["status"], v["done"], v["exit_code"]), ("terminated", True, None))
        size = os.path.getsize(os.path.join(s.state_dir, "jobs", jid, "output.log"))
        self.assertEqual(v["offset"], size)
        self.assertGreaterEqual(v["offset"], off)
        s.ok("DELETE", f"/v1/jobs/{jid}")

    # 13 -------------------------------------------------------------------------------
    def test_c6_13_prepare_is_not_built(self):
        self.assert_error(self.server, "PUT", "/v1/prepare",
                          {"session_id": "s", "credentials": [{"provider": "p", "name": "n",
                                                               "value": "v"}]},
                          404, "not_found")

    # 14 is AuthTest below.


class AuthTest(JobsTestCase):
    """The client contract's last item, bearer auth (docs/api.md "Conventions")."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(token=TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def test_c6_14_bearer_token_required_exactly(self):
        s = self.server
        st, _, body = s.request("GET", "/healthz", auth=False)
        self.assertEqual((st, body), (200, {"status": "ok"}))
        res, _ = s.run_to_completion("echo authed")
        jid = res["job_id"]
        routes = [("POST", "/v1/jobs/run", {"script": "echo no"}),
                  ("POST", f"/v1/jobs/{jid}/wait", {}),
                  ("POST", f"/v1/jobs/{jid}/input", {"text": ""}),
                  ("GET", f"/v1/jobs/{jid}/log/tail", None),
                  ("GET", f"/v1/jobs/{jid}", None),
                  ("GET", "/v1/jobs", None),
                  ("POST", f"/v1/jobs/{jid}/terminate", {}),
                  ("DELETE", f"/v1/jobs/{jid}?force=true", None)]
        # (trailing whitespace of a header value is optional whitespace in HTTP/1.1 and is
        # not part of the value, as in Go's textproto, so it is not tested as "wrong")
        bad_headers = [None, "Bearer", "Bearer ", "bearer " + TOKEN, "BEARER " + TOKEN,
                       "Bearer  " + TOKEN, "Bearer " + TOKEN + "x", "Bearer " + TOKEN + " x",
                       "Bearer\t" + TOKEN,
                       "Basic " + TOKEN, TOKEN, "Bearer " + TOKEN[:-1]]
        for method, path, body in routes:
            for h in bad_headers:
                hdrs = {} if h is None else {"Authorization": h}
                self.assert_error(s, method, path, body, 401, "unauthorized",
                                  "Missing or invalid bearer token", auth=False, headers=hdrs)
        # nothing above ran or deleted anything
        self.assertEqual(self.status(s, jid)["status"], "exited")
        self.assertEqual([j["job_id"] for j in s.ok("GET", "/v1/jobs")["jobs"]], [jid])
        # exact header works
        st, _, v = s.request("GET", f"/v1/jobs/{jid}", auth=False,
                             headers={"Authorization": "Bearer " + TOKEN})
        self.assertEqual(st, 200)
        self.check_status_view(v)


class ExitCodeTest(SharedServerTestCase):
    """Exit codes, set -eu and shebang scripts through run_to_completion (D3)."""

    def run_code(self, script, **kw):
        res, out = self.server.run_to_completion(script, **kw)
        self.check_result(res)
        self.assertEqual(res["status"], "exited", res)
        return res["exit_code"], out

    def test_exit_0(self):
        self.assertEqual(self.run_code("echo ok"), (0, "ok\n"))

    def test_exit_17(self):
        self.assertEqual(self.run_code("echo seventeen; exit 17"), (17, "seventeen\n"))

    def test_exit_66(self):
        self.assertEqual(self.run_code("exit 66")[0], 66)

    def test_signal_death_is_minus_one(self):
        code, out = self.run_code("echo dying; kill -9 $$; echo never")
        self.assertEqual(code, -1)
        self.assertEqual(out, "dying\n")

    def test_signal_death_stdio(self):
        code, out = self.run_code("echo dying; kill -9 $$", mode="stdio")
        self.assertEqual((code, out), (-1, "dying\n"))

    def test_set_eu_failing_command(self):
        code, out = self.run_code("set -eu\necho one\nfalse\necho never\n")
        self.assertEqual((code, out), (1, "one\n"))

    def test_set_eu_unset_variable(self):
        code, out = self.run_code("set -eu\necho one\necho \"$SURELY_UNSET_VAR_42\"\n"
                                  "echo never\n")
        self.assertNotEqual(code, 0)
        self.assertTrue(out.startswith("one\n"), out)
        self.assertNotIn("never", out)

    def test_sh_shebang(self):
        code, out = self.run_code("#!/bin/sh\necho \"shebang:$#\"\nexit 3\n")
        self.assertEqual((code, out), (3, "shebang:0\n"))

    def test_sh_shebang_stdio(self):
        code, out = self.run_code("#!/bin/sh\necho stdio-shebang\n", mode="stdio")
        self.assertEqual((code, out), (0, "stdio-shebang\n"))

    @unittest.skipUnless(PY3, "no /usr/bin/python3")
    def test_python_shebang(self):
        code, out = self.run_code(f"#!{PY3}\nimport sys\nprint('py', 6 * 7)\nsys.exit(5)\n")
        self.assertEqual((code, out), (5, "py 42\n"))


class ListTest(SharedServerTestCase):
    """GET /v1/jobs: status filter, limit clamping, order, JobInfo keys (docs/api.md "Jobs", D4)."""

    def list(self, query=""):
        data = self.server.ok("GET", "/v1/jobs" + query)
        self.assertEqual(set(data), {"jobs"})
        self.assertIsInstance(data["jobs"], list, data)
        return [self.check_info(i) for i in data["jobs"]]

    def test_a_empty_list_is_array(self):
        self.assertEqual(self.server.ok("GET", "/v1/jobs"), {"jobs": []})
        self.assertEqual(self.server.ok("GET", "/v1/jobs?status=running"), {"jobs": []})

    def test_b_filter_order_and_limits(self):
        s = self.server
        first, _ = s.run_to_completion("echo first")
        time.sleep(1.2)  # created_at has second resolution
        running = s.run("echo run; sleep 300", timeout=30)["job_id"]
        try:
            self.wait_for_output(s, running, "run\n")
            time.sleep(1.2)
            last, _ = s.run_to_completion("exit 3")
            jobs = self.list()
            ids = [j["job_id"] for j in jobs]
            self.assertEqual(ids, [last["job_id"], running, first["job_id"]])
            run_info = jobs[1]
            self.assertEqual(run_info["status"], "running")
            self.assertNotIn("ended_at", run_info, "unset ended_at must be omitted")
            self.assertIn("started_at", run_info)
            self.assertEqual([j["job_id"] for j in self.list("?status=running")], [running])
            self.assertEqual([j["job_id"] for j in self.list("?status=exited")],
                             [last["job_id"], first["job_id"]])
            self.assertEqual(self.list("?status=bogus"), [])
            self.assertEqual(self.list("?status=EXITED"), [])
            self.assertEqual([j["job_id"] for j in self.list("?limit=1")], [last["job_id"]])
            self.assertEqual(len(self.list("?status=exited&limit=1")), 1)
            s.ok("POST", f"/v1/jobs/{running}/terminate", {"grace_seconds": 5}, timeout=60)
            # terminated shows up under its materialized status, with ended_at
            term = self.list("?status=terminated")
            self.assertEqual([j["job_id"] for j in term], [running])
            self.assertIn("ended_at", term[0])
            self.assertEqual(self.list("?status=running"), [])
        finally:
            self.force_delete(s, running)

    def test_c_limit_clamping(self):
        s = self.server
        # The oldest job of the list is the only running one: a filtered list must walk
        # every window of jobs (the registry asks O(limit) of them at a time) to find it.
        oldest_running = s.run("sleep 300", timeout=0.1)["job_id"]
        try:
            self.limit_clamping(oldest_running)
        finally:
            self.force_delete(s, oldest_running)

    def limit_clamping(self, oldest_running):
        s = self.server
        before = len(self.list("?limit=200"))
        n = 205 - before
        errors = []

        def worker(k):
            try:
                for i in range(k):
                    s.run("true", timeout=30)
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        threads = [threading.Thread(target=worker, args=(n // 5 + (1 if i < n % 5 else 0),))
                   for i in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for q, want in [("", 50), ("?limit=0", 50), ("?limit=-5", 50), ("?limit=abc", 50),
                        ("?limit=", 50), ("?limit=1.5", 50), ("?limit=7", 7),
                        ("?limit=200", 200), ("?limit=201", 200), ("?limit=100000", 200),
                        ("?limit=99999999999999999999", 50)]:  # unparsable, as Go Atoi
            jobs = self.list(q)
            self.assertEqual(len(jobs), want, q)
            created = [j["created_at"] for j in jobs]
            self.assertEqual(created, sorted(created, reverse=True), q)
            self.assertEqual(len({j["job_id"] for j in jobs}), want)
        self.assertEqual([j["job_id"] for j in self.list("?status=running&limit=5")],
                         [oldest_running])
        newest = [j["job_id"] for j in self.list("?limit=200")]
        self.assertEqual([j["job_id"] for j in self.list("?limit=7")], newest[:7])
        self.assertEqual([j["job_id"] for j in self.list("?status=exited&limit=30")],
                         newest[:30])  # every job but the running one has exited


class WaitTest(SharedServerTestCase):
    """Long-poll semantics of wait/run (docs/api.md "Long-polls", the client contract's c6_03 to
    c6_05, D5)."""

    def test_timeout_zero_returns_at_once(self):
        s = self.server
        jid = s.run("echo zero; sleep 300", timeout=30)["job_id"]
        try:
            text, off, _ = self.wait_for_output(s, jid, "zero\n")
            t0 = time.monotonic()
            w = self.check_result(s.wait(jid, 0, timeout=0))
            self.assertLess(time.monotonic() - t0, 5)
            self.assertEqual((w["output"], w["offset"], w["done"]), ("zero\n", 5, False))
            w = self.check_result(s.ok("POST", f"/v1/jobs/{jid}/wait", {}))  # timeout absent
            self.assertEqual((w["output"], w["offset"]), ("zero\n", 5))
            t0 = time.monotonic()
            w = self.check_result(s.wait(jid, 5, timeout=-3))
            self.assertLess(time.monotonic() - t0, 5)
            self.assertEqual((w["output"], w["offset"], w["truncated"]), ("", 5, False))
        finally:
            self.force_delete(s, jid)

    def test_timeout_without_output_echoes_offset(self):
        s = self.server
        jid = s.run("printf 'abc\\n'; sleep 300", timeout=30)["job_id"]
        try:
            self.wait_for_output(s, jid, "abc\n")
            for _ in range(2):
                t0 = time.monotonic()
                w = self.check_result(s.wait(jid, 4, timeout=1.5))
                self.assertLess(time.monotonic() - t0, 1.5 + 5)
                self.assertEqual((w["output"], w["offset"], w["truncated"], w["done"]),
                                 ("", 4, False, False))
        finally:
            self.force_delete(s, jid)

    def test_idle_flush_returns_when_output_goes_quiet(self):
        s = self.server
        jid = s.run("echo quiet; sleep 300", timeout=0.01, idle_flush_seconds=0.5)["job_id"]
        try:
            t0 = time.monotonic()
            w = self.check_result(s.wait(jid, 0, timeout=120, idle_flush_seconds=0.5))
            self.assertLess(time.monotonic() - t0, 60, "idle flush did not return")
            self.assertEqual((w["output"], w["done"], w["offset"]), ("quiet\n", False, 6))
        finally:
            self.force_delete(s, jid)

    def test_full_window_returns_before_idle(self):
        s = self.server
        jid = s.run("while :; do echo 0123456789; sleep 0.05; done", timeout=0.01)["job_id"]
        try:
            t0 = time.monotonic()
            w = self.check_result(s.wait(jid, 0, timeout=120, output_limit=64,
                                         idle_flush_seconds=100))
            self.assertLess(time.monotonic() - t0, 60)
            self.assertTrue(w["truncated"], w)
            self.assertEqual(w["offset"], 64)
            self.assertEqual(w["output"], ("0123456789\n" * 6)[:64])
        finally:
            self.force_delete(s, jid)

    def test_offset_errors(self):
        s = self.server
        res, _ = s.run_to_completion("echo 12345")
        jid = res["job_id"]
        self.assertEqual(res["offset"], 6)
        self.assert_error(s, "POST", f"/v1/jobs/{jid}/wait", {"offset": 7, "timeout": 0},
                          400, "invalid_offset")
        self.assert_error(s, "POST", f"/v1/jobs/{jid}/wait", {"offset": 10 ** 12},
                          400, "invalid_offset")
        self.assert_error(s, "POST", f"/v1/jobs/{jid}/wait", {"offset": -1, "timeout": 0},
                          400, "invalid_request")
        w = self.check_result(s.wait(jid, 6, timeout=0))
        self.assertEqual((w["output"], w["offset"], w["truncated"], w["done"]),
                         ("", 6, False, True))
        # offset inside the file but past size on a running job as well
        jid2 = s.run("echo r; sleep 300", timeout=30)["job_id"]
        try:
            self.wait_for_output(s, jid2, "r\n")
            self.assert_error(s, "POST", f"/v1/jobs/{jid2}/wait", {"offset": 3, "timeout": 1},
                              400, "invalid_offset")
            self.assert_error(s, "POST", f"/v1/jobs/{jid2}/input",
                              {"text": "", "offset": 3, "timeout": 1}, 400, "invalid_offset")
            self.assert_error(s, "POST", f"/v1/jobs/{jid2}/input",
                              {"text": "", "offset": -2, "timeout": 1}, 400, "invalid_request")
        finally:
            self.force_delete(s, jid2)

    def test_output_limit_clamped_everywhere(self):
        s = self.server
        n = 700000
        res = self.check_result(s.run(f"head -c {n} /dev/zero | tr '\\0' b; sleep 1",
                                      output_limit=10_000_000, timeout=60))
        self.assertLessEqual(len(res["output"]), MAX_LIMIT)
        jid = res["job_id"]
        self.poll_status(s, jid, lambda v: v["done"])
        w = self.check_result(s.wait(jid, 0, timeout=5, output_limit=10_000_000))
        self.assertEqual((len(w["output"]), w["offset"], w["truncated"], w["done"]),
                         (MAX_LIMIT, MAX_LIMIT, True, True))
        w2 = self.check_result(s.wait(jid, w["offset"], timeout=5, output_limit=10_000_000))
        self.assertEqual((w2["offset"], w2["truncated"]), (n, False))
        self.assertEqual(w["output"] + w2["output"], "b" * n)

    def test_done_and_truncated_then_paging_continues(self):
        s = self.server
        res = s.run("head -c 50000 /dev/zero | tr '\\0' c; echo", timeout=30)
        jid = res["job_id"]
        self.poll_status(s, jid, lambda v: v["done"])
        w = self.check_result(s.wait(jid, 0, timeout=10, output_limit=1000))
        self.assertEqual((w["done"], w["truncated"], w["offset"]), (True, True, 1000))
        out, off, pages = w["output"], w["offset"], 1
        while w["truncated"]:
            w = self.check_result(s.wait(jid, off, timeout=10, output_limit=1000))
            self.assertTrue(w["done"])
            self.assertGreater(w["offset"], off)
            out += w["output"]
            off = w["offset"]
            pages += 1
        self.assertEqual(out, "c" * 50000 + "\n")
        self.assertEqual(pages, 51)

    def test_default_output_limit_16384(self):
        s = self.server
        res = s.run("head -c 40000 /dev/zero | tr '\\0' d", mode="stdio", timeout=30)
        self.poll_status(s, res["job_id"], lambda v: v["done"])
        for body in ({"timeout": 0}, {"timeout": 0, "output_limit": 0},
                     {"timeout": 0, "output_limit": -5}):
            st, _, w = s.request("POST", f"/v1/jobs/{res['job_id']}/wait", body)
            self.assertEqual(st, 200)
            self.assertEqual((len(w["output"]), w["truncated"]), (16384, True), body)

    def test_tail(self):
        s = self.server
        res, _ = s.run_to_completion("printf '0123456789'", mode="stdio")
        jid = res["job_id"]
        for q, want in [("?output_limit=5", "56789"), ("", "0123456789"),
                        ("?output_limit=0", "0123456789"), ("?output_limit=x", "0123456789"),
                        ("?output_limit=100", "0123456789")]:
            t = self.check_result(s.ok("GET", f"/v1/jobs/{jid}/log/tail{q}"))
            self.assertEqual((t["output"], t["offset"], t["truncated"]), (want, 10, False), q)


class BadInputTest(SharedServerTestCase):
    """Request validation (docs/api.md "Conventions", "Jobs"; D5)."""

    def raw(self, path, data, method="POST"):
        return self.server.request(method, path, raw_body=data,
                                   headers={"Content-Type": "application/json"})

    def jobs_dir(self):
        d = os.path.join(self.server.state_dir, "jobs")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def test_invalid_json_bodies(self):
        before = self.jobs_dir()
        for data in [b"not-json", b"", b"{", b"[]", b"\"script\"", b"{\"script\": 1}",
                     b"{\"script\":\"true\",\"timeout\":\"5\"}",
                     b"{\"script\":\"true\",\"output_limit\":1.5}",
                     b"{\"script\":\"true\",\"env\":{\"A\":1}}",
                     b"{\"script\":\"true\",\"env\":[\"A\"]}",
                     b"{\"script\":\"true\",\"terminal\":{\"cols\":\"80\"}}",
                     b"{\"script\":\"true\",\"mode\":1}"]:
            st, h, body = self.raw("/v1/jobs/run", data)
            self.assert_envelope(st, h, body, 400, "invalid_request", "Invalid JSON body",
                                 repr(data))
        self.assertEqual(self.jobs_dir(), before)
        res, _ = self.server.run_to_completion("echo w")
        jid = res["job_id"]
        for data in [b"", b"nope", b"{\"offset\":1.5}", b"{\"timeout\":\"5\"}",
                     b"{\"output_limit\":\"1\"}", b"{\"offset\":\"0\"}"]:
            st, h, body = self.raw(f"/v1/jobs/{jid}/wait", data)
            self.assert_envelope(st, h, body, 400, "invalid_request", "Invalid JSON body",
                                 repr(data))
        for data in [b"", b"{\"text\":5}", b"{\"offset\":1.5}"]:
            st, h, body = self.raw(f"/v1/jobs/{jid}/input", data)
            # terminal check may come first for a finished job; both are errors
            self.assertIn(st, (400, 409), (data, body))
            self.assertIsInstance(body, dict)

    def test_input_bad_json_on_running_job(self):
        s = self.server
        jid = s.run("echo x; sleep 300", timeout=30)["job_id"]
        try:
            for data in [b"", b"{\"text\":5}", b"{\"offset\":1.5}", b"{"]:
                st, h, body = self.raw(f"/v1/jobs/{jid}/input", data)
                self.assert_envelope(st, h, body, 400, "invalid_request", "Invalid JSON body",
                                     repr(data))
        finally:
            self.force_delete(s, jid)

    def test_script_required(self):
        for body in ({"script": ""}, {}, {"script": None}, {"cwd": "/"}):
            self.assert_error(self.server, "POST", "/v1/jobs/run", body, 400,
                              "invalid_request", "script is required")

    def test_env_validation_messages(self):
        s = self.server
        before = self.jobs_dir()
        self.assert_error(s, "POST", "/v1/jobs/run", {"script": "true", "env": {"A=B": "x"}},
                          422, "validation_error", "env name must not contain '=': \"A=B\"")
        self.assert_error(s, "POST", "/v1/jobs/run", {"script": "true", "env": {"": "x"}},
                          422, "validation_error", "env names must be non-empty")
        self.assert_error(s, "POST", "/v1/jobs/run",
                          {"script": "true", "env": {"BAD": "a\u0000b"}},
                          422, "validation_error", "env entries must not contain NUL")
        self.assert_error(s, "POST", "/v1/jobs/run",
                          {"script": "true", "env": {"B\u0000AD": "ab"}},
                          422, "validation_error", "env entries must not contain NUL")
        self.assertEqual(self.jobs_dir(), before)

    def test_bad_mode(self):
        self.assert_error(self.server, "POST", "/v1/jobs/run",
                          {"script": "true", "mode": "stdout"}, 422, "validation_error",
                          "invalid job mode \"stdout\"")
        self.assert_error(self.server, "POST", "/v1/jobs/run",
                          {"script": "true", "mode": "PTY"}, 422, "validation_error",
                          "invalid job mode \"PTY\"")
        for mode in ("", None, "pty"):
            res, out = self.server.run_to_completion("echo m", mode=mode)
            self.assertEqual(out, "m\n")

    def test_bad_cwd(self):
        before = self.jobs_dir()
        self.assert_error(self.server, "POST", "/v1/jobs/run",
                          {"script": "echo x", "cwd": "/nonexistent"}, 400, "invalid_cwd",
                          "cwd is not a directory: /nonexistent")
        f = os.path.join(self.server.home, "plainfile")
        open(f, "w").close()
        self.assert_error(self.server, "POST", "/v1/jobs/run",
                          {"script": "echo x", "cwd": f}, 400, "invalid_cwd",
                          f"cwd is not a directory: {f}")
        self.assertEqual(self.jobs_dir(), before)

    def test_unknown_fields_case_insensitive_keys_and_nulls(self):
        s = self.server
        st, _, r = s.request("POST", "/v1/jobs/run",
                             {"Script": "echo ci", "TIMEOUT": 30, "Mode": "stdio",
                              "bogus": 1, "cwd": None, "env": None, "terminal": None,
                              "output_limit": None, "idle_flush_seconds": None})
        self.assertEqual(st, 200, r)
        self.check_result(r)
        last, out = self.wait_done(s, r["job_id"])
        self.assertEqual((out, last["exit_code"]), ("ci\n", 0))
        # trailing bytes after the first JSON value are ignored
        st, h, r = self.raw("/v1/jobs/run", b'{"script":"echo trail","timeout":30} garbage')
        self.assertEqual(st, 200, r)
        last, out = self.wait_done(s, r["job_id"])
        self.assertEqual(out, "trail\n")
        w = self.check_result(s.ok("POST", f"/v1/jobs/{r['job_id']}/wait",
                                   {"Offset": 2, "Timeout": None, "junk": [1, 2]}))
        self.assertEqual(w["output"], "ail\n")

    def test_script_of_almost_64_mib(self):
        s = self.server
        budget = 64 * 1024 * 1024 - 4096
        head = "echo big-start\nexit 0\n#"
        body_overhead = len(json.dumps({"script": head, "timeout": 300}))
        script = head + "x" * (budget - body_overhead)
        body = json.dumps({"script": script, "timeout": 300}).encode()
        self.assertLess(len(body), 64 * 1024 * 1024)
        st, _, r = s.request("POST", "/v1/jobs/run", raw_body=body, timeout=600,
                             headers={"Content-Type": "application/json"})
        self.assertEqual(st, 200, r if isinstance(r, dict) else r[:200])
        last, out = self.wait_done(s, r["job_id"], deadline=600)
        self.assertEqual((last["exit_code"], out), (0, "big-start\n"))
        with open(os.path.join(s.state_dir, "jobs", r["job_id"], "script")) as f:
            self.assertEqual(len(f.read()), len(script))
        s.ok("DELETE", f"/v1/jobs/{r['job_id']}")

    def test_hostile_ids(self):
        s = self.server
        res, _ = s.run_to_completion("echo keep")
        keep = res["job_id"]
        canary = os.path.join(s.tmp, "canary")
        os.makedirs(canary)
        long_id = "a" * 3000
        for jid in ["../../etc", "..", "%2e%2e", "%2e%2e%2f%2e%2e", "..%2f..%2fcanary",
                    "%2E%2E%2Fjobs", ".", "%00", "a%00b", long_id, "jobs", "shellctl.db",
                    keep.upper(), keep + "0", keep[:-1]]:
            for method, path, body in [("GET", f"/v1/jobs/{jid}", None),
                                       ("POST", f"/v1/jobs/{jid}/wait", {}),
                                       ("GET", f"/v1/jobs/{jid}/log/tail", None),
                                       ("POST", f"/v1/jobs/{jid}/input", {"text": "x"}),
                                       ("POST", f"/v1/jobs/{jid}/terminate",
                                        {"grace_seconds": 0}),
                                       ("DELETE", f"/v1/jobs/{jid}?force=true", None)]:
                st, h, data = s.request(method, path, body)
                self.assertEqual(st, 404, f"{method} {path}: {st} {data!r}")
                self.assertIsInstance(data, dict, f"{method} {path}: {data!r}")
                self.assertIn(data["error"]["code"], ("job_not_found", "not_found"),
                              f"{method} {path}: {data!r}")
        self.assertTrue(os.path.isdir(canary))
        self.assertTrue(os.path.isdir(s.home))
        self.assertTrue(os.path.exists(os.path.join(s.state_dir, "jobs", keep, "output.log")))
        self.assertEqual(self.status(s, keep)["status"], "exited")
        self.assertEqual(s.wait(keep, 0, timeout=0)["output"], "keep\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
