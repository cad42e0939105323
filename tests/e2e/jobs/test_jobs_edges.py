"""Edge cases of the jobs API: races between routes, odd outputs and odd scripts.

Each test states the contract clause it checks (docs/api.md, docs/jobs.md, D-decisions).
"""
import os
import threading
import time
import unittest

from harness import in_thread
from jobs_common import JobsTestCase, Server, marker, pgrep, wait_gone, sleeper, kill_all, SharedServerTestCase


class EdgeTest(SharedServerTestCase):
    in_thread = staticmethod(in_thread)

    # -- races ---------------------------------------------------------------------------
    def test_delete_while_wait_is_long_polling(self):
        """A pending wait must return (done or 404) once its job is deleted, not hang."""
        s = self.server
        jid = s.run("echo w; sleep 300", timeout=0.1)["job_id"]
        self.wait_for_output(s, jid, "w\n")
        t0 = time.monotonic()
        t, box = self.in_thread(lambda: s.request("POST", f"/v1/jobs/{jid}/wait",
                                                  {"offset": 2, "timeout": 60}, timeout=120))
        time.sleep(0.5)
        d = s.ok("DELETE", f"/v1/jobs/{jid}?force=true&grace_seconds=2", timeout=60)
        self.assertEqual(d["deleted"], True)
        t.join(120)
        self.assertNotIn("error", box, box)
        st, _, body = box["value"]
        self.assertLess(time.monotonic() - t0, 60 + 10)
        self.assertIn(st, (200, 404), body)
        if st == 200:
            self.check_result(body)
            self.assertTrue(body["done"], body)
        else:
            self.assertEqual(body["error"]["code"], "job_not_found")

    def test_many_concurrent_waits_on_one_job(self):
        s = self.server
        jid = s.run("echo start; read x; echo \"end $x\"", timeout=0.1)["job_id"]
        _, off, _ = self.wait_for_output(s, jid, "start\n")
        threads = [self.in_thread(lambda: self.wait_done(s, jid)) for _ in range(20)]
        time.sleep(1)
        s.ok("POST", f"/v1/jobs/{jid}/input", {"text": "now\n", "offset": off, "timeout": 0})
        for t, box in threads:
            t.join(120)
            self.assertNotIn("error", box, box)
            last, out = box["value"]
            self.assertEqual(out, "start\nnow\nend now\n")
            self.assertEqual(last["exit_code"], 0)

    def test_concurrent_terminates(self):
        s = self.server
        snippet, mk = sleeper()
        self.addCleanup(kill_all, mk)
        jid = s.run(f"echo t; {snippet}", timeout=0.1)["job_id"]
        self.wait_for_output(s, jid, "t\n")
        threads = [self.in_thread(lambda: s.request("POST", f"/v1/jobs/{jid}/terminate",
                                                    {"grace_seconds": 5}, timeout=60))
                   for _ in range(5)]
        for t, box in threads:
            t.join(120)
            self.assertNotIn("error", box, box)
            st, _, v = box["value"]
            self.assertEqual(st, 200, v)
            self.check_status_view(v)
            self.assertEqual((v["status"], v["exit_code"]), ("terminated", None))
        self.assertTrue(wait_gone(mk))

    def test_terminate_and_delete_race(self):
        s = self.server
        jid = s.run("sleep 300", timeout=0.1)["job_id"]
        t1, b1 = self.in_thread(lambda: s.request("POST", f"/v1/jobs/{jid}/terminate",
                                                  {"grace_seconds": 3}, timeout=60))
        t2, b2 = self.in_thread(lambda: s.request(
            "DELETE", f"/v1/jobs/{jid}?force=true&grace_seconds=3", timeout=60))
        for t in (t1, t2):
            t.join(120)
        self.assertNotIn("error", b1, b1)
        self.assertNotIn("error", b2, b2)
        self.assertIn(b1["value"][0], (200, 404), b1)
        self.assertIn(b2["value"][0], (200, 404), b2)
        self.assertEqual(b2["value"][0], 200, b2)
        self.assert_error(s, "GET", f"/v1/jobs/{jid}", None, 404, "job_not_found")
        self.assertFalse(os.path.exists(os.path.join(s.state_dir, "jobs", jid)))

    def test_done_offsets_are_final_terminate_200_times(self):
        """Once any answer says done, the log no longer grows: the ^C echo and whatever the
        job prints while it ends are in it before terminate (or a waiting long-poll)
        answers."""
        s = self.server
        for i in range(200):
            jid = s.run(f"trap 'echo trapped-{i}; exit 3' INT; echo before; sleep 300",
                        timeout=0.05)["job_id"]
            r = s.wait(jid, 0, timeout=10, idle_flush_seconds=0.01)
            while "before\n" not in r["output"]:
                r = s.wait(jid, 0, timeout=10, idle_flush_seconds=0.01)
            size_now = r["offset"]
            waiter, box = self.in_thread(lambda: s.wait(jid, size_now, timeout=30))
            v = s.ok("POST", f"/v1/jobs/{jid}/terminate", {"grace_seconds": 5}, timeout=60)
            waiter.join(60)
            path = os.path.join(s.state_dir, "jobs", jid, "output.log")
            self.assertEqual((v["status"], v["done"]), ("terminated", True), v)
            self.assertEqual(v["offset"], os.path.getsize(path), (i, v))
            w = box["value"]
            if w["done"]:
                self.assertEqual(w["offset"], v["offset"], (i, w, v))
            time.sleep(0.02 if i % 20 else 0.3)
            self.assertEqual(os.path.getsize(path), v["offset"], f"round {i}: the log grew")
            s.ok("DELETE", f"/v1/jobs/{jid}")

    def test_terminate_grace_zero_and_negative(self):
        s = self.server
        for grace in (0, -5):
            snippet, mk = sleeper()
            self.addCleanup(kill_all, mk)
            jid = s.run(f"echo g; {snippet}", timeout=0.1)["job_id"]
            self.wait_for_output(s, jid, "g\n")
            v = self.check_status_view(s.ok("POST", f"/v1/jobs/{jid}/terminate",
                                            {"grace_seconds": grace}, timeout=60))
            self.assertEqual((v["status"], v["exit_code"]), ("terminated", None))
            self.assertTrue(wait_gone(mk), f"grace {grace}: process survived")

    # -- PTY process model ---------------------------------------------------------------
    def test_pty_background_child_does_not_keep_job_running(self):
        """D8: the job ends when its script ends, even if a background child survives."""
        s = self.server
        snippet, mk = sleeper()
        self.addCleanup(kill_all, mk)
        script = snippet.replace("exec ", "") + " &\necho fg-done\n"
        res = s.run(script, timeout=30)
        last, out = self.wait_done(s, res["job_id"], deadline=120)
        self.assertEqual((last["status"], last["exit_code"]), ("exited", 0))
        self.assertIn("fg-done\n", out)

    def test_pty_split_utf8_across_writes(self):
        """D6: the sanitizer carries a split UTF-8 character over to the next chunk."""
        res, out = self.server.run_to_completion(
            "printf 'a\\344'; sleep 0.5; printf '\\270'; sleep 0.5; printf '\\226b\\n';"
            "printf '\\360\\237'; sleep 0.5; printf '\\230\\200\\n'")
        self.assertEqual(out, "a世b\n😀\n")

    def test_pty_invalid_bytes_become_replacement(self):
        res, out = self.server.run_to_completion("printf 'x\\377y\\300z\\n'")
        self.assertEqual(out, "x\ufffdy\ufffdz\n")

    def test_pty_long_line_without_newline(self):
        n = 3 * 1024 * 1024
        res, out = self.server.run_to_completion(
            f"head -c {n} /dev/zero | tr '\\0' x", output_limit=524288, deadline=300)
        self.assertEqual((res["exit_code"], len(out)), (0, n))
        self.assertEqual(out, "x" * n)

    def test_pty_control_chars_and_json_escaping(self):
        res, out = self.server.run_to_completion(
            "printf 'tab\\there bs\\bx bell\\a <a&b> \\342\\200\\250 \"q\" \\\\ end\\n'")
        self.assertEqual(out, "tab\there bs\bx bell\a <a&b> \u2028 \"q\" \\ end\n")

    def test_stdio_nul_and_surrogates(self):
        s = self.server
        raw = b"n\x00ul|\xed\xa0\x80|\xc0\x80|\xf4\x90\x80\x80|\xef\xbf\xbf|ok\n"
        res, out = s.run_to_completion(
            "printf '" + "".join("\\%03o" % b for b in raw) + "'", mode="stdio")
        self.assertEqual(res["exit_code"], 0)
        self.assertEqual(res["offset"], len(raw))
        self.assertTrue(out.startswith("n\x00ul|"), repr(out))
        self.assertTrue(out.endswith("|\uffff|ok\n"), repr(out))
        for ch in out:
            self.assertFalse(0xD800 <= ord(ch) <= 0xDFFF, f"surrogate in output: {out!r}")
        self.assertEqual(out, raw.decode("utf-8", errors="replace"))

    # -- scripts and runner ----------------------------------------------------------------
    def test_runner_exit_codes_for_bad_scripts(self):
        s = self.server
        res, out = s.run_to_completion("#!/nonexistent/interp\necho never\n")
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 126), out)
        res, out = s.run_to_completion("if then fi\n")
        self.assertEqual(res["status"], "exited")
        self.assertNotEqual(res["exit_code"], 0)
        res, _ = s.run_to_completion("exit 256")
        self.assertEqual(res["exit_code"], 0)
        res, _ = s.run_to_completion("exit 255")
        self.assertEqual(res["exit_code"], 255)

    def test_script_with_args_quotes_and_unicode(self):
        res, out = self.server.run_to_completion(
            "x='it'\"'\"'s'; echo \"$x $0x $# ü\"; printf '%s\\n' \"$@\"")
        self.assertTrue(out.startswith("it's "), out)
        self.assertIn(" 0 ü\n", out)

    def test_env_values_with_newlines_and_unicode(self):
        res, out = self.server.run_to_completion(
            'printf "[%s]" "$MULTI"; printf "[%s]\\n" "$UNI"',
            env={"MULTI": "a\nb\n", "UNI": "世界 😀", "EMPTY": ""})
        self.assertEqual(out, "[a\nb\n][世界 😀]\n")

    def test_cwd_is_cleaned_not_resolved(self):
        s = self.server
        real = os.path.join(s.home, "real")
        os.makedirs(real)
        link = os.path.join(s.home, "link")
        os.symlink(real, link)
        res, out = s.run_to_completion('echo "$TMPDIR"', cwd=os.path.join(s.home, "real", "..",
                                                                      "real") + "/")
        self.assertEqual(out, real + "\n")
        res, out = s.run_to_completion('echo "$TMPDIR"; touch here', cwd=link)
        self.assertEqual((res["exit_code"], out), (0, link + "\n"))
        self.assertTrue(os.path.exists(os.path.join(real, "here")))

    def test_zero_terminal_size_still_answers(self):
        st, _, r = self.server.request("POST", "/v1/jobs/run",
                                       {"script": "echo tiny", "terminal": {}, "timeout": 30})
        self.assertEqual(st, 200, r)
        self.check_result(r)
        last = r
        if not r["done"]:
            last, _ = self.wait_done(self.server, r["job_id"])
        self.assertIn(last["status"], ("exited", "failed"))

    def test_eof_via_ctrl_d(self):
        s = self.server
        jid = s.run("cat > got.txt; echo saved; wc -l < got.txt", timeout=0.5,
                    cwd=s.home)["job_id"]
        lines = "".join(f"line {i} {'é' * (i % 50)}\n" for i in range(300))
        r = s.ok("POST", f"/v1/jobs/{jid}/input", {"text": lines, "offset": 0, "timeout": 1})
        s.ok("POST", f"/v1/jobs/{jid}/input", {"text": "\u0004", "offset": r["offset"],
                                               "timeout": 1})
        last, out = self.wait_done(s, jid)
        self.assertEqual(last["exit_code"], 0)
        self.assertTrue(out.endswith("saved\n300\n"), out[-200:])
        with open(os.path.join(s.home, "got.txt")) as f:
            self.assertEqual(f.read(), lines)

    def test_idle_flush_negative_and_run_timeout(self):
        s = self.server
        jid = s.run("echo a; sleep 300", timeout=0.1)["job_id"]
        try:
            self.wait_for_output(s, jid, "a\n")
            t0 = time.monotonic()
            w = self.check_result(s.wait(jid, 0, timeout=60, idle_flush_seconds=-1))
            self.assertLess(time.monotonic() - t0, 30)
            self.assertEqual(w["output"], "a\n")
        finally:
            self.force_delete(s, jid)
        t0 = time.monotonic()
        r = self.check_result(s.run("sleep 5; echo late", timeout=1))
        self.assertLess(time.monotonic() - t0, 1 + 10)
        self.assertEqual((r["done"], r["output"], r["offset"], r["exit_code"]),
                         (False, "", 0, None))
        last, out = self.wait_done(s, r["job_id"])
        self.assertEqual(out, "late\n")


