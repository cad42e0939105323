"""The `integration-native-test` suite (native-scopes.md §9 tier Q, guarantee S33): qualifies one
provisioned host, never this development machine. It needs, and fails (exit 1, never 77) when any
is missing — listing every one:

  DIFY_AGENT_LOCAL_NATIVE_TEST_ENDPOINT    the supervisor's base URL (http://127.0.0.1:PORT)
  DIFY_AGENT_LOCAL_NATIVE_TEST_AUTH_TOKEN  its bearer
  the supervisor's own `--native-check` passing (`shellctl serve --native-test-supervisor
  --native-check` with the unit's environment: SHELLCTL_NATIVE_BASE_ROOT, _INPUT_ROOT, ...,
  SHELLCTL_AUTH_TOKEN, SHELLCTL_STATE_DIR; SHELLCTL_BIN the shellctl to run, default on PATH)
  a capability document that enforces cpu, memory and pids with AppArmor in force
  the canary refs `canary/base` and `canary/input.txt` (tests/native/canary/README.md)

Then a canary scope runs: positive controls (Home write, input read) so that a job that never
ran cannot pass, then escapes that must each fail — sockets and parent /proc, host paths,
direct network, mount, unshare, setuid, a fork bomb held by pids.max, a memory hog killed by
memory.max, an output flood failing the job — and the scope's destruction. Network transfers
through the broker are part of the qualification too: this build has no broker yet (issue
18), so a qualified host still fails here until it has one."""
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
    if not SHELLCTL:
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
          "network_bytes": 0, "network_connections": 0}


class Canary:
    def __init__(self, caps):
        self.failures = []
        self.scope_id = "canary-" + str(int(time.time()))
        deadline = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1800))
        status, self.view = request("POST", "/v1/test-scopes", {
            "scope_id": self.scope_id, "generation": 1, "binding_ref": "integration-native-test",
            "base_snapshot_ref": "canary/base", "input_file_refs": ["canary/input.txt"],
            "capability_digest": caps["capability_digest"], "deadline": deadline,
            "network_targets": [], "limits": LIMITS})
        if status != 201:
            raise SystemExit(f"FAIL: the canary scope was not created ({status}): {self.view} — are the "
                             "canary refs canary/base and canary/input.txt in place?")

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

    def escapes(self):
        tries = {
            "no control or broker socket in the root": "find / -xdev -type s 2>/dev/null | head -1",
            "no parent /proc": "ls /proc | grep -x 1 >/dev/null && cat /proc/1/cmdline | grep -q native-worker && echo ESCAPED",
            "no host paths": "ls /etc/shadow /var/lib /root 2>/dev/null | head -1",
            "no direct network": "(exec 3<>/dev/tcp/1.1.1.1/80) 2>/dev/null && echo ESCAPED",
            "no mount": "mount -t tmpfs none /tmp 2>/dev/null && echo ESCAPED",
            "no unshare": "unshare -U -m true 2>/dev/null && echo ESCAPED",
            "no setuid": "cp /bin/sh ~/s && chmod u+s ~/s && ~/s -c 'id -u' | grep -qv '^0$' || true; "
                         "python3 -c 'import os; os.setuid(0)' 2>/dev/null && echo ESCAPED",
        }
        for name, script in tries.items():
            _, _, out = self.run(script)
            self.expect(name, "ESCAPED" not in out and (name != "no control or broker socket in the root" or not out.strip())
                        and (name != "no host paths" or not out.strip()), out)
        _, res, out = self.run(":(){ :|:& };: 2>/dev/null; sleep 2; echo alive")
        self.expect("a fork bomb is held by pids.max", res.get("done", False), out[-200:])
        _, res, out = self.run("python3 -c 'x=bytearray(1<<30); print(len(x))' 2>&1; echo rc=$?")
        self.expect("a memory hog is killed by memory.max", "rc=0" not in out, out[-200:])
        _, res, out = self.run("yes flood | head -c 4000000")
        self.expect("an output flood fails the job", res.get("status") == "failed", json.dumps(res)[:300])
        self.expect("network transfers through the broker", False,
                    "this build has no network broker (issue 18): network targets are refused")

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
    finally:
        c.destroy()
    if c.failures:
        print(f"integration-native-test: {len(c.failures)} failed")
        return 1
    print("integration-native-test: qualified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
