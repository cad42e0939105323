"""The request log and X-Request-Id: one line per answered request on stderr, JSON lines a
collector parses (or text), with the request id the client sent (when it is a plain token)
or a generated one, echoed on the answer; never the token, never a request body."""
import json
import re
import subprocess
import time
import unittest

from harness import SHELLCTL, Server

TOKEN = "log-token-" + "s3cr3t"
MARKER = "body-marker-never-logged"


def json_lines(server, msg=None):
    lines = [json.loads(l) for l in server.read_stderr().splitlines() if l.startswith("{")]
    return [l for l in lines if msg is None or l["msg"] == msg]


def wait_for_lines(server, n, deadline=10, msg="request"):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        lines = json_lines(server, msg)
        if len(lines) >= n:
            return lines
        time.sleep(0.05)
    return json_lines(server, msg)


class JsonLogTest(unittest.TestCase):
    def test_one_json_line_per_answer(self):
        with Server(token=TOKEN, args=["--log-format", "json"]) as s:
            before = len(wait_for_lines(s, 1))  # the harness's own health checks
            status, headers, _ = s.request("GET", "/healthz", headers={"X-Request-Id": "abc-123"})
            self.assertEqual((status, headers["x-request-id"]), (200, "abc-123"))
            res = s.run(f"echo {MARKER}")
            status, headers, _ = s.request("GET", f"/v1/jobs/{res['job_id']}",
                                           headers={"X-Request-Id": "not a token " + "x" * 200})
            generated = headers["x-request-id"]
            self.assertRegex(generated, r"^[0-9a-f]{16}$")
            self.assertEqual(s.request("GET", "/nope")[0], 404)
            self.assertEqual(s.request("GET", "/v1/jobs", auth=False)[0], 401)
            lines = wait_for_lines(s, before + 5)[before:]
            self.assertEqual(len(lines), 5, s.read_stderr())
            for line in lines:
                self.assertEqual(set(line) - {"job_id"},
                                 {"time", "level", "msg", "request_id", "method", "route", "status",
                                  "duration_ms"}, line)
                self.assertRegex(line["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
                self.assertEqual((line["level"], line["msg"]), ("info", "request"))
                self.assertGreaterEqual(line["duration_ms"], 0)
            health, run, status_line, missing, unauthorized = lines
            self.assertEqual((health["request_id"], health["route"], health["status"]),
                             ("abc-123", "/healthz", 200))
            self.assertEqual((run["method"], run["route"], run["job_id"]),
                             ("POST", "/v1/jobs/run", res["job_id"]))
            self.assertEqual((status_line["request_id"], status_line["route"], status_line["job_id"]),
                             (generated, "/v1/jobs/{job_id}", res["job_id"]))
            self.assertEqual((missing["route"], missing["status"]), ("-", 404))
            self.assertEqual((unauthorized["route"], unauthorized["status"]), ("/v1/jobs", 401))
            log = s.read_stderr()
            self.assertNotIn(TOKEN, log)
            self.assertNotIn(MARKER, log)

    def test_every_line_is_json_with_time_level_msg(self):
        with Server(token=TOKEN, args=["--log-format", "json"]) as s:
            s.run_to_completion("echo hi")
            for line in s.read_stderr().splitlines():
                entry = json.loads(line)  # not one line of another shape
                self.assertTrue({"time", "level", "msg"} <= set(entry), entry)
            start = [l for l in json_lines(s) if l["msg"].startswith("shellctl serving on ")]
            self.assertEqual(len(start), 1, s.read_stderr())
            self.assertEqual((start[0]["level"], start[0]["auth"], start[0]["listen"]),
                             ("info", "on", f"127.0.0.1:{s.port}"))
            self.assertEqual(start[0]["state_dir"], s.state_dir)
            self.assertIn("path isolation", start[0]["sandbox"])

    def test_job_lifecycle_events(self):
        with Server(token=TOKEN, args=["--log-format", "json"]) as s:
            job = s.run_to_completion(f"echo {MARKER}; exit 3")[0]["job_id"]
            s.ok("DELETE", f"/v1/jobs/{job}")
            stdio = s.run_to_completion("true", mode="stdio")[0]["job_id"]
            end = time.monotonic() + 10
            while time.monotonic() < end:
                events = [l for l in json_lines(s, "job") if l["job_id"] == job]
                if events and events[-1]["event"] == "deleted":
                    break
                time.sleep(0.05)
            self.assertEqual([e["event"] for e in events],
                             ["created", "starting", "running", "exited", "deleted"], events)
            for e in events:
                self.assertEqual((e["level"], e["mode"]), ("info", "pty"))
                self.assertRegex(e["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertEqual(events[3]["exit_code"], 3)
            self.assertNotIn("exit_code", events[2])
            modes = {e["mode"] for e in json_lines(s, "job") if e["job_id"] == stdio}
            self.assertEqual(modes, {"stdio"})
            log = s.read_stderr()
            self.assertNotIn(MARKER, log)  # never the script
            self.assertNotIn(TOKEN, log)

    def test_ids_are_unique(self):
        with Server(args=["--log-format", "json"]) as s:
            ids = {s.request("GET", "/healthz")[1]["x-request-id"] for _ in range(50)}
            self.assertEqual(len(ids), 50)


class TextAndLevelTest(unittest.TestCase):
    def test_text_format(self):
        with Server(args=["--log-format", "text"]) as s:
            s.request("GET", "/healthz", headers={"X-Request-Id": "t-1"})
            end = time.monotonic() + 10
            while "request t-1" not in s.read_stderr() and time.monotonic() < end:
                time.sleep(0.05)
            self.assertRegex(s.read_stderr(),
                             r"\d{4}-\d\d-\d\dT[\d:.]+Z request t-1 GET /healthz 200 [\d.]+ms\n")
            self.assertIn(f"shellctl serving on 127.0.0.1:{s.port} (auth off, ", s.read_stderr())
            job = s.run_to_completion("exit 5", mode="stdio")[0]["job_id"]
            end = time.monotonic() + 10
            while f"job event=exited job_id={job}" not in s.read_stderr() and time.monotonic() < end:
                time.sleep(0.05)
            self.assertRegex(s.read_stderr(), r"\d{4}-\d\d-\d\dT[\d:.]+Z info job event=exited "
                             f"job_id={job} mode=stdio exit_code=5\n")

    def test_warn_level_logs_no_requests(self):
        with Server(args=["--log-format", "json", "--log-level", "warn"]) as s:
            for _ in range(3):
                self.assertEqual(s.request("GET", "/healthz")[0], 200)
            # The id is still echoed, the answer unchanged.
            self.assertIn("x-request-id", s.request("GET", "/healthz")[1])
            s.stop()
            self.assertEqual(json_lines(s), [])

    def test_bad_values_are_usage_errors(self):
        for args, word in ((["--log-format", "xml"], "-log-format"),
                           (["--log-level", "loud"], "-log-level")):
            r = subprocess.run([SHELLCTL, "serve", "--listen", "127.0.0.1:0"] + args,
                               capture_output=True, text=True, timeout=10)
            self.assertEqual(r.returncode, 2, r)
            self.assertIn(f"for flag {word}", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
