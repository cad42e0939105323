#!/usr/bin/env python3
"""Job benchmarks for `shellctl serve` (figures printed, nothing asserted on time).

  RunEcho          POST /v1/jobs/run {"script":"echo hi"} until done: p50/p95, sequential,
                   with the server's timeline of the series (/metrics'
                   shellctl_job_timeline_seconds: where the milliseconds go)
  parallel         jobs/s with 8 concurrent clients
  busy             RunEcho p50 while 32 `sleep 600` jobs run
  floor            a bare `tmux new-session -d` + `wait-for` round trip, no server, and
                   tmux alone through one control-mode client (a pane opened and closed,
                   no client start-up): both interleaved with RunEcho, job by job
  32 clients       jobs/s with 32 concurrent clients, against the 8-client figure
  state dir        RunEcho with the state dir on the disk and on a tmpfs, side by side
  1000 idle        RunEcho p50 with 1000 idle running jobs vs none
  list             GET /v1/jobs?limit=200 latency with 1000 jobs
  startup          start -> healthy with 1000 jobs in the database
  RSS              the server's resident set, idle and after the runs
  goals            each of issue 15's goals as a ratio within this run, met or not
  sandbox cost     RunEcho p50 of three servers side by side, interleaved: the full job
                   sandbox (path isolation on), namespaces without path isolation, and no
                   sandbox at all (SHELLCTL_ENABLE_PATH_ISOLATION=false,
                   SHELLCTL_JOB_NAMESPACES=off, the original's unsandboxed jobs)
  containment      RunEcho p50 with each job in a cgroup of its own (the detected root,
                   docs/jobs.md "Containment") and without (--cgroup-root none), interleaved with
                   the tmux floor: both as ratios to the floor, and what containment adds

  --compare DIR    instead of the above: RunEcho of another build (DIR holds its shellctl
                   and helpers, e.g. a checkout's build/bin) and of this one, side by side,
                   interleaved: p50/p95 and timelines of both, and 8 parallel clients each;
                   the "old -> new" figures of docs/benchmarks.md come from it

Usage: jobs_bench.py [path/to/shellctl] [--quick] [--sandbox-only] [--containment-only]
                     [--compare DIR]
"""
import concurrent.futures
import os
import shutil
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


