"""Shared helpers for the tests/e2e/jobs suites (stdlib only).

Shapes and error checks used by every jobs test file. The server is always the real
`shellctl serve` started by tests/support/harness.py.
"""
import os
import re
import subprocess
import time
import unittest
import uuid

from harness import Server, ServerTestCase  # noqa: F401  (re-exported)

STATUSES = {"created", "starting", "running", "exited", "terminated", "failed", "lost"}
TERMINAL = {"exited", "terminated", "failed", "lost"}
RESULT_KEYS = {"job_id", "done", "status", "exit_code", "output_path", "output", "offset",
               "truncated"}
STATUS_KEYS = {"job_id", "status", "done", "exit_code", "created_at", "started_at",
               "ended_at", "offset"}
INFO_REQUIRED = {"job_id", "status", "created_at"}
INFO_OPTIONAL = {"started_at", "ended_at"}
TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
ID_RE = re.compile(r"^[0-9a-f]{16}$")
MAX_LIMIT = 524288
PY3 = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else None


def marker():
    return "jobse2e" + uuid.uuid4().hex


def sleeper(mk=None):
    """A unique sleep command line for pgrep -f: returns (shell snippet, [patterns]).
    `sh -c '...; true'` cannot be exec-optimised away, and the sleep's own argv is unique."""
    mk = mk or marker()
    secs = "3000.%09d" % (uuid.uuid4().int % 10 ** 9)
    return f"exec sh -c 'sleep {secs}; true' {mk}", [mk, f"sleep {secs}"]


def kill_all(patterns):
    for pat in patterns:
        for pid in pgrep(pat):
            try:
                os.kill(pid, 9)
            except OSError:
                pass


