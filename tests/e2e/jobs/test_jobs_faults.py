"""Jobs whose processes vanish under the server (D8: no stuck states), and JSON inputs at
the edges of the decoder (docs/api.md "Conventions"), observed through the jobs API only."""
import json
import os
import signal
import time
import unittest

from jobs_common import JobsTestCase, Server, pgrep, sleeper, kill_all, TERMINAL, SharedServerTestCase


class VanishingProcessTest(SharedServerTestCase):
    def setUp(self):
        self.snippet, self.patterns = sleeper()

    def tearDown(self):
        # a SIGKILLed runner or a killed tmux server may orphan the script's sleeper
        kill_all(self.patterns)

    def start(self, script=None, **kw):
        script = script or f"echo alive; {self.snippet}"
        jid = self.server.run(script, timeout=0.1, **kw)["job_id"]
        self.wait_for_output(self.server, jid, "alive\n")
        return jid

    def settle(self, jid, deadline=60):
        """A long-poll must come back done once the job's processes are gone."""
        t0 = time.monotonic()
        last, out = self.wait_done(self.server, jid, deadline=deadline)
        self.assertLess(time.monotonic() - t0, deadline)
        v = self.status(self.server, jid)
        self.assertIn(v["status"], TERMINAL)
        return last, out

    def pane_pid(self, jid):
        p = self.server.tmux("list-panes", "-t", f"shellctl-{jid}", "-F", "#{pane_pid}")
        self.assertEqual(p.returncode, 0, p.stderr)
        return int(p.stdout.split()[0])

    def test_session_killed_externally(self):
        jid = self.start()
        self.assertEqual(self.server.tmux("kill-session", "-t", f"shellctl-{jid}").returncode, 0)
        last, out = self.settle(jid)
        self.assertIn(last["status"], ("lost", "exited"), last)
        if last["status"] == "lost":
            self.assertIsNone(last["exit_code"])
        self.assertEqual(out, "alive\n")

    def test_runner_sigkilled(self):
        jid = self.start()
        os.kill(self.pane_pid(jid), signal.SIGKILL)
        last, out = self.settle(jid)
        self.assertIn(last["status"], ("lost", "failed"), last)
        self.assertIsNone(last["exit_code"])

    def test_stdio_runner_sigkilled(self):
        jid = self.start(mode="stdio")
        os.kill(self.pane_pid(jid), signal.SIGKILL)
        last, out = self.settle(jid)
        self.assertIn(last["status"], ("lost", "failed"), last)
        self.assertIsNone(last["exit_code"])
        self.assertEqual(out, "alive\n")

    def test_sanitizer_killed(self):
        s = self.server
        jid = self.start()
        jdir = os.path.join(s.state_dir, "jobs", jid)
        pids = []
        for p in pgrep("shellctl-sanitize-pty"):
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    argv = f.read().decode(errors="replace").split("\0")
            except OSError:
                continue
            if argv[0].endswith("shellctl-sanitize-pty") and any(jdir in a for a in argv):
                pids.append(p)
        self.assertEqual(len(pids), 1, pids)
        os.kill(pids[0], signal.SIGKILL)
        last, out = self.settle(jid)
        self.assertEqual(last["status"], "failed", last)
        self.assertIsNone(last["exit_code"])

    def test_tmux_server_killed(self):
        s = self.server
        a = self.start()
        b_snippet, b_patterns = sleeper()
        self.addCleanup(kill_all, b_patterns)
        b = self.start(script=f"echo alive; {b_snippet}", mode="stdio")
        s.tmux("kill-server")
        for jid in (a, b):
            last, _ = self.settle(jid)
            self.assertIn(last["status"], ("lost", "exited", "failed"), last)
        # the server keeps answering, and new jobs get a truthful answer
        st, _, r = s.request("POST", "/v1/jobs/run", {"script": "echo again", "timeout": 30})
        self.assertEqual(st, 200, r)
        self.check_result(r)
        last = r if r["done"] else self.wait_done(s, r["job_id"])[0]
        self.assertIn(last["status"], TERMINAL)
        self.assertEqual(s.ok("GET", "/healthz"), {"status": "ok"})


