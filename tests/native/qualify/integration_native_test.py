"""The `integration-native-test` suite (tier Q, docs/native-scopes.md "Qualifying a host";
guarantee S33): qualifies one provisioned host, never this development machine. It needs, and fails
(exit 1, never 77) when any is missing — listing every one:

  DIFY_AGENT_LOCAL_NATIVE_TEST_ENDPOINT    the supervisor's base URL (http://127.0.0.1:PORT)
  DIFY_AGENT_LOCAL_NATIVE_TEST_AUTH_TOKEN  its bearer
  the supervisor's own `--native-check` passing (`shellctl serve --native-test-supervisor
  --native-check` with the unit's environment: SHELLCTL_NATIVE_BASE_ROOT, _INPUT_ROOT, ...,
  SHELLCTL_AUTH_TOKEN, SHELLCTL_STATE_DIR; SHELLCTL_BIN the shellctl to run, default on PATH)
  DIFY_AGENT_LOCAL_NATIVE_TEST_NETWORK_TARGET  host:port of a TCP echo service the supervisor
                                           may reach (a public address, or its mediator)
  a capability document that enforces cpu, memory and pids with AppArmor in force
  the canary refs `canary/base` and `canary/input.txt` (tests/native/canary/README.md)

With DIFY_AGENT_LOCAL_NATIVE_TEST_UNIT (the systemd unit, e.g. dify-native.service) the suite
also qualifies the host-systemd deployment (S27, S31), as root: the running systemd's version
(>= 254), the unit's effective DelegateSubgroup=manager, Delegate= and KillMode=process, the
MainPID in <U>/manager with an empty <U>/cgroup.procs, the MainPID unprivileged, in enforce
mode of dify-native-test-supervisor, with Seccomp 2 and NoNewPrivs, <U> delegated to the
dedicated user, and a `systemctl restart` of the unit that keeps a scope and its running job.
`--native-check` passes only inside the unit (uid, placement, profile, filter): with a unit the
suite checks those facts on the unit's MainPID — the supervisor ran every check before it
served — instead of running --native-check as its caller.

Then a canary scope runs: positive controls (Home write, input read) so that a job that never
ran cannot pass, then escapes that must each fail — sockets and parent /proc, host paths,
direct network, mount, unshare, setuid, a fork bomb held by pids.max, a memory hog killed by
memory.max, an output flood failing the job, a transfer beyond the network budget — and the
scope's destruction. The positive controls include a proxied dial to the network target."""
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

ENDPOINT = os.environ.get("DIFY_AGENT_LOCAL_NATIVE_TEST_ENDPOINT", "")
TOKEN = os.environ.get("DIFY_AGENT_LOCAL_NATIVE_TEST_AUTH_TOKEN", "")
SHELLCTL = os.environ.get("SHELLCTL_BIN") or shutil.which("shellctl") or ""
TARGET = os.environ.get("DIFY_AGENT_LOCAL_NATIVE_TEST_NETWORK_TARGET", "")
UNIT = os.environ.get("DIFY_AGENT_LOCAL_NATIVE_TEST_UNIT", "")


def show(prop):
    return subprocess.run(["systemctl", "show", "--property=" + prop, "--value", UNIT],
                          capture_output=True, text=True).stdout.strip()


def cgroup_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[fields.index("-") + 1] == "cgroup2":
                return fields[4]
    return ""


