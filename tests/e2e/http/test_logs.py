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


def json_lines(server):
    return [json.loads(l) for l in server.read_stderr().splitlines() if l.startswith("{")]


def wait_for_lines(server, n, deadline=10):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        lines = json_lines(server)
        if len(lines) >= n:
            return lines
        time.sleep(0.05)
    return json_lines(server)


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
