"""GET /metrics (docs/api.md "Metrics"): the Prometheus text format, checked by Prometheus's own
`promtool check metrics`, and figures that match what the test did to a real server: requests by
route and status, latency histograms, jobs by status and mode, job start latency and timeline,
output and input bytes, a snapshot's bytes, GC sweeps, connections, RSS and fds."""
import re
import subprocess
import time
import unittest

from harness import Server

TOKEN = "metrics-token"


def parse(text):
    """{(name, frozenset(labels)): value} for every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)', line)
        assert m, f"not a sample line: {line!r}"
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


class MetricsTest(unittest.TestCase):
    # A server per test: the figures count from its start.
    def setUp(self):
        self.server = Server(token=TOKEN)  # started by the constructor

    def tearDown(self):
        self.server.close()

    def scrape(self):
        status, headers, body = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200, body)
        self.assertEqual(headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        return body.decode()

    def test_requires_the_token(self):
        status, _, body = self.server.request("GET", "/metrics", auth=False)
        self.assertEqual((status, body["error"]["code"]), (401, "unauthorized"))

    def test_promtool_accepts_it_and_the_figures_match(self):
        s = self.server
        pty = s.run_to_completion("printf 'hello\\n'")[0]
        stdio = s.run_to_completion("printf 'abc'; exit 4", mode="stdio")[0]
        self.assertEqual((pty["exit_code"], stdio["exit_code"]), (0, 4))
        reader = s.run("read line; echo got:$line", timeout=0.5)
        typed = "typed-text\n"
        s.ok("POST", f"/v1/jobs/{reader['job_id']}/input", {"text": typed, "timeout": 10})
        status, _, archive = s.request("POST", "/v1/snapshot/save", {})
        self.assertEqual(status, 200)
        s.request("GET", "/v1/jobs/0123456789abcdef")  # a 404 job_not_found
        s.request("GET", "/nowhere")                    # a 404 with no route
        # The reader's output becomes final once its pipe drains: wait for that.
        end = time.monotonic() + 30
        while time.monotonic() < end:
            done = s.wait(reader["job_id"], timeout=5)
            if done["done"]:
                break
        self.assertTrue(done["done"], done)

        text = self.scrape()
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                               text=True, timeout=60)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertEqual(check.stdout + check.stderr, "", "promtool lint findings")

        m = parse(text)
        self.assertGreaterEqual(value(m, "shellctl_http_requests_total", method="POST",
                                      route="/v1/jobs/run", status="200"), 3)
        self.assertEqual(value(m, "shellctl_http_requests_total", method="GET",
                               route="/v1/jobs/{job_id}", status="404"), 1)
        self.assertEqual(value(m, "shellctl_http_requests_total", method="GET", route="-", status="404"), 1)
        self.assertEqual(value(m, "shellctl_http_requests_total", method="POST",
                               route="/v1/snapshot/save", status="200"), 1)
        runs = value(m, "shellctl_http_request_duration_seconds_count", method="POST", route="/v1/jobs/run")
        self.assertGreaterEqual(runs, 3)
        self.assertEqual(value(m, "shellctl_http_request_duration_seconds_bucket", method="POST",
                               route="/v1/jobs/run", le="+Inf"), runs)
        self.assertEqual(value(m, "shellctl_jobs", status="exited", mode="pty"), 2)
        self.assertEqual(value(m, "shellctl_jobs", status="exited", mode="stdio"), 1)
        self.assertEqual(value(m, "shellctl_jobs", status="running", mode="pty"), 0)
        self.assertEqual(value(m, "shellctl_job_start_duration_seconds_count", mode="pty"), 2)
        self.assertEqual(value(m, "shellctl_job_start_duration_seconds_count", mode="stdio"), 1)
        self.assertGreater(value(m, "shellctl_job_start_duration_seconds_sum", mode="pty"), 0)
        # hello\n + abc + the reader's "typed-text" echo and "got:typed-text" line.
        self.assertEqual(value(m, "shellctl_job_input_bytes_total"), len(typed))
        self.assertGreaterEqual(value(m, "shellctl_job_output_bytes_total"),
                                len("hello\n") + len("abc") + len("got:typed-text\n"))
        self.assertEqual(value(m, "shellctl_snapshots_total", kind="save", outcome="ok"), 1)
        self.assertEqual(value(m, "shellctl_snapshot_bytes_total", kind="save"), len(archive))
        self.assertEqual(value(m, "shellctl_snapshot_duration_seconds_count", kind="save"), 1)
        self.assertGreaterEqual(value(m, "shellctl_gc_sweeps_total"), 1)  # one at startup
        self.assertGreaterEqual(value(m, "shellctl_http_connections_open"), 1)  # this scrape's
        self.assertGreaterEqual(value(m, "shellctl_http_connections_accepted_total"), 8)
        # The timeline: each finished job reports each mark once, in the order of its life.
        pty_marks = ["files_written", "row_inserted", "starting_stored", "watch_set", "session_created",
                     "pipe_ready", "gate_opened", "running_stored", "exit_seen", "output_final",
                     "done_answered"]
        at = {}
        for mark in pty_marks:
            n = value(m, "shellctl_job_timeline_seconds_count", mode="pty", mark=mark)
            self.assertEqual(n, 2, mark)  # the printf job and the reader
            at[mark] = value(m, "shellctl_job_timeline_seconds_sum", mode="pty", mark=mark)
        for earlier, later in zip(pty_marks[:8], pty_marks[1:9]):
            self.assertLessEqual(at[earlier], at[later], (earlier, later))
        self.assertLessEqual(at["exit_seen"], at["done_answered"])
        self.assertLessEqual(at["output_final"], at["done_answered"])
        self.assertEqual(value(m, "shellctl_job_timeline_seconds_count", mode="stdio", mark="done_answered"), 1)
        self.assertIsNone(value(m, "shellctl_job_timeline_seconds_count", mode="stdio", mark="pipe_ready"))
        self.assertGreater(value(m, "process_resident_memory_bytes"), 1 << 20)
        self.assertGreater(value(m, "process_open_fds"), 3)
        self.assertLess(abs(value(m, "process_start_time_seconds") - time.time()), 3600)

    def test_deleted_jobs_leave_the_gauge(self):
        s = self.server
        job = s.run_to_completion("true", mode="stdio")[0]["job_id"]
        before = value(parse(self.scrape()), "shellctl_jobs", status="exited", mode="stdio")
        s.ok("DELETE", f"/v1/jobs/{job}")
        after = value(parse(self.scrape()), "shellctl_jobs", status="exited", mode="stdio")
        self.assertEqual(after, before - 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