def unit_facts():
    """S27/S31 on the running unit: (facts printed, problems)."""
    facts, problems = [], []
    out = subprocess.run(["systemctl", "--version"], capture_output=True, text=True).stdout.split()
    version = int(out[1]) if len(out) > 1 and out[1].isdigit() else 0
    facts.append(f"systemd {version}")
    if version < 254:
        problems.append(f"systemd {version} is older than 254 (DelegateSubgroup=)")
    props = {p: show(p) for p in ("ActiveState", "MainPID", "DelegateSubgroup", "Delegate",
                                  "DelegateControllers", "KillMode", "ControlGroup", "User")}
    facts.append("unit " + UNIT + ": " + " ".join(f"{k}={v}" for k, v in props.items()))
    if props["ActiveState"] != "active":
        problems.append(f"{UNIT} is {props['ActiveState']}")
    if props["DelegateSubgroup"] != "manager":
        problems.append(f"{UNIT}: DelegateSubgroup={props['DelegateSubgroup']!r} in effect, not manager")
    if props["KillMode"] != "process":
        problems.append(f"{UNIT}: KillMode={props['KillMode']}, not process")
    if not {"cpu", "memory", "pids"} <= set(props["DelegateControllers"].split()):
        problems.append(f"{UNIT}: DelegateControllers={props['DelegateControllers']!r} lacks cpu memory pids")
    pid = props["MainPID"]
    unit_dir = cgroup_mount() + props["ControlGroup"]
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            placement = f.read().strip()
        with open(f"/proc/{pid}/attr/current") as f:
            label = f.read().strip()
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        with open(os.path.join(unit_dir, "cgroup.procs")) as f:
            root_procs = f.read().split()
        owner = os.stat(unit_dir).st_uid
    except OSError as e:
        return facts, problems + [f"the unit's MainPID {pid} or cgroup cannot be read: {e} (run as root)"]
    uid = status.get("Uid", "").split()[:1]
    facts += [f"MainPID {pid}: cgroup {placement}", f"MainPID {pid}: AppArmor {label}",
              f"MainPID {pid}: Uid {status.get('Uid', '').strip()} Seccomp {status.get('Seccomp', '').strip()} "
              f"NoNewPrivs {status.get('NoNewPrivs', '').strip()}",
              f"unit root {unit_dir}: cgroup.procs {root_procs or 'empty'}, owner uid {owner}"]
    if placement != "0::" + props["ControlGroup"] + "/manager":
        problems.append(f"the MainPID is in {placement}, not {props['ControlGroup']}/manager")
    if root_procs:
        problems.append(f"the unit root's cgroup.procs holds {root_procs}")
    if label != "dify-native-test-supervisor (enforce)":
        problems.append(f"the MainPID's AppArmor label is {label!r}")
    if status.get("Seccomp", "").strip() != "2" or status.get("NoNewPrivs", "").strip() != "1":
        problems.append("the MainPID lacks its seccomp filter or NoNewPrivs")
    if not uid or uid[0] == "0" or str(owner) != uid[0]:
        problems.append(f"the MainPID runs as uid {uid} and the unit cgroup is owned by {owner}: not a "
                        "delegation to one unprivileged user")
    return facts, problems


def request(method, path, body=None, headers=None, timeout=60):
    req = urllib.request.Request(ENDPOINT.rstrip("/") + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None)
    req.add_header("Authorization", "Bearer " + TOKEN)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def prerequisites():
    """Every missing prerequisite, by name (empty: all there)."""
    missing = []
    if not ENDPOINT:
        missing.append("DIFY_AGENT_LOCAL_NATIVE_TEST_ENDPOINT is not set")
    if not TOKEN:
        missing.append("DIFY_AGENT_LOCAL_NATIVE_TEST_AUTH_TOKEN is not set")
    if not TARGET or TARGET.rfind(":") < 1:
        missing.append("DIFY_AGENT_LOCAL_NATIVE_TEST_NETWORK_TARGET (host:port of an echo service) is not set")
    if UNIT:
        facts, problems = unit_facts()
        for f in facts:
            print("fact " + f)
        missing += problems
    elif not SHELLCTL:
        missing.append("no shellctl to run --native-check (SHELLCTL_BIN or PATH)")
    else:
        r = subprocess.run([SHELLCTL, "serve", "--native-test-supervisor", "--native-check"],
                           capture_output=True, text=True)
        try:
            report = json.loads(r.stdout)
        except ValueError:
            report = {"ok": False, "checks": [{"id": "native-check", "ok": False, "detail": r.stderr.strip()}]}
        if not report.get("ok"):
            missing += [f"--native-check: {c['id']}: {c['detail']}" for c in report.get("checks", []) if not c["ok"]]
    caps = None
    if ENDPOINT and TOKEN:
        try:
            status, caps = request("GET", "/v1/native-test/capabilities")
            if status != 200:
                missing.append(f"the supervisor's capabilities answered {status}: {caps}")
                caps = None
        except OSError as e:
            missing.append(f"the supervisor at {ENDPOINT} cannot be reached: {e}")
    if caps is not None:
        lacking = {"cpu", "memory", "pids"} - set(caps.get("cgroup_controllers", []))
        if lacking:
            missing.append("the supervisor enforces no " + " ".join(sorted(lacking)) + " (cgroup_controllers)")
        if not caps.get("apparmor_profile"):
            missing.append("the supervisor runs without its AppArmor profile (apparmor_profile)")
    return missing, caps


