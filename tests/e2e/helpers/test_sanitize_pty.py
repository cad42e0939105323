"""shellctl-sanitize-pty as a process: bytes in, bytes out (docs/layout.md "The binaries",
docs/jobs.md "The output pipe", D6)."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from helper_support import HANG_GUARD, SANITIZE  # noqa: E402

FFFD = "\ufffd".encode()


def sanitize(data, args=()):
    r = subprocess.run([SANITIZE, *args], input=data, capture_output=True, timeout=HANG_GUARD)
    return r


class Sanitizer(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shellctl-sanitize-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def check(self, data, expected):
        r = sanitize(data)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, expected)
        self.assertEqual(r.stderr, b"")

    def test_reference_rows(self):
        rows = [
            (b"hello\nworld\n", b"hello\nworld\n"),
            (b"\x1b[31mred\x1b[0m\n", b"red\n"),
            (b"50%\r100%\n", b"100%\n"),
            (b"line1\r\nline2\r\n", b"line1\nline2\n"),
            (b"\x1b]0;title\x07visible\n", b"visible\n"),
            (b"no newline", b"no newline"),
            (b"\xffa\n", FFFD + b"a\n"),
            (b"before\x1b]0;title\x1b\\after\rreplace\r", b"replace"),
        ]
        for data, expected in rows:
            with self.subTest(data=data):
                self.check(data, expected)

    def test_two_byte_escapes_removed_whole(self):
        self.check(b"a\x1b(Bb\x1b)0c\x1b=d\x1b>e\x1b7f\x1b8g\x1bMh\x1bci\x1b#8j\n",
                   b"abcdefghij\n")

    def test_utf8_split_across_writes(self):
        # Separate writes with a flush in between; however the reads fall, the character
        # must come out whole.
        text = "x\u00e9\u20ac\U0001F600y\n".encode()
        p = subprocess.Popen([SANITIZE], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for i in range(len(text)):
            p.stdin.write(text[i:i + 1])
            p.stdin.flush()
        out, _ = p.communicate(timeout=HANG_GUARD)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(out, text)

    def test_invalid_bytes_and_eof_inside_a_character(self):
        self.check(b"a\x80b\xc0\x80c\n\xe2\x82", b"a" + FFFD + b"b" + FFFD + FFFD + b"c\n" +
                   FFFD + FFFD)

    def test_large_input(self):
        line = b"\x1b[32mok\x1b[0m progress 10%\rprogress 100%\r\n"
        data = line * (20 * 1024 * 1024 // len(line))
        r = sanitize(data)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout, b"progress 100%\n" * (len(data) // len(line)))

    def test_end_marker_is_acknowledged_once_read_and_never_printed(self):
        # The runner's handshake: the end file appears only after the marker has been read
        # (so everything before it was), even with the marker split across reads; a marker
        # with another nonce is not it.
        end = os.path.join(self.tmp, "end")
        nonce = "0f1e2d3c4b5a6978"
        p = subprocess.Popen([SANITIZE, "--end-marker", nonce, "--end-file", end],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        p.stdin.write(b"last words\n\x1b]shellctl-end;ffffffffffffffff\x07")
        p.stdin.flush()
        marker = f"\x1b]shellctl-end;{nonce}\x07".encode()
        for i in range(len(marker)):
            time.sleep(0.02)
            self.assertFalse(os.path.exists(end), i)
            p.stdin.write(marker[i:i + 1])
            p.stdin.flush()
        deadline = time.monotonic() + HANG_GUARD
        while not os.path.exists(end) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertTrue(os.path.exists(end))
        out, _ = p.communicate(b"after\n", timeout=HANG_GUARD)
        self.assertEqual((p.returncode, out), (0, b"last words\nafter\n"))

    def test_no_end_file_without_the_marker_flags(self):
        end = os.path.join(self.tmp, "end")
        r = sanitize(b"x\x1b]shellctl-end;abc\x07\n", ["--end-file", end])
        self.assertEqual((r.returncode, r.stdout), (0, b"x\n"))
        self.assertFalse(os.path.exists(end))

    def test_ready_file_is_created_and_truncated_before_reading(self):
        ready = os.path.join(self.tmp, ".pipe-ready")
        with open(ready, "w") as f:
            f.write("stale")
        p = subprocess.Popen([SANITIZE, "--ready-file", ready], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
        # Nothing was written to stdin yet: the file must get truncated regardless.
        deadline = time.monotonic() + HANG_GUARD
        while os.path.getsize(ready) != 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(os.path.getsize(ready), 0)
        out, _ = p.communicate(b"x\n", timeout=HANG_GUARD)
        self.assertEqual((p.returncode, out), (0, b"x\n"))

    def test_ready_file_flag_forms(self):
        for args in (["-ready-file", "R"], ["--ready-file=R"], ["-ready-file=R"]):
            with self.subTest(args=args):
                ready = os.path.join(self.tmp, "ready")
                if os.path.exists(ready):
                    os.unlink(ready)
                r = sanitize(b"a\n", [a.replace("R", ready) for a in args])
                self.assertEqual((r.returncode, r.stdout), (0, b"a\n"))
                self.assertTrue(os.path.exists(ready))

    def test_drained_and_failed_markers(self):
        drained, failed = os.path.join(self.tmp, "d"), os.path.join(self.tmp, "f")
        r = sanitize(b"a\n", ["--drained-file", drained, "--failed-file", failed])
        self.assertEqual((r.returncode, r.stdout), (0, b"a\n"))
        self.assertEqual((os.path.exists(drained), os.path.exists(failed)), (True, False))
        os.unlink(drained)
        with open("/dev/full", "wb") as full:
            r = subprocess.run([SANITIZE, "--drained-file", drained, "--failed-file", failed],
                               input=b"line\n", stdout=full, stderr=subprocess.PIPE,
                               timeout=HANG_GUARD)
        self.assertEqual(r.returncode, 1)
        self.assertEqual((os.path.exists(drained), os.path.exists(failed)), (False, True))

    def test_unknown_flag_is_usage_error(self):
        r = sanitize(b"", ["--bogus"])
        self.assertEqual(r.returncode, 2)

    def test_unwritable_ready_file_is_exit_1(self):
        r = sanitize(b"a\n", ["--ready-file", os.path.join(self.tmp, "missing", "ready")])
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.startswith(b"shellctl-sanitize-pty: "), r.stderr)

    def test_write_error_is_exit_1(self):
        with open("/dev/full", "wb") as full:
            r = subprocess.run([SANITIZE], input=b"line\n", stdout=full,
                               stderr=subprocess.PIPE, timeout=HANG_GUARD)
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.startswith(b"shellctl-sanitize-pty: "), r.stderr)

    def test_empty_input(self):
        self.check(b"", b"")


if __name__ == "__main__":
    unittest.main(verbosity=2)
