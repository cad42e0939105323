#!/usr/bin/env python3
"""Job benchmarks for `shellctl serve` (figures printed, nothing asserted on time).

  RunEcho          POST /v1/jobs/run {"script":"echo hi"} until done: p50/p95, sequential,
                   with the server's timeline of the series (/metrics'
                   shellctl_job_timeline_seconds: where the milliseconds go)
  parallel         jobs/s with 8 concurrent clients
  busy             RunEcho p50 while 32 `sleep 600` jobs run
  floor            a bare `tmux new-session -d` + `wait-for` round trip, no server
  1000 idle        RunEcho p50 with 1000 idle running jobs vs none
  list             GET /v1/jobs?limit=200 latency with 1000 jobs
  startup          start -> healthy with 1000 jobs in the database
  RSS              the server's resident set, idle and after the runs
  sandbox cost     RunEcho p50 of three servers side by side, interleaved: the full job
                   sandbox (path isolation on), namespaces without path isolation, and no
                   sandbox at all (SHELLCTL_ENABLE_PATH_ISOLATION=false,
                   SHELLCTL_JOB_NAMESPACES=off, the original's unsandboxed jobs)

  --compare DIR    instead of the above: RunEcho of another build (DIR holds its shellctl
                   and helpers, e.g. a checkout's build/bin) and of this one, side by side,
                   interleaved: p50/p95 and timelines of both, and 8 parallel clients each;
                   the "old -> new" figures of the README come from it

Usage: jobs_bench.py [path/to/shellctl] [--quick] [--sandbox-only] [--compare DIR]
"""
import concurrent.futures
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_setup import QUICK, pct  # noqa: E402  (argv, the harness on sys.path)
from harness import Server  # noqa: E402

N_SEQ = 30 if QUICK else 100
N_PAR = 80 if QUICK else 240
N_IDLE = 200 if QUICK else 1000


def ms(x):
    return f"{x * 1000:.1f} ms"


def run_echo(s):
    t0 = time.monotonic()
    res, out = s.run_to_completion("echo hi")
    dt = time.monotonic() - t0
    if out != "hi\n" or res["status"] != "exited":
        raise SystemExit(f"RunEcho wrong result: {res} {out!r}")
    return dt


def run_echo_series(s, n):
    run_echo(s)  # warm-up
    return [run_echo(s) for _ in range(n)]


def process_cpu_seconds(pid):
    """utime + stime of one process (the server), from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy_cpu_seconds():
    """CPU time the whole machine spent busy (every process: server, tmux, helpers, jobs,
    the kernel, and this client), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def start_sleepers(s, n, workers=16):
    def one(_):
        return s.run("sleep 600", timeout=0.05)["job_id"]
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, range(n)))


def timeline_sums(s):
    """{mark: (sum, count)} of shellctl_job_timeline_seconds{mode="pty"} from /metrics."""
    st, _, body = s.request("GET", "/metrics")
    text = body.decode() if isinstance(body, bytes) else str(body)
    out = {}
    for line in text.splitlines():
        for kind in ("sum", "count"):
            prefix = f'shellctl_job_timeline_seconds_{kind}{{mode="pty",mark="'
            if line.startswith(prefix):
                mark, value = line[len(prefix):].split('"}', 1)
                out.setdefault(mark, [0.0, 0])[0 if kind == "sum" else 1] = float(value)
    return out


def print_timeline(report, before, after):
    """Where a RunEcho's milliseconds go, from the server's own marks (mean of the series)."""
    means = []
    for mark, (total, count) in after.items():
        b_total, b_count = before.get(mark, (0.0, 0))
        if count - b_count > 0:
            means.append(((total - b_total) / (count - b_count), mark))
    means.sort()
    print("RunEcho timeline (server marks, mean from admission; step = since the previous mark)")
    prev = 0.0
    for at, mark in means:
        print(f"  {mark:<18} at {at * 1000:7.2f} ms   step {max(at - prev, 0) * 1000:6.2f} ms")
        prev = at
    if means:
        report("RunEcho admission -> done answered (server marks, mean)", ms(means[-1][0]))