class JobsTestCase(unittest.TestCase):
    """Assertion helpers for the job API shapes."""

    # -- shapes ------------------------------------------------------------------------
    def check_result(self, r, server=None):
        self.assertIsInstance(r, dict, r)
        self.assertEqual(set(r), RESULT_KEYS, r)
        self.assertRegex(r["job_id"], ID_RE)
        self.assertIsInstance(r["done"], bool)
        self.assertIn(r["status"], STATUSES)
        self.assertEqual(r["done"], r["status"] in TERMINAL, r)
        if r["exit_code"] is not None:
            self.assertIsInstance(r["exit_code"], int)
            self.assertNotIsInstance(r["exit_code"], bool)
        if r["status"] in ("terminated", "failed", "lost"):
            self.assertIsNone(r["exit_code"], f"D3: {r}")
        if r["status"] == "exited":
            self.assertIsInstance(r["exit_code"], int, r)
        if not r["done"]:
            self.assertIsNone(r["exit_code"], r)
        self.assertIsInstance(r["output_path"], str)
        self.assertTrue(os.path.isabs(r["output_path"]), r["output_path"])
        self.assertTrue(r["output_path"].endswith(f"/jobs/{r['job_id']}/output.log"), r)
        if server is not None:
            self.assertEqual(r["output_path"], os.path.join(
                os.path.abspath(server.state_dir), "jobs", r["job_id"], "output.log"))
        self.assertIsInstance(r["output"], str)
        self.assertIsInstance(r["offset"], int)
        self.assertGreaterEqual(r["offset"], 0)
        self.assertIsInstance(r["truncated"], bool)
        return r

    def check_status_view(self, v):
        self.assertIsInstance(v, dict, v)
        self.assertEqual(set(v), STATUS_KEYS, v)
        self.assertRegex(v["job_id"], ID_RE)
        self.assertIn(v["status"], STATUSES)
        self.assertEqual(v["done"], v["status"] in TERMINAL, v)
        self.assertRegex(v["created_at"], TIME_RE)
        for k in ("started_at", "ended_at"):
            if v[k] is not None:
                self.assertRegex(v[k], TIME_RE)
        if v["done"]:
            self.assertRegex(v["ended_at"] or "", TIME_RE, v)
        else:
            self.assertIsNone(v["ended_at"], v)
            self.assertIsNone(v["exit_code"], v)
        if v["status"] in ("terminated", "failed", "lost"):
            self.assertIsNone(v["exit_code"], f"D3: {v}")
        self.assertIsInstance(v["offset"], int)
        self.assertGreaterEqual(v["offset"], 0)
        return v

    def check_info(self, i):
        self.assertIsInstance(i, dict, i)
        self.assertTrue(INFO_REQUIRED <= set(i) <= INFO_REQUIRED | INFO_OPTIONAL, i)
        self.assertIn(i["status"], STATUSES)
        for k in ("created_at", "started_at", "ended_at"):
            if k in i:
                self.assertIsInstance(i[k], str, f"{k} must be omitted, not null: {i}")
                self.assertRegex(i[k], TIME_RE)
        return i

    # -- errors ------------------------------------------------------------------------
    def assert_error(self, server, method, path, body=None, status=None, code=None,
                     message=None, **kw):
        st, hdrs, data = server.request(method, path, body, **kw)
        self.assert_envelope(st, hdrs, data, status, code, message, f"{method} {path}")
        return data

    def assert_envelope(self, st, hdrs, data, status, code, message=None, what=""):
        self.assertEqual(st, status, f"{what}: {st} {data!r}")
        self.assertIn("application/json", hdrs.get("content-type", ""), f"{what}: {hdrs}")
        self.assertIsInstance(data, dict, f"{what}: body not JSON: {data!r}")
        self.assertEqual(set(data), {"error"}, data)
        self.assertEqual(set(data["error"]), {"code", "message"}, data)
        self.assertEqual(data["error"]["code"], code, f"{what}: {data}")
        self.assertIsInstance(data["error"]["message"], str)
        if message is not None:
            self.assertEqual(data["error"]["message"], message, f"{what}: {data}")

    # -- jobs --------------------------------------------------------------------------
    def wait_done(self, server, job_id, deadline=120, **fields):
        """Pages from 0 until done and not truncated. Returns (last, output)."""
        end = time.monotonic() + deadline
        offset, out = 0, []
        while True:
            r = self.check_result(server.wait(job_id, offset, timeout=30, **fields))
            self.assertGreaterEqual(r["offset"], offset)
            out.append(r["output"])
            offset = r["offset"]
            if r["done"] and not r["truncated"]:
                return r, "".join(out)
            self.assertLess(time.monotonic(), end, f"job {job_id} not done: {r}")

    def wait_for_output(self, server, job_id, needle, offset=0, deadline=60):
        """Waits until the output from `offset` contains needle. Returns (text, offset, last)."""
        end = time.monotonic() + deadline
        text = ""
        while True:
            r = self.check_result(server.wait(job_id, offset, timeout=5))
            text += r["output"]
            offset = r["offset"]
            if needle in text:
                return text, offset, r
            if r["done"] and not r["truncated"]:
                self.fail(f"job {job_id} ended without {needle!r}: {text!r} {r}")
            self.assertLess(time.monotonic(), end, f"no {needle!r} in {text!r}")

    def status(self, server, job_id):
        return self.check_status_view(server.ok("GET", f"/v1/jobs/{job_id}"))

    def poll_status(self, server, job_id, pred, deadline=60):
        end = time.monotonic() + deadline
        while True:
            v = self.status(server, job_id)
            if pred(v):
                return v
            self.assertLess(time.monotonic(), end, f"status never matched: {v}")
            time.sleep(0.1)

    def force_delete(self, server, job_id, grace=1):
        server.request("DELETE", f"/v1/jobs/{job_id}?force=true&grace_seconds={grace}",
                       timeout=grace + 60)


def pgrep(pattern):
    """PIDs whose command line contains pattern (pgrep -f), excluding ourselves."""
    p = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return [int(x) for x in p.stdout.split() if int(x) != os.getpid()]


def wait_gone(pattern, deadline=10):
    """True once no process matches; pattern may be a string or a list of strings."""
    pats = [pattern] if isinstance(pattern, str) else list(pattern)
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if not any(pgrep(p) for p in pats):
            return True
        time.sleep(0.1)
    return not any(pgrep(p) for p in pats)


class SharedServerTestCase(JobsTestCase, ServerTestCase):
    """JobsTestCase with one default server for the whole class (cls.server)."""


def cgroup_root_of(server):
    """The job root the server announced at startup ("..., cgroup <dir>, ...")."""
    m = re.search(r"\), cgroup (/[^,\s\"]+)", server.read_stderr())
    return m.group(1) if m else None
