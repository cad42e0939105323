"""A prompt without a newline is shown, over real HTTP, tmux and the kernel's view of the
terminal: while a PTY job waits for its terminal, the bytes of its unfinished last line
are part of the answer (`/wait` with `return_on_input_wait`, an idle flush, a run's own
answer), offsets count them as the log will hold them, a window never splits a UTF-8
character, and the next window starts after them. A line that is not a prompt (the job
prints without a newline and goes on working) stays out until it is finished."""
import os
import unittest

from harness import Server, wait_until

TOKEN = "prompt-token"


class Prompts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(token=TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def ask(self, script, prompt):
        """Runs `script`; the first answer (return_on_input_wait) must show `prompt`."""
        res = self.server.ok("POST", "/v1/jobs/run",
                             {"script": script, "timeout": 20, "return_on_input_wait": True})
        if prompt not in res["output"]:  # the run's answer came before the prompt was read
            more = self.server.ok("POST", f"/v1/jobs/{res['job_id']}/wait",
                                  {"offset": res["offset"], "timeout": 20, "return_on_input_wait": True})
            res = dict(more, output=res["output"] + more["output"])
        self.assertFalse(res["done"], res)
        self.assertTrue(res["output"].endswith(prompt), res)
        return res

    def answer(self, res, text):
        """Types `text` after the prompt; returns the whole output, paged from the offset
        the prompt's answer gave, and checks it against the log byte for byte."""
        job = res["job_id"]
        out, offset = res["output"], res["offset"]
        ans = self.server.ok("POST", f"/v1/jobs/{job}/input", {"text": text, "offset": offset, "timeout": 20})
        out += ans["output"]
        offset = ans["offset"]
        while not ans["done"] or ans["truncated"]:
            ans = self.server.wait(job, offset, timeout=20)
            out += ans["output"]
            offset = ans["offset"]
        with open(os.path.join(self.server.state_dir, "jobs", job, "output.log"), encoding="utf-8") as f:
            self.assertEqual(out, f.read())  # the prompt's bytes were counted where the log has them
        self.assertEqual(offset, len(out.encode()))
        return out

    def test_read_p(self):
        res = self.ask("read -p '[y/N] ' a; echo \"answer=$a\"", "[y/N] ")
        self.assertEqual(res["offset"], len(res["output"].encode()))
        out = self.answer(res, "y\n")
        self.assertTrue(out.endswith("[y/N] y\nanswer=y\n"), out)

    def test_python_input(self):
        res = self.ask("/usr/bin/python3 -c 'n = input(\"Name: \"); print(\"hello\", n)'", "Name: ")
        out = self.answer(res, "Ada\n")
        self.assertTrue(out.endswith("Name: Ada\nhello Ada\n"), out)

    def test_a_sudo_style_prompt_on_dev_tty(self):
        res = self.ask("printf 'secret for root: ' > /dev/tty; read -r pw < /dev/tty; echo \"len=${#pw}\"",
                       "secret for root: ")
        out = self.answer(res, "hunter2\n")
        self.assertIn("len=7", out)

    def test_a_password_prompt_without_echo(self):
        res = self.ask("stty -echo; printf 'Password: '; read -r pw; stty echo; echo; echo \"len=${#pw}\"",
                       "Password: ")
        out = self.answer(res, "hunter2\n")
        self.assertNotIn("hunter2", out)
        self.assertIn("len=7", out)

    def test_an_idle_flush_shows_it_without_asking_for_input_waits(self):
        res = self.server.ok("POST", "/v1/jobs/run",
                             {"script": "read -p 'Continue? ' a; echo done-$a", "timeout": 20,
                              "idle_flush_seconds": 0.3})
        if "Continue? " not in res["output"]:
            res = self.server.wait(res["job_id"], res["offset"], timeout=20, idle_flush_seconds=0.3)
        self.assertTrue(res["output"].endswith("Continue? "), res)
        self.answer(res, "yes\n")

    def test_a_window_never_splits_a_character_of_the_prompt(self):
        prompt = "Größe in €: "
        res = self.ask(f"read -p '{prompt}' a; echo \"=$a\"", prompt)
        job = res["job_id"]
        # Paged again from the start, three bytes at a time: whole characters only, and
        # together the prompt.
        out, offset = "", 0
        while True:
            w = self.server.wait(job, offset, timeout=0, output_limit=3)
            self.assertTrue(w["output"] or not w["truncated"], w)
            out += w["output"]
            if w["offset"] == offset:
                break
            offset = w["offset"]
        self.assertTrue(out.endswith(prompt), out)
        self.assertEqual(offset, len(out.encode()))
        # A wait from the offset after the prompt is valid and has nothing new yet.
        w = self.server.wait(job, offset, timeout=0)
        self.assertEqual((w["output"], w["offset"]), ("", offset))
        self.answer(res, "42\n")

    def test_an_unfinished_line_of_a_working_job_stays_out(self):
        res = self.server.ok("POST", "/v1/jobs/run",
                             {"script": "printf 'working'; sleep 2; echo ' done'", "timeout": 1,
                              "return_on_input_wait": True})
        self.assertEqual(res["output"], "")  # not waiting for its terminal: not a prompt
        self.assertEqual(res["offset"], 0)
        last = self.server.wait(res["job_id"], 0, timeout=20)
        while not last["done"]:
            last = self.server.wait(res["job_id"], 0, timeout=20)
        self.assertEqual(last["output"], "working done\n")

    def test_the_offset_past_a_prompt_stays_valid_after_the_job_ends_otherwise(self):
        """The prompt is wiped (CR, then a shorter line) and the job ends: a wait from the
        offset handed out past the log is answered, never refused."""
        res = self.ask("read -p 'a long question? ' a; printf '\\rok\\n'", "a long question? ")
        job = res["job_id"]
        self.server.ok("POST", f"/v1/jobs/{job}/input", {"text": "\n", "timeout": 0})
        wait_until(lambda: self.server.ok("GET", f"/v1/jobs/{job}")["done"], what="done")
        status, _, w = self.server.request("POST", f"/v1/jobs/{job}/wait",
                                           {"offset": res["offset"], "timeout": 0})
        self.assertEqual(status, 200, w)
        self.assertTrue(w["done"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