def floor(n):
    """tmux alone: new-session -d running the command, then wait-for its signal."""
    d = tempfile.mkdtemp(prefix="shellctl-bench-floor-")
    sock = os.path.join(d, "tmux.sock")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
    tm = ["tmux", "-S", sock, "-f", "/dev/null"]
    subprocess.run(tm + ["start-server", ";", "set-option", "-g", "exit-empty", "off"],
                   env=env, check=True)
    times = []
    try:
        for i in range(n + 1):
            chan = f"done-{i}"
            t0 = time.monotonic()
            subprocess.run(tm + ["new-session", "-d", "-s", f"f{i}",
                                 f"echo hi > {d}/out; tmux -S {sock} wait-for -S {chan}"],
                           env=env, check=True)
            subprocess.run(tm + ["wait-for", chan], env=env, check=True)
            if i:
                times.append(time.monotonic() - t0)
    finally:
        subprocess.run(tm + ["kill-server"], env=env, capture_output=True)
        subprocess.run(["rm", "-rf", d])
    return times


def sandbox_cost(report):
    """The same RunEcho on three servers in one run, one job each in turn, so that drift
    of the machine hits all three alike; figures are ratios to the unsandboxed server."""
    configs = [
        ("full sandbox (isolation on)", {}),
        ("namespaces, no path isolation", {"SHELLCTL_ENABLE_PATH_ISOLATION": "false"}),
        ("no sandbox", {"SHELLCTL_ENABLE_PATH_ISOLATION": "false",
                        "SHELLCTL_JOB_NAMESPACES": "off"}),
    ]
    servers = [Server(env=env) for _, env in configs]
    try:
        times = [[] for _ in servers]
        for s in servers:
            run_echo(s)  # warm-up
        for _ in range(N_SEQ):
            for k, s in enumerate(servers):
                times[k].append(run_echo(s))
        base = statistics.median(times[-1])
        for (name, _), t in zip(configs, times):
            p50 = statistics.median(t)
            report(f"RunEcho p50, {name}",
                   f"{ms(p50)} ({p50 / base:.2f}x no sandbox, +{ms(p50 - base)})")
    finally:
        for s in servers:
            s.close()
            s.reap()


def compare(report, old_dir):
    """The same RunEcho on an older build and on this one, one job each in turn."""
    names = ("old", "new")
    servers = [Server(bin_dir=os.path.abspath(old_dir)), Server()]
    try:
        for s in servers:
            run_echo(s)  # warm-up
        before = [timeline_sums(s) for s in servers]
        times = [[], []]
        for _ in range(N_SEQ):
            for k, s in enumerate(servers):
                times[k].append(run_echo(s))
        for k, s in enumerate(servers):
            print(f"{names[k]}: ", end="")
            print_timeline(lambda *a: None, before[k], timeline_sums(s))
        p50 = [statistics.median(t) for t in times]
        p95 = [pct(t, 95) for t in times]
        for k in range(2):
            report(f"RunEcho p50 / p95, {names[k]} (n={N_SEQ})",
                   f"{ms(p50[k])} / {ms(p95[k])} ({p50[k] / p50[0]:.2f}x old)")
        # The server's own CPU per job, and what it burns while idle (the other server is
        # idle meanwhile, so the machine-wide figure mixes both: it is left out here).
        own = []
        for k, s in enumerate(servers):
            cpu0 = process_cpu_seconds(s.pid)
            for _ in range(N_SEQ):
                run_echo(s)
            own.append((process_cpu_seconds(s.pid) - cpu0) / N_SEQ)
        for k, s in enumerate(servers):
            report(f"server CPU per RunEcho, {names[k]}",
                   f"{ms(own[k])} ({own[k] / own[0]:.2f}x old)")
        for k, s in enumerate(servers):
            cpu0 = process_cpu_seconds(s.pid)
            time.sleep(2)
            report(f"server CPU while idle, {names[k]}",
                   f"{(process_cpu_seconds(s.pid) - cpu0) / 2 * 100:.1f} % of a CPU")
        rates = []
        for k, s in enumerate(servers):
            t0 = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda _: run_echo(s), range(N_PAR)))
            rates.append(N_PAR / (time.monotonic() - t0))
            report(f"RunEcho 8 parallel clients, {names[k]} (n={N_PAR})",
                   f"{rates[k]:.1f} jobs/s ({rates[k] / rates[0]:.2f}x old, "
                   f"{rates[k] * p50[k]:.2f}x its sequential)")
    finally:
        for s in servers:
            s.close()
            s.reap()


