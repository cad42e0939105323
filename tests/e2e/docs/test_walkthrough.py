"""The README's walk-through, run as pasted: its curl block against a fresh server with the
token the README starts it with, in one shell, in order, with nothing defined beforehand
but what the README told the reader (the server; `jq`, which `dev.sh serve` installs).
Each command's answer is compared with the one the README shows under it: every status,
code, done, exit code and output it names must be in the real answer (ids, times, paths
and hashes are not compared: they differ on every run)."""
import json
import os
import re
import subprocess
import unittest

from harness import Server

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
README = os.path.join(ROOT, "README.md")
TOKEN = "s3cret"  # the README's `SHELLCTL_AUTH_TOKEN=s3cret bash packaging/dev.sh serve`
# What an answer shown in the README pins down: these fields' literal values.
PINNED = re.compile(r'"(status|code|done|exit_code|output|deleted|truncated)":'
                    r'("(?:[^"\\]|\\.)*"|true|false|null|-?\d+)')
MARK = "@@walkthrough-step@@"


def walkthrough_blocks():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    start = text.index("## A walk-through with curl")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```sh\n(.*?)```", text[start:end], re.S)


def steps(block):
    """(command, shown answer) pairs: each command line and the comment lines under it."""
    out = []
    for line in block.splitlines():
        if line.startswith("#"):
            if out:
                out[-1][1].append(line[1:].strip())
            continue
        if line.strip():
            out.append((line, []))
    return out


class WalkThrough(unittest.TestCase):
    def test_the_readme_walkthrough_runs_as_pasted(self):
        blocks = walkthrough_blocks()
        self.assertEqual(len(blocks), 2, "the server's start, then the curl block")
        self.assertIn("SHELLCTL_AUTH_TOKEN=" + TOKEN, blocks[0])
        with Server(token=TOKEN) as server:
            work = os.path.join(server.tmp, "walkthrough")
            os.makedirs(work)
            pairs = steps(blocks[1])
            script = ["set -eo pipefail"]
            for command, _ in pairs:
                script.append(command.replace("localhost:8765", f"127.0.0.1:{server.port}"))
                script.append(f"printf '\\n{MARK}\\n'")
            r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, capture_output=True,
                               encoding="utf-8", errors="replace", timeout=300)
            self.assertEqual(r.returncode, 0, (r.stdout, r.stderr))
            answers = r.stdout.split(f"\n{MARK}\n")
            self.assertEqual(len(answers), len(pairs) + 1, r.stdout)
            checked = 0
            for (command, shown), real in zip(pairs, answers):
                shown_text = " ".join(shown)
                for key, value in PINNED.findall(shown_text):
                    if "…" in value:
                        continue
                    checked += 1
                    if key == "output":
                        want = json.loads(value)
                        self.assertIn(f'"output":{json.dumps(want)}', real.replace('": ', '":'),
                                      (command, shown_text, real))
                    else:
                        self.assertRegex(real, rf'"{key}":\s*{re.escape(value)}', (command, shown_text, real))
                # A snapshot's trailers say it succeeded.
                if "X-Snapshot-Status: ok" in shown_text:
                    checked += 1
                    self.assertIn("X-Snapshot-Status: ok", real, command)
            self.assertGreater(checked, 20, "the README's answers were compared")


if __name__ == "__main__":
    unittest.main(verbosity=2)
