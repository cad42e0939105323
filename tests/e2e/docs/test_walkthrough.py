"""The README's walk-through, run as pasted: its curl block against a fresh server with the
token the README starts it with, in one shell, in order, with nothing defined beforehand
but what the README told the reader (the server; `jq`, which `dev.sh serve` installs).
Each command's answer is compared with the one the README shows under it: every status,
code, done, exit code and output it names must be in the real answer (ids, times, paths
and hashes are not compared: they differ on every run). Then the clean-up the README's
"Stopping and cleaning up" gives, as pasted: every job ended, the server stopped, the tmux
server and the state gone, and no cgroup of the server left on the host."""
import json
import os
import re
import signal
import shlex
import shutil
import subprocess
import tempfile
import unittest

from harness import Server, free_port, processes_mentioning, wait_until

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


def cleanup_block():
    """The clean-up lines, split where the reader stops the server: (before, after)."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    start = text.index("## Stopping and cleaning up")
    end = text.index("\n## ", start + 1)
    blocks = re.findall(r"```sh\n(.*?)```", text[start:end], re.S)
    assert len(blocks) == 1, blocks
    lines = [line.strip() for line in blocks[0].splitlines()]
    cut = next(i for i, line in enumerate(lines) if line.startswith("# Ctrl-C"))
    return "\n".join(lines[:cut]), "\n".join(lines[cut + 1:])


def steps(block):
    """(command, shown answer) pairs: each command (its continuation lines joined: an open
    quote, a trailing pipe or backslash) and the comment lines under it."""
    out = []
    pending = ""
    for line in block.splitlines():
        if pending:
            pending += "\n" + line
        elif line.startswith("#"):
            if out:
                out[-1][1].append(line[1:].strip())
            continue
        elif line.strip():
            pending = line
        else:
            continue
        try:
            shlex.split(pending, comments=True)
            complete = not pending.rstrip().endswith(("|", "\\", "&&"))
        except ValueError:  # an open quote
            complete = False
        if complete:
            out.append((pending, []))
            pending = ""
    assert not pending, pending
    return out


def section_blocks(title):
    with open(README, encoding="utf-8") as f:
        text = f.read()
    start = text.index("## " + title)
    end = text.index("\n## ", start + 1)
    return re.findall(r"```sh\n(.*?)```", text[start:end], re.S)


# Every "key":value a shown answer states in full (a string without "…", a number, true,
# false, null).
SHOWN_PAIR = re.compile(r'"([a-z_]+)":("(?:[^"\\]|\\.)*"|true|false|null|-?\d+)')


class WalkThrough(unittest.TestCase):
    def test_the_readme_walkthrough_runs_as_pasted(self):
        blocks = walkthrough_blocks()
        self.assertEqual(len(blocks), 2, "the server's start, then the curl block")
        self.assertIn("SHELLCTL_AUTH_TOKEN=" + TOKEN, blocks[0])
        before_stop, after_stop = cleanup_block()
        # The reader's directory: the server's state is ./state in it, as `dev.sh serve` has it.
        work = tempfile.mkdtemp(prefix="shellctl-walkthrough-")
        self.addCleanup(shutil.rmtree, work, True)
        with Server(token=TOKEN, state_dir=os.path.join(work, "state")) as server:
            local = lambda text: text.replace("localhost:8765", f"127.0.0.1:{server.port}")
            pairs = steps(blocks[1])
            script = ["set -eo pipefail"]
            for command, _ in pairs:
                script.append(local(command))
                script.append(f"printf '\\n{MARK}\\n'")
            # A job that leaves a background process, as an agent's dev server would: the
            # clean-up must end it too.
            mk = "walkthrough-leftover-" + os.urandom(4).hex()
            leftover = json.dumps({"script": f"nohup sh -c 'sleep 1000; :' {mk} >/dev/null 2>&1 &"})
            script.append(local('curl -s -o /dev/null -H "$H" localhost:8765/v1/jobs/run -d ' +
                                shlex.quote(leftover)))
            script.append(local(before_stop))
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

            # The clean-up: every job is gone, leftovers included; then the reader's Ctrl-C.
            self.assertEqual(server.ok("GET", "/v1/jobs")["jobs"], [])
            self.assertFalse(processes_mentioning(mk), "a finished job's leftover outlived the clean-up")
            root = re.search(r"\), cgroup (/[^,\s\"]+)", server.read_stderr())
            self.assertIsNotNone(root, "as root the server has a cgroup: " + server.read_stderr())
            self.assertEqual(server.stop(signal.SIGINT), 0, server.read_stderr())
            r = subprocess.run(["bash", "-c", "set -e\n" + after_stop], cwd=work, capture_output=True,
                               encoding="utf-8", errors="replace", timeout=60)
            self.assertEqual(r.returncode, 0, (r.stdout, r.stderr))
            self.assertNotIn("state", os.listdir(work))
            self.assertFalse(os.path.exists(root.group(1)), "the server's cgroup outlived its stop")
            self.assertNotEqual(server.tmux("list-sessions").returncode, 0, "the tmux server is still up")



class TryingDifyAgent(unittest.TestCase):
    """README "Trying dify-agent": the stub started by its one-liner, the CLI in the shell
    and in a job, as pasted. The CLI is where `dev.sh serve` puts it (`dev.sh install-cli`,
    the same step)."""

    def test_the_cli_against_the_test_stub(self):
        blocks = section_blocks("Trying dify-agent")
        self.assertEqual(len(blocks), 2, "the stub's one-liner, then the CLI block")
        r = subprocess.run(["bash", "packaging/dev.sh", "install-cli"], cwd=ROOT, capture_output=True, text=True,
                           env=dict(os.environ, SHELLCTL_BUILD_DIR=os.environ.get("SHELLCTL_BUILD_DIR", "build")))
        self.assertEqual(r.returncode, 0, r.stderr)
        port = free_port()
        stub = subprocess.Popen(["bash", "-c", "exec " + blocks[0].strip().replace("8080", str(port))],
                                cwd=ROOT, stdout=subprocess.PIPE, text=True)
        self.addCleanup(stub.stdout.close)
        self.addCleanup(stub.wait)
        self.addCleanup(stub.terminate)
        self.assertIn(f"127.0.0.1:{port}", stub.stdout.readline(), "the stub says where it serves")
        work = tempfile.mkdtemp(prefix="shellctl-try-agent-")
        self.addCleanup(shutil.rmtree, work, True)
        with Server(token=TOKEN) as server:
            pairs = steps(blocks[1])
            script = ["set -eo pipefail", walkthrough_blocks()[1].splitlines()[0]]  # H=…, as there
            for command, _ in pairs:
                script.append(command.replace("localhost:8765", f"127.0.0.1:{server.port}")
                              .replace("8080", str(port)))
                script.append(f"printf '\\n{MARK}\\n'")
            env = {k: v for k, v in os.environ.items() if not k.startswith("DIFY_AGENT_")}
            env["PATH"] = "/usr/local/bin:" + env.get("PATH", "/usr/bin:/bin")
            r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, capture_output=True,
                               encoding="utf-8", errors="replace", timeout=120, env=env)
            self.assertEqual(r.returncode, 0, (r.stdout, r.stderr))
            answers = r.stdout.split(f"\n{MARK}\n")
            self.assertEqual(len(answers), len(pairs) + 1, r.stdout)
            checked = 0
            for (command, shown), real in zip(pairs, answers):
                if not shown:
                    continue
                shown_text = " ".join(shown)
                if "…" not in shown_text:
                    self.assertEqual(real.strip(), shown_text, command)
                    checked += 1
                    continue
                for key, value in SHOWN_PAIR.findall(shown_text):
                    if "…" in value:
                        continue
                    checked += 1
                    self.assertIn(f'"{key}":{value}', real.replace('": ', '":'), (command, shown_text, real))
            self.assertGreaterEqual(checked, 6, "the README's answers were compared")


DOCS = os.path.join(ROOT, "docs")
# A comment line that explains rather than shows output ("# Resize a PTY job's terminal…").
PROSE = re.compile(r"^[A-Z][a-z']* [a-z(]")
NOT_RUN = "<!-- not run:"
DOC_PINNED = re.compile(r'"(status|code|done|exit_code|output|deleted|truncated|size|type|ok)":'
                        r'("(?:[^"\\]|\\.)*"|true|false|null|-?\d+)')


def doc_blocks(path):
    """The ```sh blocks of a doc: (line number, text, the reason it is not run or None)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.startswith("```sh"):
            end = lines.index("```", i + 1)
            prev = lines[i - 1] if i else ""
            reason = prev[len(NOT_RUN):].rstrip("->").strip() if prev.startswith(NOT_RUN) else None
            out.append((i + 1, "\n".join(lines[i + 1:end]) + "\n", reason))
    return out