def main():
    figures = []

    def report(name, value):
        figures.append((name, value))
        print(f"{name:<52} {value}", flush=True)

    print(f"shellctl job benchmarks ({'quick' if QUICK else 'full'}; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})", flush=True)

    if "--compare" in sys.argv:
        compare(report, sys.argv[sys.argv.index("--compare") + 1])
        return
    sandbox_cost(report)
    if "--sandbox-only" in sys.argv:
        return

    t = floor(N_SEQ)
    report("floor: tmux new-session + wait-for p50", ms(statistics.median(t)))
    report("floor: tmux new-session + wait-for p95", ms(pct(t, 95)))

    s = Server()
    try:
        time.sleep(0.5)
        report("RSS idle", f"{rss_kb(s.pid) / 1024:.1f} MiB")

        before = timeline_sums(s)
        cpu0, own0 = busy_cpu_seconds(), process_cpu_seconds(s.pid)
        t = run_echo_series(s, N_SEQ)
        cpu = (busy_cpu_seconds() - cpu0) / (N_SEQ + 1)
        own = (process_cpu_seconds(s.pid) - own0) / (N_SEQ + 1)
        print_timeline(report, before, timeline_sums(s))
        report(f"RunEcho sequential p50 (n={N_SEQ})", ms(statistics.median(t)))
        # CPU per job near its latency means the path is bound by CPU work, not by waits:
        # then parallel clients on 2 CPUs can gain at most 2 x latency / CPU per job.
        report("RunEcho CPU per job, all processes (machine busy time)",
               f"{ms(cpu)} ({cpu / statistics.mean(t):.2f}x its mean latency)")
        report("RunEcho CPU per job, the server alone", ms(own))
        report(f"RunEcho sequential p95 (n={N_SEQ})", ms(pct(t, 95)))

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda _: run_echo(s), range(N_PAR)))
        report(f"RunEcho 8 parallel clients (n={N_PAR})",
               f"{N_PAR / (time.monotonic() - t0):.1f} jobs/s")

        sleepers = start_sleepers(s, 32)
        t = run_echo_series(s, N_SEQ)
        report("RunEcho p50 with 32 `sleep 600` running", ms(statistics.median(t)))
        for job_id in sleepers:
            s.request("POST", f"/v1/jobs/{job_id}/terminate", {"grace_seconds": 0})
        report("RSS after the runs", f"{rss_kb(s.pid) / 1024:.1f} MiB")
    finally:
        s.close()
        s.reap()

    s = Server()
    try:
        t = run_echo_series(s, N_SEQ)
        base = statistics.median(t)
        report("RunEcho p50 with no other job", ms(base))
        t0 = time.monotonic()
        start_sleepers(s, N_IDLE)
        report(f"start {N_IDLE} sleep jobs (16 clients)", f"{time.monotonic() - t0:.1f} s")
        t = run_echo_series(s, N_SEQ)
        report(f"RunEcho p50 with {N_IDLE} idle running jobs", ms(statistics.median(t)))
        lt = []
        for _ in range(N_SEQ):
            t0 = time.monotonic()
            jobs = s.ok("GET", "/v1/jobs?limit=200")["jobs"]
            lt.append(time.monotonic() - t0)
            assert len(jobs) == 200
        report(f"GET /v1/jobs?limit=200 p50 ({N_IDLE + N_SEQ + 1} jobs)",
               ms(statistics.median(lt)))
        report(f"GET /v1/jobs?limit=200 p95 ({N_IDLE + N_SEQ + 1} jobs)", ms(pct(lt, 95)))
        report(f"RSS with {N_IDLE} running jobs", f"{rss_kb(s.pid) / 1024:.1f} MiB")
        s.stop()
        t0 = time.monotonic()
        s.start()
        report(f"start -> healthy, {N_IDLE} running jobs in the DB",
               ms(time.monotonic() - t0))
        report(f"RSS after restart with {N_IDLE} jobs", f"{rss_kb(s.pid) / 1024:.1f} MiB")
    finally:
        s.close()
        s.reap()

    print("\nsummary")
    for name, value in figures:
        print(f"  {name:<52} {value}")


if __name__ == "__main__":
    main()
