"""The sandbox image (packaging/Dockerfile), built and run for real with podman.

No registry is reachable from here, so the base image is made the way an air-gapped
operator would: a debootstrap bookworm root from the machine's Debian mirror, imported
with `podman import`; the Dockerfile is then built on it (BASE names it) and the
container is driven over HTTP on loopback: healthz, auth, jobs as the dify user, Landlock
refusing /tmp inside the container, the HEALTHCHECK, and a restart of the container that
keeps finished results. Nothing here is skipped: a machine that cannot run containers
fails this suite and says what refused.

What this machine needs beyond a Docker host (it has no CAP_SYS_RESOURCE and a cgroup v1
hybrid): runc instead of crun (crun refuses hybrid cgroups), and rlimits no higher than
the ones it has. `--security-opt unmask=ALL` is what any host needs: a job's sandbox mounts
its own /proc, which the kernel refuses while the container's /proc has masked paths."""
import json
import os
import re
import resource
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from harness import free_port

SOURCE_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD_DIR = os.environ.get("SHELLCTL_BUILD_DIR") or os.path.join(SOURCE_DIR, "build")
BASE = "localhost/shellctl-e2e-base:bookworm"
IMAGE = "localhost/shellctl-e2e:latest"
SYSTEMD_IMAGE = "localhost/shellctl-e2e-systemd:latest"
TOKEN = "image-test-token"


def run(cmd, timeout=900, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def debian_mirror():
    """The mirror this machine's apt uses (the only network there is)."""
    for path in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"):
        try:
            text = open(path).read()
        except OSError:
            continue
        m = re.search(r"^URIs:\s*(\S+)", text, re.M) or re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+bookworm", text, re.M)
        if m:
            return m.group(1)
    return "http://deb.debian.org/debian"


def limits():
    """--ulimit values this machine lets a container set: podman's defaults (1048576) are
    above its hard limits, and without CAP_SYS_RESOURCE nothing may raise them."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    nofile = 1048576 if nofile == resource.RLIM_INFINITY else min(nofile, 1048576)
    nproc = 4096 if nproc == resource.RLIM_INFINITY else min(nproc, 4096)
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


RUNTIME = ["--runtime", "runc"]


def remove_root(root):
    """A debootstrap root may still have /proc (or more) mounted in it if debootstrap was
    interrupted: unmount whatever is below it, then remove it without crossing into
    another file system (never the host's /proc or /dev through a leftover mount)."""
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4]
            if point == root or point.startswith(root + "/"):
                mounts.append(point)
    for point in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)
    subprocess.run(["rm", "-rf", "--one-file-system", root], capture_output=True)