class DocsExamples(unittest.TestCase):
    """Every shell block of docs/, as pasted, against a fresh walk-through server (one per
    file, the blocks in order), in the walk-through's shell (`H` as it defines it). What
    an answer shows is compared: the pinned fields of JSON, any other output line by line
    (lines with "…" are elided). A block that cannot run here says why beside it."""

    def test_every_runnable_example_runs_as_pasted(self):
        h_line = walkthrough_blocks()[1].splitlines()[0]
        self.assertTrue(h_line.startswith('H="Authorization: Bearer '), h_line)
        ran = 0
        for name in sorted(os.listdir(DOCS)):
            if not name.endswith(".md"):
                continue
            blocks = doc_blocks(os.path.join(DOCS, name))
            runnable = [(n, b) for n, b, reason in blocks if reason is None]
            for n, b, reason in blocks:
                if reason is not None:
                    self.assertTrue(reason, f"docs/{name}:{n}: a block not run says why")
            if not runnable:
                continue
            with self.subTest(doc=name):
                ran += self.run_doc(name, runnable, h_line)
        self.assertGreaterEqual(ran, 8, "the docs' examples ran")

    def run_doc(self, name, blocks, h_line):
        work = tempfile.mkdtemp(prefix="shellctl-docs-")
        self.addCleanup(shutil.rmtree, work, True)
        with Server(token=TOKEN) as server:
            for line, block in blocks:
                where = f"docs/{name}:{line}"
                pairs = steps(block)
                script = ["set -eo pipefail", h_line]
                for command, _ in pairs:
                    script.append(command.replace("localhost:8765", f"127.0.0.1:{server.port}"))
                    script.append(f"printf '\\n{MARK}\\n'")
                r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, capture_output=True,
                                   encoding="utf-8", errors="replace", timeout=120)
                self.assertEqual(r.returncode, 0, (where, r.stdout, r.stderr))
                answers = r.stdout.split(f"\n{MARK}\n")
                self.assertEqual(len(answers), len(pairs) + 1, (where, r.stdout))
                for (command, shown), real in zip(pairs, answers):
                    # The answer ends where an explanation of the next command begins.
                    cut = next((i for i, s in enumerate(shown) if PROSE.match(s)), len(shown))
                    shown = shown[:cut]
                    shown_text = " ".join(shown)
                    if "{" in shown_text:
                        for key, value in DOC_PINNED.findall(shown_text):
                            if "…" in value:
                                continue
                            self.assertRegex(real.replace('": ', '":'), rf'"{key}":{re.escape(value)}',
                                             (where, command, real))
                    elif shown and "X-Snapshot-Status: ok" in shown:
                        self.assertIn("X-Snapshot-Status: ok", real, (where, command))
                    elif shown:
                        want = [s for s in shown if s and "…" not in s]
                        got = [s.strip() for s in real.strip().splitlines()]
                        self.assertEqual(got[:len(want)] if len(want) < len(got) else got, want,
                                         (where, command, real))
        return len(blocks)


if __name__ == "__main__":
    unittest.main(verbosity=2)
