"""Byte-exact UTF-8 paging of large outputs in PTY and stdio mode (D6, docs/api.md "Long-polls").

The job generates ~20 MB of mixed 1/2/3/4-byte UTF-8 deterministically; the test computes
the same text with the same generator code and compares every window byte for byte.
"""
import time
import unittest

from jobs_common import JobsTestCase, Server, PY3, SharedServerTestCase

# Shared by the job (embedded in its script) and the test (exec'd here).
GENERATOR = r'''
def lines(total):
    alphabet = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?-_+=/"
                "éüßñøçÅΩπж" "世界漢字日本語中文한국" "😀🚀🎉𝄞🐍🌍")
    seed = 12345
    base = []
    for _ in range(8192):
        seed = (seed * 1103515245 + 12345) % 2147483648
        base.append(alphabet[(seed >> 8) % len(alphabet)])
    base = "".join(base)
    size, i = 0, 0
    while size < total:
        start = (i * 977) % 4096
        width = 200 + (i * 131) % 1800
        line = ("%07d|" % i) + base[start:start + width] + "\n"
        size += len(line.encode())
        i += 1
        yield line
'''


def expected_bytes(total):
    ns = {}
    exec(GENERATOR, ns)
    return "".join(ns["lines"](total)).encode()


def job_script(total):
    return (f"#!{PY3}\nimport sys\n{GENERATOR}\nout = sys.stdout.buffer\n"
            f"buf = []\nfor ln in lines({total}):\n"
            "    buf.append(ln.encode())\n"
            "    if len(buf) >= 64:\n"
            "        out.write(b''.join(buf)); buf = []\n"
            "out.write(b''.join(buf))\nout.flush()\n")


@unittest.skipUnless(PY3, "no /usr/bin/python3")
class LargeUtf8PagingTest(JobsTestCase):
    TOTAL = 20 * 1024 * 1024

    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.expected = expected_bytes(cls.TOTAL)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def page(self, jid, start, limit, expected, stop=None, deadline=1200):
        """Pages from `start` with `limit` until done (or offset >= stop); checks each window
        against the expected bytes. Returns the final offset."""
        s = self.server
        end = time.monotonic() + deadline
        off = start
        while True:
            r = self.check_result(s.wait(jid, off, timeout=30, output_limit=limit))
            got = r["output"].encode()
            self.assertNotIn("\ufffd", r["output"])
            self.assertEqual(r["offset"], off + len(got),
                             f"offset must advance by the window's bytes at {off}")
            self.assertEqual(got, expected[off:r["offset"]], f"window at {off} differs")
            self.assertLessEqual(len(got), max(limit, 4))
            if r["output"]:
                self.assertGreater(r["offset"], off)
                # the window ends on a character boundary of the expected text
                nxt = expected[r["offset"]:r["offset"] + 1]
                self.assertFalse(nxt and (nxt[0] & 0xC0) == 0x80, f"split char at {r['offset']}")
            elif not r["done"]:
                self.assertFalse(r["truncated"], f"stalled at {off}: {r}")
            off = r["offset"]
            if stop is not None and off >= stop:
                return off
            if r["done"] and not r["truncated"]:
                return off
            self.assertLess(time.monotonic(), end, f"paging did not finish (at {off})")

    def run_large(self, mode):
        s = self.server
        res = self.check_result(s.run(job_script(self.TOTAL), mode=mode, timeout=1,
                                      output_limit=4099))
        jid = res["job_id"]
        got = res["output"].encode()
        self.assertEqual(got, self.expected[:len(got)])
        self.assertEqual(res["offset"], len(got))
        off = self.page(jid, res["offset"], 4099, self.expected)
        self.assertEqual(off, len(self.expected))
        last = self.status(s, jid)
        self.assertEqual((last["status"], last["exit_code"], last["offset"]),
                         ("exited", 0, len(self.expected)))
        # a second, tiny-window pass over a few regions of the finished log
        for start in (0, 1_000_003, len(self.expected) - 30_000):
            # align the start to a character boundary as a client cursor would be
            while (self.expected[start] & 0xC0) == 0x80:
                start += 1
            self.page(jid, start, 7, self.expected, stop=start + 30_000)
        # cursor in the middle of a character: the continuation bytes are skipped
        mid = next(i for i in range(5000, 100000) if (self.expected[i] & 0xC0) == 0x80)
        r = self.check_result(s.wait(jid, mid, timeout=0, output_limit=64))
        skip = 0
        while (self.expected[mid + skip] & 0xC0) == 0x80:
            skip += 1
        self.assertEqual(r["output"].encode(), self.expected[mid + skip:r["offset"]])
        s.ok("DELETE", f"/v1/jobs/{jid}")

    def test_pty_20mb_mixed_utf8(self):
        self.run_large("pty")

    def test_stdio_20mb_mixed_utf8(self):
        self.run_large("stdio")


@unittest.skipUnless(PY3, "no /usr/bin/python3")
class SmallWindowPagingTest(SharedServerTestCase):
    """A full pass with output_limit 7 (and 1..4) over a smaller mixed output."""

    def full_pass(self, mode, limit):
        s = self.server
        total = 40_000
        expected = expected_bytes(total)
        res = s.run(job_script(total), mode=mode, timeout=30, output_limit=limit)
        jid = res["job_id"]
        chunks, off, r, n = [res["output"].encode()], res["offset"], res, 0
        while not r["done"] or r["truncated"]:
            r = self.check_result(s.wait(jid, off, timeout=30, output_limit=limit))
            got = r["output"].encode()
            self.assertEqual(got, expected[off:r["offset"]])
            if r["truncated"]:
                self.assertGreater(r["offset"], off, "paging stalled")
            self.assertLessEqual(len(got), max(limit, 4))
            chunks.append(got)
            off = r["offset"]
            n += 1
        self.assertEqual(b"".join(chunks), expected)
        self.assertEqual(r["exit_code"], 0)
        return n

    def test_pty_limit_7(self):
        self.full_pass("pty", 7)

    def test_stdio_limit_7(self):
        self.full_pass("stdio", 7)

    def test_stdio_limits_1_to_4(self):
        for limit in (1, 2, 3, 4):
            self.full_pass("stdio", limit)

    def test_spec_example_windows(self):
        s = self.server
        res, _ = s.run_to_completion("printf 'A\\344\\270\\226\\347\\225\\214B'", mode="stdio")
        jid = res["job_id"]
        for off, limit, out, new_off, trunc in [(0, 4, "A世", 4, True), (2, 4, "界", 7, True),
                                                (1, 4, "世", 4, True), (7, 4, "B", 8, False),
                                                (8, 4, "", 8, False), (0, 1, "A", 1, True),
                                                (1, 1, "世", 4, True)]:
            r = self.check_result(s.wait(jid, off, timeout=0, output_limit=limit))
            self.assertEqual((r["output"], r["offset"], r["truncated"]), (out, new_off, trunc),
                             (off, limit))
        t = self.check_result(s.ok("GET", f"/v1/jobs/{jid}/log/tail?output_limit=5"))
        self.assertEqual((t["output"], t["offset"], t["truncated"]), ("界B", 8, False))


if __name__ == "__main__":
    unittest.main(verbosity=2)
