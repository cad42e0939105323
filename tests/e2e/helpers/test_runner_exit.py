"""shellctl-runner-exit against a real SQLite file (docs/layout.md "The binaries", "The
database")."""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from helper_support import HANG_GUARD, RUNNER_EXIT  # noqa: E402

DDL = """CREATE TABLE IF NOT EXISTS jobs (
  job_id TEXT PRIMARY KEY,
  script_path TEXT NOT NULL,
  output_path TEXT NOT NULL,
  cwd TEXT NOT NULL,
  terminal_cols INTEGER NOT NULL DEFAULT 200,
  terminal_rows INTEGER NOT NULL DEFAULT 50,
  status TEXT NOT NULL DEFAULT 'created',
  session_name TEXT NOT NULL,
  pane_target TEXT NOT NULL,
  exit_code INTEGER,
  reason TEXT,
  message TEXT,
  created_at TEXT NOT NULL,
  started_at TEXT,
  ended_at TEXT,
  updated_at TEXT NOT NULL
)"""

T0 = "2025-01-02T03:04:05Z"


class RunnerExit(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="shellctl-runner-exit-")
        self.addCleanup(shutil.rmtree, self.state, True)
        self.db_path = os.path.join(self.state, "shellctl.db")
        db = sqlite3.connect(self.db_path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(DDL)
        db.execute("ALTER TABLE jobs ADD COLUMN mode TEXT NOT NULL DEFAULT 'pty'")
        db.execute("PRAGMA user_version=1")
        db.commit()
        db.close()

    def insert(self, job_id, status="running", exit_code=None, reason=None, message=None,
               ended_at=None):
        db = sqlite3.connect(self.db_path)
        db.execute(
            "INSERT INTO jobs (job_id, script_path, output_path, cwd, status, session_name, "
            "pane_target, exit_code, reason, message, created_at, started_at, ended_at, "
            "updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (job_id, f"jobs/{job_id}/script", f"jobs/{job_id}/output.log", "/w", status,
             f"shellctl-{job_id}", f"shellctl-{job_id}:0.0", exit_code, reason, message, T0,
             T0, ended_at, T0))
        db.commit()
        db.close()

    def row(self, job_id):
        db = sqlite3.connect(self.db_path)
        db.row_factory = sqlite3.Row
        r = db.execute("SELECT * FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        db.close()
        return dict(r) if r else None

    def run_exit(self, *args):
        return subprocess.run([RUNNER_EXIT, *args], capture_output=True, timeout=HANG_GUARD)

    def test_records_the_exit(self):
        self.insert("j1", status="running", reason="x", message="y")
        r = self.run_exit("--state-dir", self.state, "--job-id", "j1", "--exit-code", "17",
                          "--ended-at", "2025-02-03T04:05:06Z")
        self.assertEqual(r.returncode, 0, r.stderr)
        row = self.row("j1")
        self.assertEqual(row["status"], "exited")
        self.assertEqual(row["exit_code"], 17)
        self.assertEqual(row["ended_at"], "2025-02-03T04:05:06Z")
        self.assertEqual(row["updated_at"], "2025-02-03T04:05:06Z")
        self.assertIsNone(row["reason"])
        self.assertIsNone(row["message"])

    def test_helper_overwrites_ended_at_and_records_from_created_and_starting(self):
        for status in ("created", "starting"):
            with self.subTest(status=status):
                self.insert(status, status=status, ended_at="1999-01-01T00:00:00Z")
                r = self.run_exit("-state-dir", self.state, "-job-id", status,
                                  "-exit-code=-1", "-ended-at=2025-02-03T04:05:06Z")
                self.assertEqual(r.returncode, 0, r.stderr)
                row = self.row(status)
                self.assertEqual((row["status"], row["exit_code"], row["ended_at"]),
                                 ("exited", -1, "2025-02-03T04:05:06Z"))

    def test_already_terminal_is_success_without_change(self):
        self.insert("t", status="terminated", exit_code=0, ended_at=T0, reason="r")
        before = self.row("t")
        r = self.run_exit("--state-dir", self.state, "--job-id", "t", "--exit-code", "5",
                          "--ended-at", "2030-01-01T00:00:00Z")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.row("t"), before)

    def test_default_exit_code_is_zero(self):
        self.insert("d")
        r = self.run_exit("--state-dir", self.state, "--job-id", "d", "--ended-at", T0)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.row("d")["exit_code"], 0)

    def test_go_integer_syntax(self):
        for text, value in (("0x1F", 31), ("0o17", 15), ("017", 15), ("0b101", 5),
                            ("+3", 3), ("1_000", 1000), ("-0x10", -16)):
            with self.subTest(text=text):
                self.insert(text)
                r = self.run_exit("--state-dir", self.state, "--job-id", text,
                                  "--exit-code", text, "--ended-at", T0)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(self.row(text)["exit_code"], value)

    def test_unknown_job_is_exit_1(self):
        r = self.run_exit("--state-dir", self.state, "--job-id", "nope", "--ended-at", T0)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, b"shellctl-runner-exit: unknown job id: nope\n")

    def test_missing_required_flags(self):
        for args in ([], ["--state-dir", self.state, "--job-id", "x"],
                     ["--job-id", "x", "--ended-at", T0],
                     ["--state-dir", self.state, "--ended-at", T0],
                     ["--state-dir", "", "--job-id", "x", "--ended-at", T0]):
            with self.subTest(args=args):
                r = self.run_exit(*args)
                self.assertEqual(r.returncode, 1)
                self.assertEqual(r.stderr, b"shellctl-runner-exit: --state-dir, --job-id, and "
                                           b"--ended-at are required\n")

    def test_missing_database_is_exit_1_and_not_created(self):
        empty = tempfile.mkdtemp(prefix="shellctl-runner-exit-empty-")
        self.addCleanup(shutil.rmtree, empty, True)
        r = self.run_exit("--state-dir", empty, "--job-id", "x", "--ended-at", T0)
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.startswith(b"shellctl-runner-exit: "))
        self.assertFalse(os.path.exists(os.path.join(empty, "shellctl.db")))

    def test_bad_flags_are_usage_errors(self):
        self.assertEqual(self.run_exit("--exit-code", "abc").returncode, 2)
        self.assertEqual(self.run_exit("--exit-code", "99999999999999999999").returncode, 2)
        self.assertEqual(self.run_exit("--no-such-flag", "1").returncode, 2)
        self.assertEqual(self.run_exit("--job-id").returncode, 2)

    def test_twelve_concurrent_recorders_first_wins(self):
        self.insert("race")
        procs = []
        for i in range(12):
            procs.append(subprocess.Popen(
                [RUNNER_EXIT, "--state-dir", self.state, "--job-id", "race",
                 "--exit-code", str(100 + i), "--ended-at", f"2025-03-01T00:00:{i:02d}Z",
                 "--sqlite-busy-timeout-ms", "10000"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        for p in procs:
            _, err = p.communicate(timeout=HANG_GUARD)
            self.assertEqual(p.returncode, 0, err)
        row = self.row("race")
        self.assertEqual(row["status"], "exited")
        winner = row["exit_code"] - 100
        self.assertTrue(0 <= winner < 12)
        # One recorder's values, never a mix of two.
        self.assertEqual(row["ended_at"], f"2025-03-01T00:00:{winner:02d}Z")
        self.assertEqual(row["updated_at"], row["ended_at"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