LIMITS = {"cpu_millicores": 500, "memory_bytes": 256 << 20, "swap_bytes": 0, "pids": 64,
          "disk_bytes": 32 << 20, "input_bytes": 1 << 20, "output_bytes": 1 << 20, "max_jobs": 16,
          "job_wall_seconds": 120, "open_files": 256, "file_bytes": 8 << 20,
          "network_bytes": 4 << 20, "network_connections": 8}
NET_BUDGET = LIMITS["network_bytes"]  # each read reserves up to 64 KiB first: a small echo costs ~256 KiB

# A job's dial through its scope's proxy (CONNECT), as python3 from the image.
DIAL = r'''
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection(("127.0.0.1", 3128), timeout=60)
s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
head = b""
while b"\r\n\r\n" not in head:
    c = s.recv(1)
    if not c:
        break
    head += c
print("status=" + (head.split(b" ")[1].decode() if b" " in head else "none"))
if head.startswith(b"HTTP/1.1 200"):
    if sys.argv[2] == "echo":
        s.sendall(b"canary-echo")
        print("echo=" + s.recv(100).decode())
    else:
        import threading
        n, got = int(sys.argv[2]), 0
        s.settimeout(30)
        def send():
            try:
                s.sendall(b"z" * n)
            except OSError:
                pass
        threading.Thread(target=send, daemon=True).start()
        try:
            while True:
                c = s.recv(65536)
                if not c:
                    break
                got += len(c)
        except OSError:
            pass
        print(f"received={got}")
'''


