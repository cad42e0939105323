"""stdin for stdio tools, over real HTTP, tmux and a real FIFO: `"stdin": "pipe"` on a stdio
run gives the job a stdin that POST /v1/jobs/{id}/input writes exactly (no terminal, no
echo); `"eof": true` closes it after the text (a PTY job gets its terminal's EOF
character). A stdio job without a pipe reads /dev/null and keeps `409 input_unsupported`,
as the original; so does a pipe once closed. Input bytes count in /metrics."""
import concurrent.futures
import hashlib
import os
import random
import re
import unittest

from harness import Server, wait_until
from jobs_common import RESULT_KEYS

TOKEN = "stdin-token"
PY = "/usr/bin/python3"
ECHO_SERVER = (PY + " -u -c 'import sys\n"
               "for line in sys.stdin: print(\"echo:\" + line.rstrip(\"\\n\"), flush=True)\n"
               "print(\"bye\", flush=True)'")


class PipedStdin(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(token=TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def run_piped(self, script, **fields):
        fields.setdefault("timeout", 0.1)  # (0 would be run's default, 30 s)
        return self.server.ok("POST", "/v1/jobs/run",
                              dict(script=script, mode="stdio", stdin="pipe", **fields))

    def input(self, job_id, text, **fields):
        return self.server.request("POST", f"/v1/jobs/{job_id}/input", dict(text=text, **fields))

    def output(self, job_id):
        return self.server.wait(job_id, 0, timeout=0, output_limit=524288)["output"]

    def full_output(self, job_id):
        """Every byte of a finished job's output, paged."""
        out, offset = [], 0
        while True:
            res = self.server.wait(job_id, offset, timeout=30, output_limit=524288)
            out.append(res["output"])
            offset = res["offset"]
            if res["done"] and not res["truncated"]:
                return "".join(out), res

    def input_bytes_counted(self):
        status, _, body = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        m = re.search(rb"^shellctl_job_input_bytes_total (\d+)", body, re.M)
        return int(m.group(1))

    def test_a_line_echo_server_is_driven_for_a_thousand_round_trips(self):
        job = self.run_piped(ECHO_SERVER)["job_id"]
        offset = 0
        for i in range(1000):
            # Answered as soon as the echo is there and quiet for 20 ms (an agent's choice).
            status, _, res = self.input(job, f"message {i}\n", offset=offset, timeout=10,
                                        idle_flush_seconds=0.02)
            self.assertEqual(status, 200, res)
            self.assertEqual(set(res), RESULT_KEYS)  # the ordinary JobResult
            text, offset = res["output"], res["offset"]
            while f"echo:message {i}\n" not in text:
                more = self.server.wait(job, offset, timeout=10, idle_flush_seconds=0.02)
                text += more["output"]
                offset = more["offset"]
            self.assertEqual(text, f"echo:message {i}\n")  # exactly, and no echo of ours
        status, _, res = self.input(job, "", eof=True, offset=offset, timeout=10)
        self.assertEqual(status, 200, res)
        out, last = self.full_output(job)
        self.assertTrue(out.endswith("echo:message 999\nbye\n"), out[-100:])
        self.assertEqual(last["exit_code"], 0)

    def test_any_utf8_over_several_mib_arrives_byte_for_byte(self):
        rng = random.Random(7)
        # Every plane, NUL and control characters included; about 3 MiB once encoded.
        chars = [chr(c) for c in range(0, 0x250)] + ["\u20ac", "\u4e2d", "\U0001F600", "\U0010FFFF", "\r", "\x00"]
        text = "".join(rng.choice(chars) for _ in range(1_600_000))
        data = text.encode("utf-8")
        self.assertGreater(len(data), 2 << 20)
        before = self.input_bytes_counted()
        job = self.run_piped(PY + " -c 'import hashlib, sys\n"
                             "data = sys.stdin.buffer.read()\n"
                             "print(hashlib.sha256(data).hexdigest(), len(data))'")["job_id"]
        status, _, res = self.input(job, text, eof=True, timeout=30)
        self.assertEqual(status, 200, res)
        out, last = self.full_output(job)
        digest, count = out.split()
        self.assertEqual(digest, hashlib.sha256(data).hexdigest())
        self.assertEqual(int(count), len(data))
        self.assertEqual(last["exit_code"], 0)
        self.assertGreaterEqual(self.input_bytes_counted() - before, len(data))

    def test_eof_ends_cat_and_a_closed_pipe_is_409(self):
        job = self.run_piped("cat; echo cat-ended; sleep 30")["job_id"]
        status, _, res = self.input(job, "last words", eof=True, timeout=10)
        self.assertEqual(status, 200, res)
        wait_until(lambda: "last wordscat-ended\n" in self.output(job), what="cat ended")
        status, _, res = self.input(job, "too late")
        self.assertEqual(status, 409, res)
        self.assertEqual(res["error"]["code"], "input_unsupported")
        self.assertIn("closed", res["error"]["message"])
        self.server.ok("POST", f"/v1/jobs/{job}/terminate", {"grace_seconds": 0})

    def test_stdout_and_stderr_stay_apart(self):
        script = (PY + " -u -c 'import sys\n"
                  "for line in sys.stdin:\n"
                  "    print(\"out:\" + line.strip(), flush=True)\n"
                  "    print(\"err:\" + line.strip(), file=sys.stderr, flush=True)'")
        job = self.run_piped(script)["job_id"]
        for word in ("alpha", "beta"):
            self.assertEqual(self.input(job, word + "\n", timeout=5)[0], 200)
        self.assertEqual(self.input(job, "", eof=True, timeout=10)[0], 200)
        out, _ = self.full_output(job)
        self.assertEqual(out, "out:alpha\nout:beta\n")
        with open(os.path.join(self.server.state_dir, "jobs", job, "stderr.log")) as f:
            self.assertEqual(f.read(), "err:alpha\nerr:beta\n")

    def test_concurrent_inputs_never_interleave(self):
        job = self.run_piped("cat")["job_id"]
        pieces = [chr(ord("a") + k) * 100_000 for k in range(10)]
        with concurrent.futures.ThreadPoolExecutor(10) as pool:
            answers = list(pool.map(lambda p: self.input(job, p, timeout=0), pieces))
        for status, _, res in answers:
            self.assertEqual(status, 200, res)
        self.assertEqual(self.input(job, "", eof=True, timeout=10)[0], 200)
        out, _ = self.full_output(job)
        self.assertEqual(len(out), 1_000_000)
        runs = re.findall(r"(.)\1*", out)
        self.assertEqual(sorted(re.sub(r"(.)\1*", r"\1", out)), sorted("abcdefghij"), "one run per text")
        self.assertEqual(len(runs), 10)

    def test_an_input_the_job_never_reads_is_answered_when_the_job_ends(self):
        text = "x" * (4 << 20)  # more than the pipe holds
        job = self.run_piped("sleep 3; echo slept")["job_id"]
        status, _, res = self.input(job, text, timeout=20)
        self.assertEqual(status, 200, res)
        self.assertTrue(res["done"], res)
        self.assertIn("slept", res["output"])

    def test_without_a_pipe_a_stdio_job_reads_dev_null_and_refuses_input(self):
        for fields in ({}, {"stdin": "null"}):
            res = self.server.ok("POST", "/v1/jobs/run",
                                 dict(script="cat; echo read-nothing; sleep 30", mode="stdio",
                                      timeout=10, idle_flush_seconds=0.3, **fields))
            self.assertEqual(res["output"], "read-nothing\n")
            status, _, body = self.input(res["job_id"], "hello\n")
            self.assertEqual(status, 409, body)
            self.assertEqual(body["error"]["code"], "input_unsupported")
            self.server.ok("POST", f"/v1/jobs/{res['job_id']}/terminate", {"grace_seconds": 0})

    def test_a_pipe_is_for_stdio_jobs_and_is_named_pipe(self):
        for fields in ({"stdin": "pipe"}, {"stdin": "pipe", "mode": "pty"},
                       {"stdin": "file", "mode": "stdio"}, {"stdin": "/etc/passwd", "mode": "stdio"}):
            status, _, res = self.server.request("POST", "/v1/jobs/run", dict(script="cat", **fields))
            self.assertEqual(status, 422, (fields, res))
            self.assertEqual(res["error"]["code"], "validation_error")
        status, _, res = self.server.request("POST", "/v1/jobs/run",
                                             {"script": "cat", "mode": "stdio", "stdin": 1})
        self.assertEqual(status, 400, res)

    def test_a_pty_job_gets_its_terminals_eof(self):
        res = self.server.ok("POST", "/v1/jobs/run", {"script": "cat >/dev/null; echo pty-ended",
                                                      "timeout": 0.3})
        status, _, body = self.input(res["job_id"], "typed\n", eof=True, timeout=10)
        self.assertEqual(status, 200, body)
        wait_until(lambda: "pty-ended" in self.output(res["job_id"]), what="cat saw EOF")

    def test_the_job_cannot_reach_the_pipe_by_its_path(self):
        """Escape test: the FIFO lies in the state dir, which no job sees."""
        job = self.run_piped("cat")["job_id"]
        fifo = os.path.join(self.server.state_dir, "jobs", job, "stdin.pipe")
        self.assertTrue(os.path.exists(fifo))
        other = self.server.ok("POST", "/v1/jobs/run",
                               {"script": f"echo injected > {fifo} && echo wrote; ls {fifo}; true",
                                "mode": "stdio", "timeout": 10})
        self.assertNotIn("wrote", other["output"])
        self.assertEqual(self.input(job, "", eof=True, timeout=10)[0], 200)
        out, _ = self.full_output(job)
        self.assertEqual(out, "")


class PipedStdinAcrossRestarts(unittest.TestCase):
    def test_a_restart_closes_the_pipe_and_input_is_then_409(self):
        with Server(token=TOKEN) as server:
            res = server.ok("POST", "/v1/jobs/run",
                            {"script": "cat; echo saw-eof; sleep 30", "mode": "stdio",
                             "stdin": "pipe", "timeout": 0.1})
            job = res["job_id"]
            server.restart()
            wait_until(lambda: "saw-eof" in server.wait(job, 0, timeout=0)["output"],
                       what="the job read EOF")
            status, _, body = server.request("POST", f"/v1/jobs/{job}/input", {"text": "x"})
            self.assertEqual(status, 409, body)
            self.assertEqual(body["error"]["code"], "input_unsupported")
            self.assertIn("closed", body["error"]["message"])
            server.ok("POST", f"/v1/jobs/{job}/terminate", {"grace_seconds": 0})


if __name__ == "__main__":
    unittest.main(verbosity=2)