class RoutingEdgeTest(JobsTestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(token="edge-token")

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def test_unknown_routes_404_before_auth(self):
        s = self.server
        for path in ("/v1/nope", "/v1/prepare", "/v1/jobs/abc/def", "/v1/jobs/abc/log"):
            self.assert_error(s, "GET", path, None, 404, "not_found", auth=False)
        self.assert_error(s, "PUT", "/v1/prepare", {}, 404, "not_found", auth=False)
        st, _, _ = s.request("HEAD", "/healthz", auth=False)
        self.assertEqual(st, 200)

    def test_trailing_slash_and_query_strings(self):
        s = self.server
        res = s.ok("POST", "/v1/jobs/run?ignored=1", {"script": "echo q", "timeout": 30})
        last, out = self.wait_done(s, res["job_id"])
        self.assertEqual(out, "q\n")
        v = s.ok("GET", f"/v1/jobs/{res['job_id']}?x=y")
        self.assertEqual(v["status"], "exited")
        st, _, body = s.request("GET", f"/v1/jobs/{res['job_id']}/")
        self.assertEqual(st, 404, body)
        self.assertIsInstance(body, dict)

    def test_percent_encoded_real_id(self):
        """Go's mux matches unescaped segments: %61 is 'a'."""
        s = self.server
        res, _ = s.run_to_completion("echo enc")
        jid = res["job_id"]
        enc = "".join("%%%02x" % ord(c) for c in jid)
        st, _, v = s.request("GET", f"/v1/jobs/{enc}")
        self.assertEqual(st, 200, v)
        self.assertEqual(v["job_id"], jid)

    def test_empty_cwd_is_server_home_and_times_ordered(self):
        s = self.server
        res, out = s.run_to_completion("pwd; sleep 1.1", cwd="")
        self.assertEqual(out, s.home + "\n")
        v = self.status(s, res["job_id"])
        self.assertLessEqual(v["created_at"], v["started_at"])
        self.assertLess(v["started_at"], v["ended_at"])

    def test_relative_state_dir_gives_absolute_output_path(self):
        srv = Server(start=False, token="rel")
        try:
            srv.state_dir = os.path.relpath(os.path.join(srv.tmp, "relstate"), os.getcwd())
            srv.start()
            res = self.check_result(srv.run("echo rel", timeout=30))
            self.assertTrue(os.path.isabs(res["output_path"]), res["output_path"])
            self.assertEqual(res["output_path"], os.path.join(
                os.path.abspath(srv.state_dir), "jobs", res["job_id"], "output.log"))
            last, out = self.wait_done(srv, res["job_id"])
            self.assertEqual((out, last["exit_code"]), ("rel\n", 0))
        finally:
            srv.close()


class RetentionTest(JobsTestCase):
    """D1: terminal jobs are collected after the retention; running ones never are."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(env={"SHELLCTL_RESULT_RETENTION": "3s",
                                 "SHELLCTL_GC_INTERVAL": "1s"})

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def test_finished_job_collected_running_job_kept(self):
        s = self.server
        done, _ = s.run_to_completion("echo gone-soon")
        mode_stdio, _ = s.run_to_completion("echo gone-soon", mode="stdio")
        running = s.run("echo stays; sleep 300", timeout=0.1)["job_id"]
        try:
            self.wait_for_output(s, running, "stays\n")
            deadline = time.monotonic() + 60
            gone = set()
            while time.monotonic() < deadline and len(gone) < 2:
                for jid in (done["job_id"], mode_stdio["job_id"]):
                    st, _, _ = s.request("GET", f"/v1/jobs/{jid}")
                    if st == 404:
                        gone.add(jid)
                time.sleep(0.5)
            self.assertEqual(len(gone), 2, "terminal jobs were not collected")
            for jid in gone:
                self.assertFalse(os.path.exists(os.path.join(s.state_dir, "jobs", jid)))
                self.assert_error(s, "POST", f"/v1/jobs/{jid}/wait", {}, 404, "job_not_found")
            time.sleep(4)  # well past the retention: the running job must stay
            v = self.status(s, running)
            self.assertEqual(v["status"], "running")
            self.assertIn(running, [j["job_id"] for j in s.ok("GET", "/v1/jobs")["jobs"]])
            s.ok("POST", f"/v1/jobs/{running}/terminate", {"grace_seconds": 5}, timeout=60)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if s.request("GET", f"/v1/jobs/{running}")[0] == 404:
                    break
                time.sleep(0.5)
            self.assert_error(s, "GET", f"/v1/jobs/{running}", None, 404, "job_not_found")
        finally:
            self.force_delete(s, running)

    def test_bad_retention_settings_fail_startup(self):
        for env in ({"SHELLCTL_RESULT_RETENTION": "soon"}, {"SHELLCTL_RESULT_RETENTION": "0s"},
                    {"SHELLCTL_GC_INTERVAL": "-1m"}, {"SHELLCTL_GC_INTERVAL": "10"}):
            srv = Server(env=env, start=False)
            try:
                with self.assertRaises(RuntimeError, msg=str(env)):
                    srv.start()
                self.assertNotEqual(srv.proc.wait(30), 0)
            finally:
                srv.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