def cgroup2_nsdelegate():
    """(mount point, whether nsdelegate is on) of the host's cgroup2, or (None, None)."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            tail = line.split(" - ", 1)[1].split()
            if tail[0] == "cgroup2":
                return fields[4], "nsdelegate" in tail[2].split(",")
    return None, None


def restore_nsdelegate(point, wanted):
    """mount(2) itself: mount(8) would keep the options it finds."""
    if point is None or cgroup2_nsdelegate()[1] == wanted:
        return
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount(None, point.encode(), None, 32, b"nsdelegate" if wanted else b"")  # MS_REMOUNT


class Image(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in ("podman", "runc", "debootstrap"):
            if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
                raise AssertionError(f"{tool} is missing (packaging/dev.sh installs it)")
        cls.work = tempfile.mkdtemp(prefix="shellctl-image-", dir=BUILD_DIR)
        cls.containers = []
        root = os.path.join(cls.work, "root")
        run(["debootstrap", "--variant=minbase", "bookworm", root, debian_mirror()], timeout=900)
        tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(["podman", "import", "-", BASE], stdin=tar.stdout,
                             capture_output=True, text=True, timeout=600)
        tar.stdout.close()
        if tar.wait() != 0 or imp.returncode != 0:
            raise AssertionError(f"podman import failed: {imp.stderr}")
        remove_root(root)
        # --network host: the build stages fetch Debian packages from the mirror above.
        # --format docker: OCI images have no HEALTHCHECK; Docker's format keeps it.
        b = run(["podman", "build", *RUNTIME, "--network", "host", *limits(), "--format", "docker",
                 "--build-arg", f"BASE={BASE}", "-f", os.path.join(SOURCE_DIR, "packaging", "Dockerfile"),
                 "-t", IMAGE, SOURCE_DIR], timeout=1800, check=False)
        if b.returncode != 0:
            raise AssertionError(f"podman build failed:\n{b.stdout[-4000:]}\n{b.stderr[-4000:]}")
        cls.port = free_port()
        cls.name = f"shellctl-e2e-{os.getpid()}"
        cls.start_container(cls.name, cls.port, ["-e", f"SHELLCTL_AUTH_TOKEN={TOKEN}",
                                                 "-e", "SHELLCTL_ENABLE_PATH_ISOLATION=true"])

    @classmethod
    def start_container(cls, name, port, extra):
        run(["podman", "run", "-d", "--name", name, *RUNTIME, *limits(), "--security-opt", "unmask=ALL",
             "-p", f"127.0.0.1:{port}:5004", *extra, IMAGE])
        cls.containers.append(name)
        cls.wait_healthy(port, name)

    @classmethod
    def wait_healthy(cls, port, name):
        deadline = time.monotonic() + 120  # a liveness bound, not a timing goal
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        logs = run(["podman", "logs", name], check=False)
        raise AssertionError(f"container {name} never answered /healthz:\n{logs.stdout}{logs.stderr}")

    @classmethod
    def tearDownClass(cls):
        for name in getattr(cls, "containers", []):
            run(["podman", "rm", "-f", "-t", "2", name], check=False)
        run(["podman", "rmi", "-f", SYSTEMD_IMAGE, IMAGE, BASE], check=False)
        run(["podman", "image", "prune", "-f"], check=False)
        if getattr(cls, "work", None):
            remove_root(os.path.join(cls.work, "root"))
            shutil.rmtree(cls.work, ignore_errors=True)

    def call(self, method, path, body=None, token=TOKEN, port=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port or self.port}{path}", data=data, method=method)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def job(self, script, mode="pty"):
        st, body = self.call("POST", "/v1/jobs/run", {"script": script, "mode": mode,
                                                      "timeout": 30})
        self.assertEqual(st, 200, body)
        self.assertTrue(body["done"], body)
        return body

    # ---- the image as built ----------------------------------------------------------------
    def test_image_metadata(self):
        info = json.loads(run(["podman", "image", "inspect", IMAGE]).stdout)[0]
        cfg = info["Config"]
        self.assertEqual(cfg["User"], "dify")
        self.assertEqual(cfg["WorkingDir"], "/home/dify")
        self.assertIn("5004/tcp", cfg["ExposedPorts"])
        self.assertEqual(cfg["Entrypoint"], ["/usr/bin/tini", "-g", "--"])
        self.assertEqual(cfg["Cmd"], ["shellctl", "serve", "--listen", "0.0.0.0:5004"])
        self.assertIn("HOME=/home/dify", cfg["Env"])
        hc = info.get("Healthcheck") or cfg.get("Healthcheck")
        self.assertTrue(hc and "/healthz" in " ".join(hc["Test"]), info)
        # The server must answer within the backend's 1 s (curl's own limit); the check as a
        # whole has 5 s, since the runtime's exec of curl counts against it.
        self.assertIn("--max-time 1", " ".join(hc["Test"]))
        self.assertEqual(hc["Timeout"], 5 * 10**9, hc)

    def test_tools_an_agent_expects_are_installed(self):
        tools = "bash curl file git jq less ssh ps rg tini tmux unzip xz zip shellctl dify-agent"
        r = run(["podman", "run", "--rm", *RUNTIME, *limits(), IMAGE, "sh", "-c",
                 f"for t in {tools}; do command -v $t >/dev/null || echo missing $t; done; "
                 "ls /usr/local/libexec/shellctl; stat -c '%U' /workspace /home/dify; test -f /etc/ssl/certs/ca-certificates.crt && echo certs"])
        self.assertNotIn("missing", r.stdout)
        self.assertIn("shellctl-home\nshellctl-runner\nshellctl-runner-exit\nshellctl-sanitize-pty", r.stdout)
        self.assertIn("dify\ndify\n", r.stdout)
        self.assertIn("certs", r.stdout)

    def test_native_deployment_files_are_shipped_not_activated(self):
        """S25: the native supervisor's files are in /usr/share/dify-native/; nothing enables them."""
        r = run(["podman", "run", "--rm", *RUNTIME, *limits(), IMAGE, "sh", "-c",
                 "ls /usr/share/dify-native; test -x /usr/share/dify-native/native-test-start.sh && echo exec; "
                 "ls /etc/systemd/system/dify-native.service /usr/local/libexec/dify-native-start "
                 "/etc/apparmor.d/dify-native-test-supervisor 2>&1 | grep -c 'No such file'"])
        for name in ("native-test-supervisor.service", "native-test-start.sh", "native-test-seccomp.json",
                     "native-test-apparmor.profile"):
            self.assertIn(name, r.stdout)
        self.assertIn("exec", r.stdout)
        self.assertTrue(r.stdout.strip().endswith("3"), r.stdout)

    def test_require_auth_token_refuses_to_start_without_one(self):
        r = run(["podman", "run", "--rm", *RUNTIME, *limits(), IMAGE, "shellctl", "serve",
                 "--listen", "127.0.0.1:5004", "--require-auth-token"], check=False, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("token", (r.stdout + r.stderr).lower())

    # ---- the running container -------------------------------------------------------------
    def test_startup_line_states_the_sandbox(self):
        logs = run(["podman", "logs", self.name])
        self.assertRegex(logs.stdout + logs.stderr,
                         r"shellctl serving on 0\.0\.0\.0:5004 \(auth on, path isolation on "
                         r"\(landlock ABI \d+, own namespaces\)")

    def test_auth_is_required(self):
        st, body = self.call("GET", "/v1/jobs", token=None)
        self.assertEqual((st, body["error"]["code"]), (401, "unauthorized"))
        st, body = self.call("GET", "/v1/jobs", token="wrong")
        self.assertEqual(st, 401)

    def test_pty_and_stdio_jobs_run_as_dify(self):
        body = self.job("id -un; echo $HOME; pwd")
        self.assertEqual((body["status"], body["exit_code"]), ("exited", 0), body)
        self.assertEqual(body["output"].split(), ["dify", "/home/dify", "/home/dify"])
        body = self.job("printf 'a\\nb\\n'; exit 3", mode="stdio")
        self.assertEqual((body["status"], body["exit_code"], body["output"]), ("exited", 3, "a\nb\n"))

    def test_landlock_denies_tmp_and_grants_workspace(self):
        body = self.job("ls /tmp >/dev/null 2>&1 && echo tmp-readable; "
                        "{ echo x > /tmp/escape; } 2>/dev/null && echo tmp-writable; "
                        "echo kept > /workspace/w && cat /workspace/w; "
                        "cat /home/dify/.local/share/shellctl/shellctl.db >/dev/null 2>&1 && echo db-readable; "
                        "echo done")
        self.assertEqual(body["exit_code"], 0, body)
        self.assertEqual(body["output"].split(), ["kept", "done"], body)
        # Refused by the sandbox, not missing: the same write from outside a job works.
        run(["podman", "exec", self.name, "sh", "-c", "echo probe > /tmp/outside && rm /tmp/outside"])
        # Nothing reached the container's /tmp.
        r = run(["podman", "exec", self.name, "ls", "-A", "/tmp"])
        self.assertNotIn("escape", r.stdout)

    def raw(self, method, path, data=None):
        """(status, body bytes) of one request with a binary body."""
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request(method, path, body=data, headers={"Authorization": f"Bearer {TOKEN}"})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def test_home_operations_are_confined_as_jobs_are(self):
        """The image's layout is the dangerous one (the state dir in Home, the server as
        dify): the file API and snapshots work, and an archive aimed at the runner link is
        refused while the next job still runs sandboxed."""
        st, body = self.raw("PUT", "/v1/files/content?path=/workspace/img.txt", b"in the image")
        self.assertEqual(st, 200, body)
        self.assertEqual(self.raw("GET", "/v1/files/content?path=/workspace/img.txt"), (200, b"in the image"))
        st, body = self.raw("GET", "/v1/files/content?path=.local/share/shellctl/shellctl.db")
        self.assertEqual(st, 403, body)
        st, archive = self.raw("POST", "/v1/snapshot/save")
        self.assertEqual(st, 200, archive)
        names = subprocess.run(["sh", "-c", "zstd -q -d -c | tar -tf -"], input=archive,
                               capture_output=True, check=True).stdout.decode().split()
        self.assertFalse([n for n in names if n.startswith(".local/share/shellctl")], names)
        st, body = self.raw("POST", "/v1/snapshot/restore", archive)
        self.assertEqual(st, 200, body)
        evil = subprocess.run(
            ["python3", "-c", "import io,sys,tarfile\n"
             "b=io.BytesIO()\n"
             "t=tarfile.open(fileobj=b,mode='w')\n"
             "i=tarfile.TarInfo('.local/share/shellctl/runtime/bin/shellctl-runner')\n"
             "i.type=tarfile.SYMTYPE; i.linkname='/home/dify/evil.sh'\n"
             "t.addfile(i); t.close(); sys.stdout.buffer.write(b.getvalue())"],
            capture_output=True, check=True).stdout
        evil = subprocess.run(["zstd", "-q", "-c"], input=evil, capture_output=True, check=True).stdout
        st, body = self.raw("POST", "/v1/snapshot/restore", evil)
        self.assertEqual(st, 400, body)
        link = run(["podman", "exec", self.name, "readlink", "/home/dify/.local/share/shellctl/runtime/bin/shellctl-runner"])
        self.assertEqual(link.stdout.strip(), "/usr/local/libexec/shellctl/shellctl-runner")
        body = self.job("test -e /home/dify/.local/share/shellctl/shellctl.db && echo visible; echo sandboxed")
        self.assertEqual(body["output"].split(), ["sandboxed"], body)

    def test_healthcheck_passes(self):
        r = run(["podman", "healthcheck", "run", self.name], check=False, timeout=60)
        self.assertEqual(r.returncode, 0, (r.stdout, r.stderr))

    def test_restart_keeps_finished_results(self):
        # Its own container: a restart must not race the other tests' jobs.
        port, name = free_port(), f"shellctl-e2e-restart-{os.getpid()}"
        self.start_container(name, port, ["-e", f"SHELLCTL_AUTH_TOKEN={TOKEN}"])
        st, body = self.call("POST", "/v1/jobs/run", {"script": "echo before-restart; exit 7",
                                                      "timeout": 30}, port=port)
        self.assertEqual((st, body["done"], body["exit_code"]), (200, True, 7), body)
        job = body["job_id"]
        st, running = self.call("POST", "/v1/jobs/run", {"script": "sleep 600", "timeout": 0.2},
                                port=port)
        self.assertEqual((st, running["status"]), (200, "running"), running)
        run(["podman", "restart", "-t", "10", name], timeout=120)
        self.wait_healthy(port, name)
        st, view = self.call("GET", f"/v1/jobs/{job}", port=port)
        self.assertEqual((st, view["status"], view["exit_code"], view["done"]), (200, "exited", 7, True), view)
        st, tail = self.call("GET", f"/v1/jobs/{job}/log/tail", port=port)
        self.assertEqual((st, tail["output"]), (200, "before-restart\n"), tail)
        st, listing = self.call("GET", "/v1/jobs", port=port)
        self.assertIn(job, [j["job_id"] for j in listing["jobs"]])
        # The restart ended the job that was running (its tmux went with the container):
        # once recovery has settled it (it first waits out the runner's exit grace), it is
        # lost, never done as anything else.
        deadline = time.monotonic() + 60  # liveness bound
        while True:
            st, gone = self.call("POST", f"/v1/jobs/{running['job_id']}/wait",
                                 {"offset": 0, "timeout": 5}, port=port)
            self.assertEqual(st, 200, gone)
            if gone["done"] or time.monotonic() > deadline:
                break
        self.assertEqual((gone["status"], gone["done"], gone["exit_code"]), ("lost", True, None), gone)


    # ---- the systemd unit, under a real systemd ----------------------------------------------
    def test_unit_runs_jobs_under_systemd(self):
        """The installed unit (DynamicUser, ProtectSystem=strict, PrivateTmp, the syscall
        filter...) under systemd as PID 1 in a container: it starts, runs jobs as its
        transient user in their sandbox, and a service restart leaves a running job running
        (KillMode=process). --privileged: systemd needs CAP_SYS_ADMIN to give the unit its
        own mount namespace (226/NAMESPACE otherwise)."""
        run(["podman", "build", *RUNTIME, "--network", "host", *limits(), "--build-arg", f"IMAGE={IMAGE}",
             "-f", os.path.join(os.path.dirname(os.path.abspath(__file__)), "systemd.Containerfile"),
             "-t", SYSTEMD_IMAGE, os.path.dirname(os.path.abspath(__file__))], timeout=900)
        name = f"shellctl-e2e-systemd-{os.getpid()}"
        # systemd in a privileged container remounts the cgroup2 file system it shares with
        # the host with nsdelegate, for the whole machine: put the host's option back after
        # (the containment suite's results must not depend on which suite ran first).
        delegate = cgroup2_nsdelegate()
        self.addCleanup(restore_nsdelegate, *delegate)
        run(["podman", "run", "-d", "--name", name, *RUNTIME, *limits(), "--systemd=always", "--privileged",
             SYSTEMD_IMAGE])
        self.containers.append(name)
        self.addCleanup(run, ["podman", "rm", "-f", "-t", "2", name], check=False)

        def sh(script, check=True, timeout=120):
            return run(["podman", "exec", name, "sh", "-c", script], check=check, timeout=timeout)

        deadline = time.monotonic() + 120  # liveness bound
        while sh("systemctl is-active shellctl && curl -fsS http://127.0.0.1:8765/healthz",
                 check=False).returncode != 0:
            if time.monotonic() > deadline:
                status = sh("systemctl status shellctl --no-pager; journalctl -u shellctl --no-pager | tail -30",
                            check=False)
                raise AssertionError(f"the unit never served:\n{status.stdout}{status.stderr}")
            time.sleep(0.5)

        def api(method, path, body=None):
            data = f"-d '{json.dumps(body)}'" if body is not None else ""
            r = sh(f"curl -sS -m 60 -X {method} {data} http://127.0.0.1:8765{path}")
            return json.loads(r.stdout)

        body = api("POST", "/v1/jobs/run", {"script": "id -u; echo $HOME; pwd; "
                                                       "{ echo x > /tmp/escape; } 2>/dev/null && echo tmp-writable; "
                                                       "echo ok", "timeout": 30})
        self.assertEqual((body["status"], body["exit_code"]), ("exited", 0), body)
        uid, home, cwd, last = body["output"].split()
        self.assertNotEqual(uid, "0")  # DynamicUser: a transient unprivileged user
        self.assertEqual((home, last), ("/var/lib/shellctl/home", "ok"), body)
        # The state dir by its real path (DynamicUser's /var/lib/shellctl is a symlink).
        self.assertTrue(body["output_path"].startswith("/var/lib/private/shellctl/state/jobs/"), body)

        journal = sh("journalctl -u shellctl --no-pager -o cat").stdout
        self.assertIn("own namespaces", journal)
        # Delegate=yes: the unit's own cgroup belongs to its user, so each job gets one.
        self.assertRegex(journal, r"\), cgroup /sys/fs/cgroup/[^,]*shellctl\.service/shellctl-", journal)
        self.assertEqual(api("GET", "/v1/info")["isolation"]["cgroup"], "v2")
        self.assertIn('"msg":"job","event":"exited"', journal)  # JSON lines: stderr is no terminal

        running = api("POST", "/v1/jobs/run", {"script": "sleep 300", "timeout": 0.2})
        self.assertEqual(running["status"], "running", running)
        before = sh("systemctl show -p MainPID --value shellctl").stdout.strip()
        sh("systemctl restart shellctl")
        deadline = time.monotonic() + 60
        while sh("curl -fsS http://127.0.0.1:8765/healthz", check=False).returncode != 0:
            self.assertLess(time.monotonic(), deadline, "the unit did not come back")
            time.sleep(0.2)
        self.assertNotEqual(sh("systemctl show -p MainPID --value shellctl").stdout.strip(), before)
        view = api("GET", f"/v1/jobs/{running['job_id']}")
        self.assertEqual((view["status"], view["done"]), ("running", False), view)
        end = api("POST", f"/v1/jobs/{running['job_id']}/terminate", {"grace_seconds": 1})
        self.assertEqual(end["status"], "terminated", end)


if __name__ == "__main__":
    unittest.main(verbosity=2)