class DecoderEdgeTest(SharedServerTestCase):
    def raw_run(self, data, timeout=60):
        return self.server.request("POST", "/v1/jobs/run", raw_body=data, timeout=timeout,
                                   headers={"Content-Type": "application/json"})

    def alive(self):
        self.assertEqual(self.server.ok("GET", "/healthz"), {"status": "ok"})

    def test_duplicate_keys_last_wins(self):
        for data in (b'{"script":"echo a","script":"echo b","timeout":30}',
                     b'{"script":"echo a","SCRIPT":"echo b","timeout":30}'):
            st, _, r = self.raw_run(data)
            self.assertEqual(st, 200, r)
            last, out = self.wait_done(self.server, r["job_id"])
            self.assertEqual(out, "b\n", data)

    def test_env_names_are_case_sensitive(self):
        res, out = self.server.run_to_completion('echo "$FOO_X/$foo_x"',
                                                 env={"FOO_X": "up", "foo_x": "low"})
        self.assertEqual(out, "up/low\n")

    def test_deeply_nested_unknown_field(self):
        for depth in (500, 100000):
            data = b'{"script":"echo deep","timeout":30,"x":' + b"[" * depth + b"]" * depth + b"}"
            st, hdrs, r = self.raw_run(data)
            self.assertIn(st, (200, 400), (depth, st, r))
            self.assertIsInstance(r, dict, r)
            if st == 400:
                self.assert_envelope(st, hdrs, r, 400, "invalid_request", "Invalid JSON body")
            else:
                self.assertEqual(self.wait_done(self.server, r["job_id"])[1], "deep\n")
            self.alive()

    def test_out_of_range_numbers(self):
        for field, value in [("output_limit", "99999999999999999999"),
                             ("output_limit", "-99999999999999999999"),
                             ("timeout", "1e400"), ("idle_flush_seconds", "1e400")]:
            data = ('{"script":"echo n","timeout":30,"%s":%s}' % (field, value)).encode()
            data = data.replace(b'"timeout":30,"timeout"', b'"timeout"')
            st, hdrs, r = self.raw_run(data)
            self.assertIn(st, (200, 400), (field, value, st, r))
            if st == 400:
                self.assert_envelope(st, hdrs, r, 400, "invalid_request", "Invalid JSON body")
            else:
                self.check_result(r)
            self.alive()
        res, _ = self.server.run_to_completion("echo ok")
        for body in ({"offset": 10 ** 20}, {"offset": -10 ** 20}, {"output_limit": 10 ** 20},
                     {"timeout": 1e300}):
            st, hdrs, r = self.server.request("POST", f"/v1/jobs/{res['job_id']}/wait", body,
                                              timeout=60)
            self.assertIn(st, (200, 400), (body, st, r))
            if st == 400:
                self.assertIn(r["error"]["code"], ("invalid_request", "invalid_offset"))
            self.alive()

    def test_huge_timeout_returns_when_done(self):
        s = self.server
        t0 = time.monotonic()
        r = self.check_result(s.run("echo fast", timeout=1e9))
        self.assertTrue(r["done"], r)
        w = self.check_result(s.wait(r["job_id"], 0, timeout=1e12))
        self.assertEqual((w["done"], w["output"]), (True, "fast\n"))
        self.assertLess(time.monotonic() - t0, 60)

    def test_lone_surrogate_and_escapes(self):
        s = self.server
        st, _, r = s.request("POST", "/v1/jobs/run",
                             raw_body=b'{"script":"printf \'%s\\\\n\' \\"\\ud83d\\ude00\\u00e9\\u4e16\\"",'
                                      b'"timeout":30}',
                             headers={"Content-Type": "application/json"})
        self.assertEqual(st, 200, r)
        self.assertEqual(self.wait_done(s, r["job_id"])[1], "😀é世\n")
        st, _, r = s.request("POST", "/v1/jobs/run",
                             raw_body=b'{"script":"echo \\"[$LONE]\\"","env":{"LONE":"a\\ud800b"},'
                                      b'"timeout":30}',
                             headers={"Content-Type": "application/json"})
        self.assertIn(st, (200, 400, 422), r)
        if st == 200:
            out = self.wait_done(s, r["job_id"])[1]
            self.assertIn(out, ("[a\ufffdb]\n",), out)
        self.alive()

    def test_terminal_out_of_range(self):
        # tmux holds a job's whole screen: the size is bounded by 4096 (cols and rows).
        s = self.server
        for term in ({"cols": 100000, "rows": 100000}, {"cols": -5, "rows": -5},
                     {"cols": 4097, "rows": 50}, {"cols": 80, "rows": 4097}):
            st, _, r = s.request("POST", "/v1/jobs/run",
                                 {"script": "echo term", "terminal": term, "timeout": 30})
            self.assertEqual((st, r["error"]["code"]), (422, "validation_error"), (term, r))
        for term in ({"cols": 4096, "rows": 4096}, {"cols": 1, "rows": 1}):
            st, _, r = s.request("POST", "/v1/jobs/run",
                                 {"script": "echo term", "terminal": term, "timeout": 30})
            self.assertEqual(st, 200, (term, r))
            self.check_result(r)
            last = r if r["done"] else self.wait_done(s, r["job_id"])[0]
            self.assertIn(last["status"], ("exited", "failed"), (term, last))
            if last["status"] == "failed":
                self.assertIsNone(last["exit_code"])
        self.alive()


if __name__ == "__main__":
    unittest.main(verbosity=2)