def rss_split_kb(pid):
    """(anonymous, file-backed) resident KiB: the file pages are the shared libraries' code
    and data, clean and shared with every other process that maps them."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":"):
                fields[parts[0][:-1]] = int(parts[1]) if parts[1].isdigit() else 0
    return fields.get("Anonymous", 0), fields.get("Rss", 0) - fields.get("Anonymous", 0)


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


class CliFloor:
    """The goal's floor: tmux alone, driven from its command line as a script would:
    `tmux new-session -d` running the command, then `tmux wait-for` its signal (two tmux
    client start-ups, the pane's shell and the `wait-for -S` client inside it)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="shellctl-bench-floor-")
        self.sock = os.path.join(self.dir, "tmux.sock")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        self.tm = ["tmux", "-S", self.sock, "-f", "/dev/null"]
        self.i = 0
        subprocess.run(self.tm + ["start-server", ";", "set-option", "-g", "exit-empty", "off"],
                       env=self.env, check=True)
        self.one()  # warm-up

    def one(self):
        self.i += 1
        chan = f"done-{self.i}"
        t0 = time.monotonic()
        subprocess.run(self.tm + ["new-session", "-d", "-s", f"f{self.i}",
                                  f"echo hi > {self.dir}/out; "
                                  f"tmux -S {self.sock} wait-for -S {chan}"],
                       env=self.env, check=True)
        subprocess.run(self.tm + ["wait-for", chan], env=self.env, check=True)
        return time.monotonic() - t0

    def close(self):
        subprocess.run(self.tm + ["kill-server"], env=self.env, capture_output=True)
        subprocess.run(["rm", "-rf", self.dir])


class ControlFloor:
    """What tmux itself costs a job, without any client start-up: one control-mode client
    (as our server keeps one) creates a session whose pane runs `echo hi > out`, and waits
    for tmux to report that window closed. tmux forks the pane and runs libutempter's helper
    (fork, exec, wait) when a pane opens and again when it closes, so this is the least a
    job in a tmux pane can take from request to "its pane is gone"."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="shellctl-bench-ctlfloor-")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        self.tm = ["tmux", "-S", os.path.join(self.dir, "tmux.sock"), "-f", "/dev/null"]
        self.proc = subprocess.Popen(self.tm + ["-C", "new-session", "-A", "-s", "ctl",
                                                "exec sleep 2147483647"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.i = 0
        # The attach answers its own command first: skip to a reply we asked for.
        self.send("display-message -p floor-ready")
        while self.line() != "floor-ready":
            pass
        while not self.line().startswith("%end"):
            pass
        self.one()  # warm-up

    def send(self, line):
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def line(self):
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("control-mode floor: tmux closed its control client")
        return line.decode(errors="replace").rstrip("\n")

    def one(self):
        self.i += 1
        t0 = time.monotonic()
        self.send(f"new-session -d -P -F '#{{window_id}}' -s f{self.i} 'echo hi > {self.dir}/out'")
        window = None
        while True:  # the reply: %begin, the window id, %end
            line = self.line()
            if line.startswith("%error"):
                raise SystemExit("control-mode floor: new-session failed")
            if line.startswith("%end"):
                break
            if line.startswith("@"):
                window = line
        while self.line().split()[:2] != ["%unlinked-window-close", window]:
            pass
        return time.monotonic() - t0

    def close(self):
        subprocess.run(self.tm + ["kill-server"], capture_output=True)
        self.proc.wait()
        subprocess.run(["rm", "-rf", self.dir])


def control_floor_growth(report, n_idle):
    """tmux alone, through a control client, with no other session and with `n_idle` idle
    ones: the part of the idle-jobs slowdown that is tmux's own (its per-session work when a
    pane opens and closes), measured without our server."""
    f = ControlFloor()
    try:
        base = statistics.median([f.one() for _ in range(N_SEQ)])
        for i in range(n_idle):
            f.send(f"new-session -d -s idle{i} 'sleep 600'")
            while not f.line().startswith("%end"):
                pass
        busy = statistics.median([f.one() for _ in range(N_SEQ)])
    finally:
        f.close()
    report(f"tmux alone (control client) p50, none / {n_idle} idle sessions",
           f"{ms(base)} / {ms(busy)} ({busy / base:.2f}x)")


def floors_and_run_echo(s, n):
    """RunEcho and both floors, one of each in turn, so that the machine's drift (it is
    noisy: this VM's RunEcho moves between 20 and 35 ms from one minute to the next) hits
    all three alike. Returns (RunEcho, CLI floor, control floor) latencies."""
    floors = [CliFloor(), ControlFloor()]
    try:
        run_echo(s)  # warm-up
        times = ([], [], [])
        for _ in range(n):
            times[0].append(run_echo(s))
            times[1].append(floors[0].one())
            times[2].append(floors[1].one())
        return times
    finally:
        for f in floors:
            f.close()


def state_dir_filesystem(report):
    """RunEcho with the state dir on the disk and on a tmpfs, side by side. A job creates
    two directories and about ten files; on a filesystem where creating an inode is dear
    (ext4 without a journal checks every recently deleted inode of the group, see docs/benchmarks.md)
    that shows here and nowhere else in the timeline but `files_written`."""
    mount = os.environ.get("SHELLCTL_BENCH_TMPFS")
    mounted = None
    if not mount:
        if os.geteuid() != 0:
            report("RunEcho p50, state dir on a tmpfs",
                   "not measured: needs root (to mount one) or SHELLCTL_BENCH_TMPFS=<a tmpfs dir>")
            return
        mounted = tempfile.mkdtemp(prefix="shellctl-bench-tmpfs-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g,mode=755", "tmpfs", mounted],
                       check=True)
        mount = mounted
    on_tmpfs = tempfile.mkdtemp(prefix="shellctl-bench-", dir=mount)
    os.chmod(on_tmpfs, 0o755)
    servers = [Server(), Server(home=os.path.join(on_tmpfs, "home"),
                                state_dir=os.path.join(on_tmpfs, "state"))]
    try:
        times = [[], []]
        for srv in servers:
            run_echo(srv)  # warm-up
        for _ in range(N_SEQ):
            for k, srv in enumerate(servers):
                times[k].append(run_echo(srv))
        disk, tmpfs = (statistics.median(t) for t in times)
        report("RunEcho p50, state dir on the disk / on a tmpfs",
               f"{ms(disk)} / {ms(tmpfs)} ({disk / tmpfs:.2f}x)")
    finally:
        for srv in servers:
            srv.close()
            srv.reap()
        shutil.rmtree(on_tmpfs, ignore_errors=True)
        if mounted:
            subprocess.run(["umount", mounted])
            os.rmdir(mounted)


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


def containment_cost(report, goal):
    """RunEcho on two otherwise equal servers, with whole-tree containment (a cgroup per job:
    mkdir, the runner's child entering it, cgroup.kill + populated 0 + rmdir at the end)
    and without, and the bare tmux floor, one of each in turn (the machine's drift hits all
    three alike)."""
    servers = [Server(), Server(args=["--cgroup-root", "none"])]
    floor = CliFloor()
    try:
        if "cgroup /" not in servers[0].read_stderr():
            report("RunEcho p50 with / without cgroup containment",
                   "not measured: this machine gives the server no cgroup v2 root")
            return
        times = ([], [], [])
        for s in servers:
            run_echo(s)  # warm-up
        for i in range(N_SEQ):
            # The order alternates: a job right after another one's end pays for its
            # clean-up (the cgroup's end, tmux closing a pane) on these 2 CPUs.
            for k in ((0, 1) if i % 2 == 0 else (1, 0)):
                times[k].append(run_echo(servers[k]))
            times[2].append(floor.one())
        with_cg, without, fl = (statistics.median(t) for t in times)
        report("RunEcho p50 with / without cgroup containment",
               f"{ms(with_cg)} / {ms(without)} (+{ms(with_cg - without)})")
        report("  as ratios to the tmux floor p50 " + ms(fl),
               f"{with_cg / fl:.2f}x / {without / fl:.2f}x")
        goal("containment's added RunEcho p50 / 1 ms", (with_cg - without) / 0.001, 1.0)
    finally:
        floor.close()
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


def parallel_rate(s, clients, n):
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(lambda _: run_echo(s), range(n)))
    return n / (time.monotonic() - t0)


def main():
    figures = []
    goals = []

    def report(name, value):
        figures.append((name, value))
        print(f"{name:<52} {value}", flush=True)

    def goal(name, ratio, bound, at_most=True):
        met = ratio <= bound if at_most else ratio >= bound
        goals.append(f"{name:<58} {ratio:7.2f}  (goal {'<=' if at_most else '>='} {bound}: "
                     f"{'met' if met else 'NOT met'})")

    print(f"shellctl job benchmarks ({'quick' if QUICK else 'full'}; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})", flush=True)

    if "--compare" in sys.argv:
        compare(report, sys.argv[sys.argv.index("--compare") + 1])
        return
    if "--containment-only" not in sys.argv:
        sandbox_cost(report)
    if "--sandbox-only" not in sys.argv:
        containment_cost(report, goal)
    if "--sandbox-only" in sys.argv or "--containment-only" in sys.argv:
        for line in goals:
            print("  " + line)
        return
    state_dir_filesystem(report)

    s = Server()
    try:
        time.sleep(0.5)
        rss_idle = rss_kb(s.pid)
        anon, files = rss_split_kb(s.pid)
        report("RSS idle", f"{rss_idle / 1024:.1f} MiB (anonymous {anon / 1024:.1f} MiB, "
                           f"shared libraries' pages {files / 1024:.1f} MiB)")

        before = timeline_sums(s)
        t, cli, ctl = floors_and_run_echo(s, N_SEQ)
        print_timeline(report, before, timeline_sums(s))
        p50, cli50, ctl50 = (statistics.median(x) for x in (t, cli, ctl))
        p95, cli95 = pct(t, 95), pct(cli, 95)
        report("floor: tmux new-session + wait-for p50 / p95", f"{ms(cli50)} / {ms(cli95)}")
        report("tmux alone via a control client (pane open+close) p50",
               f"{ms(ctl50)} (the floor's client start-ups: {ms(cli50 - ctl50)})")
        report(f"RunEcho sequential p50 / p95 (n={N_SEQ})",
               f"{ms(p50)} / {ms(p95)} ({p50 / ctl50:.2f}x tmux alone, +{ms(p50 - ctl50)})")
        goal("RunEcho p50 / floor p50", p50 / cli50, 1.0)
        goal("RunEcho p95 / floor p95", p95 / cli95, 1.3)

        cpu0, own0 = busy_cpu_seconds(), process_cpu_seconds(s.pid)
        t = run_echo_series(s, N_SEQ)
        cpu = (busy_cpu_seconds() - cpu0) / (N_SEQ + 1)
        own = (process_cpu_seconds(s.pid) - own0) / (N_SEQ + 1)
        # CPU per job near its latency means the path is bound by CPU work, not by waits:
        # then parallel clients on 2 CPUs can gain at most 2 x latency / CPU per job.
        report("RunEcho CPU per job, all processes (machine busy time)",
               f"{ms(cpu)} ({cpu / statistics.mean(t):.2f}x its mean latency)")
        report("RunEcho CPU per job, the server alone", ms(own))
        sequential = len(t) / sum(t)

        rate8 = parallel_rate(s, 8, N_PAR)
        report(f"RunEcho 8 parallel clients (n={N_PAR})",
               f"{rate8:.1f} jobs/s ({rate8 / sequential:.2f}x sequential {sequential:.1f})")
        rate32 = parallel_rate(s, 32, N_PAR)
        report(f"RunEcho 32 parallel clients (n={N_PAR})",
               f"{rate32:.1f} jobs/s ({rate32 / rate8:.2f}x 8 clients)")
        goal("8 parallel clients / sequential jobs/s", rate8 / sequential, 1.8, at_most=False)
        goal("32 parallel clients / 8 clients jobs/s", rate32 / rate8, 1.0, at_most=False)

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
        rss_before = rss_kb(s.pid)
        t0 = time.monotonic()
        start_sleepers(s, N_IDLE)
        report(f"start {N_IDLE} sleep jobs (16 clients)", f"{time.monotonic() - t0:.1f} s")
        before = timeline_sums(s)
        t = run_echo_series(s, N_SEQ)
        print(f"with {N_IDLE} idle running jobs: ", end="")
        print_timeline(lambda *a: None, before, timeline_sums(s))
        busy = statistics.median(t)
        report(f"RunEcho p50 with {N_IDLE} idle running jobs",
               f"{ms(busy)} ({busy / base:.2f}x no other job)")
        goal(f"RunEcho p50 with {N_IDLE} idle jobs / with none", busy / base, 1.2)
        control_floor_growth(report, N_IDLE)
        lt = []
        for _ in range(N_SEQ):
            t0 = time.monotonic()
            jobs = s.ok("GET", "/v1/jobs?limit=200")["jobs"]
            lt.append(time.monotonic() - t0)
            assert len(jobs) == 200
        listed = statistics.median(lt)
        report(f"GET /v1/jobs?limit=200 p50 ({N_IDLE + N_SEQ + 1} jobs)", ms(listed))
        report(f"GET /v1/jobs?limit=200 p95 ({N_IDLE + N_SEQ + 1} jobs)", ms(pct(lt, 95)))
        goal(f"GET /v1/jobs?limit=200 p50 with {N_IDLE} jobs / 10 ms", listed / 0.010, 1.0)
        rss_jobs = rss_kb(s.pid)
        per_job = (rss_jobs - rss_before) / N_IDLE
        report(f"RSS with {N_IDLE} running jobs",
               f"{rss_jobs / 1024:.1f} MiB ({per_job:.1f} KiB per idle running job)")
        goal("RSS idle / 8 MiB", rss_idle / 1024 / 8, 1.0)
        goal("RSS per idle running job / 16 KiB", per_job / 16, 1.0)
        s.stop()
        t0 = time.monotonic()
        s.start(wait=False)
        s.wait_healthy(interval=0.001)  # the default 20 ms poll would round the figure up
        healthy = time.monotonic() - t0
        report(f"start -> healthy, {N_IDLE} running jobs in the DB", ms(healthy))
        goal(f"start -> healthy with {N_IDLE} jobs / 100 ms", healthy / 0.100, 1.0)
        report(f"RSS after restart with {N_IDLE} jobs", f"{rss_kb(s.pid) / 1024:.1f} MiB")
    finally:
        s.close()
        s.reap()

    print("\nsummary")
    for name, value in figures:
        print(f"  {name:<52} {value}")
    print("\ngoals (issues 15 and 16; ratios within this run)")
    for line in goals:
        print("  " + line)


if __name__ == "__main__":
    main()
