"""Shared set-up for the helper-binary e2e tests: job dirs, running shellctl-runner
directly (as root or as an unprivileged user), and the unprivileged test user itself."""
import json
import os
import pwd
import shutil
import subprocess
import tempfile

from harness import BIN_DIR  # the build's binaries where the unprivileged user reaches them
RUNNER = os.path.join(BIN_DIR, "shellctl-runner")
SANITIZE = os.path.join(BIN_DIR, "shellctl-sanitize-pty")
RUNNER_EXIT = os.path.join(BIN_DIR, "shellctl-runner-exit")

TEST_USER = "shellctl-test"
# Generous upper bound for a job that should finish promptly; only guards against hangs.
HANG_GUARD = 120


def ensure_test_user():
    """Returns (uid, gid) of the unprivileged test user, creating it when missing, or
    None when this process cannot do that (not root, no useradd)."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(TEST_USER)
    except KeyError:
        if shutil.which("useradd") is None:
            return None
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh",
                        TEST_USER], check=True, capture_output=True)
        pw = pwd.getpwnam(TEST_USER)
    return pw.pw_uid, pw.pw_gid


def base_runner_env(**extra):
    """The runner's environment as tmux would give it: the server's own settings included
    (they must not reach the job), isolation off unless a test turns it on."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SHELLCTL_") and not k.startswith("TMUX")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    env["SHELLCTL_AUTH_TOKEN"] = "server-secret"
    env["SHELLCTL_STATE_DIR"] = "/nonexistent/state"
    env["TMUX"] = "/tmp/tmux-0/default,1234,0"
    env["TMUX_PANE"] = "%7"
    env["SHELLCTL_ENABLE_PATH_ISOLATION"] = "false"
    env.update(extra)
    return env


class Sandbox:
    """A temp tree owned by `owner` (uid, gid) or root: job dir, cwd and home."""

    def __init__(self, owner=None):
        self.owner = owner
        self.root = tempfile.mkdtemp(prefix="shellctl-helpers-")
        os.chmod(self.root, 0o755)  # the unprivileged user must be able to traverse it
        self.job_dir = self.mkdir("job", 0o700)
        self.cwd = self.mkdir("cwd", 0o755)
        self.home = self.mkdir("home", 0o700)

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def chown(self, p):
        if self.owner is not None:
            os.chown(p, *self.owner)

    def mkdir(self, name, mode=0o755):
        p = self.path(name)
        os.makedirs(p, exist_ok=True)
        os.chmod(p, mode)
        self.chown(p)
        return p

    def write(self, path, data, mode=0o600):
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        os.chmod(path, mode)
        self.chown(path)
        return path

    def prepare(self, script, job_env=None, gate=True):
        self.write(os.path.join(self.job_dir, "script"), script)
        if job_env is not None:
            self.write(os.path.join(self.job_dir, ".job-env.json"),
                       job_env if isinstance(job_env, (str, bytes)) else json.dumps(job_env))
        self.write(os.path.join(self.job_dir, "output.log"), b"")
        if gate:
            self.open_gate()

    def open_gate(self):
        self.write(os.path.join(self.job_dir, "start-gate"), b"")

    def command(self, mode="stdio", cwd=None, extra_args=None):
        args = [RUNNER, self.job_dir, "job-id", cwd or self.cwd]
        if mode is not None:
            args.append(mode)
        if extra_args is not None:
            args = [RUNNER] + list(extra_args)
        if self.owner is not None:
            uid, gid = self.owner
            args = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--init-groups"] + args
        return args

    def popen(self, env, mode="stdio", cwd=None, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        return subprocess.Popen(self.command(mode, cwd), env=env, **kw)

    def run(self, env, mode="stdio", cwd=None, extra_args=None, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run(self.command(mode, cwd, extra_args), env=env,
                              capture_output=True, timeout=HANG_GUARD, **kw)

    def read(self, name, binary=False):
        with open(os.path.join(self.job_dir, name), "rb") as f:
            data = f.read()
        return data if binary else data.decode("utf-8", "replace")

    def exists(self, name):
        return os.path.exists(os.path.join(self.job_dir, name))

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)