class Canary:
    def __init__(self, caps):
        self.failures = []
        self.scope_id = "canary-" + str(int(time.time()))
        deadline = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1800))
        status, self.view = request("POST", "/v1/test-scopes", {
            "scope_id": self.scope_id, "generation": 1, "binding_ref": "integration-native-test",
            "base_snapshot_ref": "canary/base", "input_file_refs": ["canary/input.txt"],
            "capability_digest": caps["capability_digest"], "deadline": deadline,
            "network_targets": [{"host": TARGET.rsplit(":", 1)[0].strip("[]"), "port": int(TARGET.rsplit(":", 1)[1])}],
            "limits": LIMITS})
        if status != 201:
            raise SystemExit(f"FAIL: the canary scope was not created ({status}): {self.view} — are the "
                             "canary refs canary/base and canary/input.txt in place?")

    def dial(self, what):
        script = "cat > /tmp/dial.py <<'PY'\n" + DIAL + "PY\npython3 /tmp/dial.py " + TARGET + " " + what
        _, _, out = self.run(script)
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def run(self, script):
        t = self.view["transport"]
        headers = {"X-Scope-Generation": "1", "X-Scope-Token": t["scope_token"]}
        status, res = request("POST", t["base_path"] + "/jobs/run", {"script": script, "timeout_seconds": 30},
                              headers=headers, timeout=120)
        if status != 200:
            return status, res, ""
        out = res["output"]
        while not res["done"]:
            status, res = request("POST", t["base_path"] + f"/jobs/{res['job_id']}/wait",
                                  {"offset": res["offset"], "timeout": 30}, headers=headers, timeout=120)
            out += res["output"]
        return status, res, out

    def expect(self, name, ok, detail=""):
        print(("ok   " if ok else "FAIL ") + name + (f": {detail}" if detail and not ok else ""))
        if not ok:
            self.failures.append(name)

    def positive_controls(self):
        _, res, out = self.run("cat ~/docs/readme.txt /inputs/canary/input.txt; echo w > ~/made && cat ~/made")
        self.expect("Home holds the base, the input is readable, Home is writable",
                    "dify native canary base" in out and "dify native canary input" in out and "w\n" in out, out)
        r = self.dial("echo")
        self.expect("a proxied dial reaches the network target", r.get("echo") == "canary-echo", str(r))

    def escapes(self):
        tries = {
            "no control or broker socket in the root": "find / -xdev -type s 2>/dev/null | head -1",
            "no parent /proc": "ls /proc | grep -x 1 >/dev/null && cat /proc/1/cmdline | grep -q native-worker && echo ESCAPED",
            # The image's /etc is the administrator's choice (SHELLCTL_NATIVE_IMAGE_ROOT); its
            # secrets must still not be readable, and nothing else of the host is there.
            "no host paths": "cat /etc/shadow 2>/dev/null | head -1; ls /var/lib /root /srv 2>/dev/null | head -1",
            "no direct network": "(exec 3<>/dev/tcp/1.1.1.1/80) 2>/dev/null && echo ESCAPED",
            "no mount": "mount -t tmpfs none /tmp 2>/dev/null && echo ESCAPED",
            "no unshare": "unshare -U -m true 2>/dev/null && echo ESCAPED",
            # The job's uid 0 is the dedicated user (one mapped id): no other uid to become, and
            # a setuid binary gains nothing (nosuid, no_new_privs, no capabilities).
            "no setuid": "awk '$3 != 1 {print \"ESCAPED\"} END {if (NR != 1) print \"ESCAPED\"}' /proc/self/uid_map; "
                         "python3 -c 'import os; os.setuid(1); print(\"ESCAPED\")' 2>/dev/null; "
                         "cp /bin/sh ~/s && chmod u+s ~/s 2>/dev/null; "
                         "~/s -c 'grep CapEff /proc/self/status' | grep -qv '0000000000000000' && echo ESCAPED",
        }
        for name, script in tries.items():
            _, _, out = self.run(script)
            self.expect(name, "ESCAPED" not in out and (name != "no control or broker socket in the root" or not out.strip())
                        and (name != "no host paths" or not out.strip()), out)
        _, res, out = self.run(":(){ :|:& };: 2>/dev/null; sleep 2; echo alive")
        self.expect("a fork bomb is held by pids.max", res.get("done", False), out[-200:])
        _, res, out = self.run("python3 -c 'x=bytearray(1<<30); print(len(x))' 2>&1; echo rc=$?")
        self.expect("a memory hog is killed by memory.max", "rc=0" not in out, out[-200:])
        r = self.dial(str(4 * NET_BUDGET))
        self.expect("a transfer beyond the network budget is stopped",
                    r.get("status") == "200" and int(r.get("received", NET_BUDGET + 1)) < NET_BUDGET, str(r))
        r = self.dial("echo")
        self.expect("a dial after the budget is spent is refused", r.get("status") == "429", str(r))
        self.expect("the scope's usage shows the budget spent",
                    self.inspect()["usage"]["network_bytes"] == NET_BUDGET, str(self.inspect()["usage"]))

    def inspect(self):
        return request("GET", f"/v1/test-scopes/{self.scope_id}", headers={"X-Scope-Generation": "1"})[1]

    def cgroup_bounds(self):
        """Q only: the scope's cgroup enforces what its limits say (root reads it)."""
        if not UNIT:
            return
        scope = cgroup_mount() + show("ControlGroup") + f"/{self.scope_id}.g1"
        values = {}
        for name in ("cpu.max", "memory.max", "memory.swap.max", "pids.max", "cgroup.max.descendants"):
            try:
                with open(os.path.join(scope, name)) as f:
                    values[name] = f.read().strip()
            except OSError as e:
                values[name] = f"unreadable: {e}"
        print("fact scope cgroup " + " ".join(f"{k}={v}" for k, v in values.items()))
        self.expect("the scope's cgroup bounds cpu, memory, swap and pids",
                    values["cpu.max"] == "50000 100000" and values["memory.max"] == str(LIMITS["memory_bytes"])
                    and values["memory.swap.max"] == "0" and values["pids.max"] == str(LIMITS["pids"]), str(values))
        _, _, out = self.run("for i in 1 2 3 4; do (timeout 3 sh -c 'while :; do :; done' &) ; done; sleep 4; echo spun")
        try:
            with open(os.path.join(scope, "cpu.stat")) as f:
                stat = dict(line.split() for line in f.read().splitlines())
        except OSError as e:
            stat = {"error": str(e)}
        self.expect("cpu.max throttles a busy job", int(stat.get("nr_throttled", "0")) > 0, str(stat))

    def restart_keeps_scope_and_job(self):
        """S31: a `systemctl restart` of the unit re-adopts the scope; its running job goes on."""
        if not UNIT:
            return
        t = self.view["transport"]
        headers = {"X-Scope-Generation": "1", "X-Scope-Token": t["scope_token"]}
        status, res = request("POST", t["base_path"] + "/jobs/run",
                              {"script": "for i in $(seq 0 29); do echo tick-$i; sleep 0.3; done", "timeout_seconds": 1},
                              headers=headers)
        old_pid = show("MainPID")
        subprocess.run(["systemctl", "restart", UNIT], check=False)
        for _ in range(60):
            try:
                if request("GET", "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        view = self.inspect()
        out, done = res.get("output", ""), res.get("done", True)
        while status == 200 and not done:
            status, w = request("POST", t["base_path"] + f"/jobs/{res['job_id']}/wait",
                                {"offset": res["offset"], "timeout": 30}, headers=headers, timeout=120)
            if status != 200:
                break
            res, out, done = w, out + w["output"], w["done"]
        facts, problems = unit_facts()
        for f in facts:
            print("fact after restart: " + f)
        self.expect("a restart re-adopts the scope and its job's output goes on",
                    view.get("state") == "ready" and "tick-29" in out and show("MainPID") != old_pid and not problems,
                    f"state={view.get('state')} out={out[-80:]!r} problems={problems}")

    def output_flood(self):
        # Last: it spends the scope's whole output budget (every later job would print nothing).
        _, res, out = self.run("yes flood | head -c 4000000")
        self.expect("an output flood fails the job", res.get("status") == "failed", json.dumps(res)[:300])

    def destroy(self):
        status, body = request("DELETE", f"/v1/test-scopes/{self.scope_id}", headers={"X-Scope-Generation": "1"})
        self.expect("the canary scope is destroyed", status == 200, str(body))


def main():
    missing, caps = prerequisites()
    if missing:
        print("integration-native-test: this host is not qualified; missing:")
        for m in missing:
            print("  - " + m)
        return 1
    c = Canary(caps)
    try:
        c.positive_controls()
        c.escapes()
        c.cgroup_bounds()
        c.restart_keeps_scope_and_job()
        c.output_flood()
    finally:
        c.destroy()
    if c.failures:
        print(f"integration-native-test: {len(c.failures)} failed")
        return 1
    print("integration-native-test: qualified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
