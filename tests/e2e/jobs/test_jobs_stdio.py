"""stdio-mode jobs over HTTP (docs/jobs.md "The output pipe", D6)."""
import os
import time
import unittest

from jobs_common import JobsTestCase, Server, PY3, RESULT_KEYS, STATUS_KEYS, SharedServerTestCase


class StdioTest(SharedServerTestCase):
    def job_file(self, jid, name):
        with open(os.path.join(self.server.state_dir, "jobs", jid, name), "rb") as f:
            return f.read()

    def test_stdout_stderr_separation(self):
        s = self.server
        res, out = s.run_to_completion(
            "printf '{\"ok\":true}'; printf 'warn' >&2; echo; echo err2 >&2; "
            "[ -t 0 ] || echo stdin-not-tty; [ -t 1 ] || echo stdout-not-tty; "
            "[ -t 2 ] || echo stderr-not-tty; cat; echo after-cat", mode="stdio")
        jid = res["job_id"]
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0))
        self.assertEqual(out, "{\"ok\":true}\nstdin-not-tty\nstdout-not-tty\nstderr-not-tty\n"
                              "after-cat\n")
        self.assertEqual(self.job_file(jid, "stderr.log"), b"warnerr2\n")
        self.assertEqual(self.job_file(jid, "output.log"), out.encode())
        t = self.check_result(s.ok("GET", f"/v1/jobs/{jid}/log/tail"))
        self.assertNotIn("warn", t["output"])
        st = os.stat(os.path.join(s.state_dir, "jobs", jid, "stderr.log"))
        self.assertEqual(st.st_mode & 0o777, 0o600)

    def test_stdio_keeps_raw_bytes(self):
        # no sanitizing in stdio mode: CR and escapes pass through
        res, out = self.server.run_to_completion(
            "printf 'a\\r\\nb\\033[31mc\\033[0m\\n10%%\\r100%%\\n'", mode="stdio")
        self.assertEqual(out, "a\r\nb\x1b[31mc\x1b[0m\n10%\r100%\n")

    @unittest.skipUnless(PY3, "no /usr/bin/python3")
    def test_interleaved_large_streams_no_deadlock(self):
        s = self.server
        script = (f"#!{PY3}\nimport os\n"
                  "for i in range(400):\n"
                  "    os.write(1, (b'O%05d' % i) * 2000 + b'\\n')\n"
                  "    os.write(2, (b'E%05d' % i) * 2000 + b'\\n')\n")
        res, out = s.run_to_completion(script, mode="stdio", output_limit=65536,
                                       deadline=600)
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0))
        exp_out = b"".join((b"O%05d" % i) * 2000 + b"\n" for i in range(400))
        exp_err = b"".join((b"E%05d" % i) * 2000 + b"\n" for i in range(400))
        self.assertEqual(out.encode(), exp_out)
        self.assertEqual(self.job_file(res["job_id"], "stderr.log"), exp_err)

    def test_shell_interleaved_streams(self):
        s = self.server
        script = ("i=0; while [ $i -lt 3000 ]; do echo \"out $i\"; echo \"err $i\" >&2; "
                  "i=$((i+1)); done")
        res, out = s.run_to_completion(script, mode="stdio")
        self.assertEqual(out, "".join(f"out {i}\n" for i in range(3000)))
        self.assertEqual(self.job_file(res["job_id"], "stderr.log"),
                         "".join(f"err {i}\n" for i in range(3000)).encode())

    def test_child_closes_stdout_early(self):
        s = self.server
        script = ("echo before-close\nexec 1>&-\n"
                  "i=0; while [ $i -lt 5 ]; do echo \"e$i\" >&2; sleep 0.2; i=$((i+1)); done\n"
                  "echo last >&2\nexit 7\n")
        res, out = s.run_to_completion(script, mode="stdio")
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 7))
        self.assertEqual(out, "before-close\n")
        self.assertEqual(self.job_file(res["job_id"], "stderr.log"),
                         b"e0\ne1\ne2\ne3\ne4\nlast\n")

    def test_background_process_holds_stdout(self):
        s = self.server
        script = "echo early\n(sleep 3; echo late; echo late-err >&2) &\nexit 0\n"
        res = self.check_result(s.run(script, mode="stdio", timeout=60))
        jid = res["job_id"]
        # however it is observed, done implies both lines are there
        last, out = self.wait_done(s, jid)
        self.assertEqual(out, "early\nlate\n")
        self.assertEqual((last["status"], last["exit_code"]), ("exited", 0))
        self.assertEqual(self.job_file(jid, "stderr.log"), b"late-err\n")
        if res["done"]:
            self.assertEqual(res["output"], "early\nlate\n")

    def test_background_holds_stdout_status_running_meanwhile(self):
        s = self.server
        script = "echo early\n(sleep 4; echo late) &\nexit 0\n"
        res = self.check_result(s.run(script, mode="stdio", timeout=1))
        jid = res["job_id"]
        # The shell has exited right away; while the background child holds stdout the
        # job must not be done.
        text, off, _ = self.wait_for_output(s, jid, "early\n")
        v = self.status(s, jid)
        if "late" not in text:
            self.assertFalse(v["done"], f"done before stdout closed: {v}")
        last, out = self.wait_done(s, jid)
        self.assertEqual(out, "early\nlate\n")

    def test_invalid_utf8_never_stalls(self):
        s = self.server
        raw = b"ok\xff\xfe|\xc0A\xf5\xf8B\xe4\xb8\x96\xffend\n"
        res, _ = s.run_to_completion(
            "printf '" + "".join("\\%03o" % b for b in raw) + "'", mode="stdio")
        jid = res["job_id"]
        self.assertEqual(self.job_file(jid, "output.log"), raw)
        expected_text = raw.decode("utf-8", errors="replace")
        for limit in (1, 2, 3, 5, 16384):
            off, text, n = 0, "", 0
            while True:
                r = self.check_result(s.wait(jid, off, timeout=5, output_limit=limit))
                if off < len(raw):
                    self.assertGreater(r["offset"], off, f"stalled at {off} (limit {limit})")
                text += r["output"]
                off = r["offset"]
                n += 1
                self.assertLess(n, 100)
                if not r["truncated"]:
                    break
            self.assertEqual(off, len(raw), limit)
            self.assertEqual(text, expected_text, limit)
        t = self.check_result(s.ok("GET", f"/v1/jobs/{jid}/log/tail"))
        self.assertEqual(t["offset"], len(raw))
        self.assertEqual(t["output"], expected_text)

    def test_incomplete_char_held_back_while_running(self):
        """D6: a character split across writes is not turned into U+FFFD while more bytes
        may come; at EOF an incomplete tail becomes U+FFFD and paging ends."""
        s = self.server
        for mode in ("stdio", "pty"):
            res, out = s.run_to_completion("printf 'ab\\344'; sleep 2; printf '\\270\\226\\n'",
                                           mode=mode, idle_flush_seconds=0.3)
            self.assertEqual(out, "ab世\n", mode)
        res, out = s.run_to_completion("printf 'ab\\344\\270'", mode="stdio")
        self.assertEqual((res["offset"], res["truncated"]), (4, False))
        self.assertEqual(out.replace("\ufffd\ufffd", "\ufffd"), "ab\ufffd")
        t = self.check_result(s.ok("GET", f"/v1/jobs/{res['job_id']}/log/tail"))
        self.assertEqual((t["output"], t["offset"]), ("ab", 2))

    def test_response_shapes_identical_to_pty(self):
        s = self.server
        shapes = {}
        for mode in ("pty", "stdio"):
            r = self.check_result(s.run("echo shape; exit 9", mode=mode))
            jid = r["job_id"]
            last, out = self.wait_done(s, jid)
            self.assertEqual((out, last["exit_code"]), ("shape\n", 9))
            w = self.check_result(s.wait(jid, 0, timeout=0))
            t = self.check_result(s.ok("GET", f"/v1/jobs/{jid}/log/tail"))
            v = self.status(s, jid)
            info = [i for i in s.ok("GET", "/v1/jobs")["jobs"] if i["job_id"] == jid][0]
            self.check_info(info)
            shapes[mode] = (sorted(r), sorted(w), sorted(t), sorted(v), sorted(info),
                            {k: type(v[k]).__name__ for k in v if k != "job_id"},
                            {k: type(w[k]).__name__ for k in w if k != "job_id"})
            self.assertEqual(set(w), RESULT_KEYS)
            self.assertEqual(set(v), STATUS_KEYS)
            self.assertEqual(s.ok("DELETE", f"/v1/jobs/{jid}"), {"job_id": jid, "deleted": True})
        self.assertEqual(shapes["pty"], shapes["stdio"])

    def test_stdio_terminate_and_exit_codes(self):
        s = self.server
        jid = s.run("echo s; sleep 300", mode="stdio", timeout=0.1)["job_id"]
        self.wait_for_output(s, jid, "s\n")
        v = self.check_status_view(s.ok("POST", f"/v1/jobs/{jid}/terminate",
                                        {"grace_seconds": 10}, timeout=60))
        self.assertEqual((v["status"], v["exit_code"], v["offset"]), ("terminated", None, 2))
        for code in (0, 17, 66):
            res, _ = s.run_to_completion(f"exit {code}", mode="stdio")
            self.assertEqual((res["status"], res["exit_code"]), ("exited", code))


if __name__ == "__main__":
    unittest.main(verbosity=2)
