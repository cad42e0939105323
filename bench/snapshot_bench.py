#!/usr/bin/env python3
"""Home snapshot benchmarks for `shellctl serve` (figures printed, nothing asserted on time).

On one generated Home (many small files, some large compressible ones, some incompressible;
~1 GiB, or ~200 MiB with --quick), measured side by side in one run:

  save      POST /v1/snapshot/save read to its end, MB/s of Home data, next to
            `tar -cf - . | zstd -3` on the same tree
  restore   POST /v1/snapshot/restore of that archive into an empty Home, next to
            `zstd -d | tar -xf -` of the same archive
  RSS       the server's peak resident set growth during each (VmHWM before/after)
  overhead  a 100-file Home saved and restored, against an empty one
  compare   with --compare DIR: the save and restore of another build (DIR holds its
            shellctl and helpers) on the same Home, interleaved with ours round by round

Each figure is the best of three runs. The trees live on a tmpfs (/dev/shm) when it has
room: on ext4, creating thousands of files right after deleting thousands costs whoever
comes second seconds of inode search, which would measure the file system, not us.
Usage: snapshot_bench.py [path/to/shellctl] [--quick] [--compare DIR]
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from bench_setup import QUICK  # noqa: E402  (argv, the harness on sys.path)
from harness import Server  # noqa: E402

SCALE = 0.2 if QUICK else 1.0
RUNS = 3


def generate(home):
    """~1 GiB × SCALE: 20000 small text files, large compressible logs, random blobs."""
    rnd = open("/dev/urandom", "rb")
    small = int(20000 * SCALE)
    for i in range(small):
        d = os.path.join(home, "src", f"pkg{i // 200}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"file{i}.py"), "w") as f:
            f.write(f"# module {i}\n" + "def f(x):\n    return x * %d\n" % i * 20)
    os.makedirs(os.path.join(home, "logs"), exist_ok=True)
    line = b"2026-12-02T03:00:00Z INFO request handled path=/v1/jobs status=200 ms=3\n"
    for i in range(4):
        with open(os.path.join(home, "logs", f"app{i}.log"), "wb") as f:
            for _ in range(int(150 * SCALE)):
                f.write(line * 14000)  # ~1 MiB per write
    os.makedirs(os.path.join(home, "blobs"), exist_ok=True)
    for i in range(4):
        with open(os.path.join(home, "blobs", f"blob{i}.bin"), "wb") as f:
            for _ in range(int(100 * SCALE)):
                f.write(rnd.read(1 << 20))
    total = 0
    for root, _, files in os.walk(home):
        for n in files:
            total += os.path.getsize(os.path.join(root, n))
    return total


def hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1])
    return 0


def reset_hwm(pid):
    # Writing 5 to clear_refs resets the peak RSS counter (VmHWM) of the process.
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def http_save(port, out_path):
    """Reads the whole save stream into out_path (raw body, dechunked by curl)."""
    t0 = time.monotonic()
    subprocess.run(["curl", "-sf", "-X", "POST", "-o", out_path,
                    f"http://127.0.0.1:{port}/v1/snapshot/save"], check=True)
    return time.monotonic() - t0


def http_restore(port, archive):
    t0 = time.monotonic()
    subprocess.run(["curl", "-sf", "-X", "POST", "-H", "Content-Type: application/octet-stream",
                    "-H", "Expect:", "--data-binary", "@" + archive, "-o", "/dev/null",
                    f"http://127.0.0.1:{port}/v1/snapshot/restore"], check=True)
    return time.monotonic() - t0


def pipeline_save(home, out_path):
    t0 = time.monotonic()
    subprocess.run(f"tar -C '{home}' -cf - . | zstd -3 -q -c > '{out_path}'", shell=True,
                   check=True)
    return time.monotonic() - t0


def pipeline_restore(archive, dest):
    t0 = time.monotonic()
    subprocess.run(f"zstd -d -q -c '{archive}' | tar -C '{dest}' -xf -", shell=True, check=True)
    return time.monotonic() - t0


def empty_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


def work_dir():
    shm = "/dev/shm"
    try:
        st = os.statvfs(shm)
        if st.f_bavail * st.f_frsize > 4 * (1 << 30) * SCALE:
            return tempfile.mkdtemp(prefix="shellctl-snapbench-", dir=shm), "tmpfs"
    except OSError:
        pass
    return tempfile.mkdtemp(prefix="shellctl-snapbench-"), "disk"


def server_in(work, name, home=None, bin_dir=None):
    home = home or os.path.join(work, name + "-home")
    os.makedirs(home, exist_ok=True)
    s = Server(start=False, home=home, env={"SHELLCTL_SNAPSHOT_TIMEOUT": "30m"}, bin_dir=bin_dir)
    s.state_dir = os.path.join(work, name + "-state")
    return s.start()


def clear(home):
    for entry in os.listdir(home):
        p = os.path.join(home, entry)
        shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)


def main():
    work, medium = work_dir()
    try:
        src = server_in(work, "src")
        dst = server_in(work, "dst")
        size = generate(src.home)
        mb = size / 1e6
        print(f"Home: {mb:.0f} MB in {sum(len(f) for _, _, f in os.walk(src.home))} files "
              f"(on {medium})")
        ours_archive = os.path.join(work, "ours.tar.zst")
        ref_archive = os.path.join(work, "ref.tar.zst")
        ref_dest = os.path.join(work, "ref-dest")

        save_ours, save_ref, rss_save = [], [], []
        for _ in range(RUNS):
            save_ref.append(pipeline_save(src.home, ref_archive))
            reset_hwm(src.proc.pid)
            base = hwm_kib(src.proc.pid)
            save_ours.append(http_save(src.port, ours_archive))
            rss_save.append(hwm_kib(src.proc.pid) - base)
        restore_ours, restore_ref, rss_restore = [], [], []
        for _ in range(RUNS):
            empty_dir(ref_dest)
            restore_ref.append(pipeline_restore(ours_archive, ref_dest))
            clear(dst.home)
            reset_hwm(dst.proc.pid)
            base = hwm_kib(dst.proc.pid)
            restore_ours.append(http_restore(dst.port, ours_archive))
            rss_restore.append(hwm_kib(dst.proc.pid) - base)
        if "--compare" in sys.argv:
            # The other build on the same Home and archive, round by round with ours.
            other_dir = os.path.abspath(sys.argv[sys.argv.index("--compare") + 1])
            osrc = server_in(work, "osrc", home=src.home, bin_dir=other_dir)
            odst = server_in(work, "odst", bin_dir=other_dir)
            other_archive = os.path.join(work, "other.tar.zst")
            cs, cso, cr, cro = [], [], [], []
            try:
                for _ in range(RUNS):
                    cs.append(http_save(src.port, ours_archive))
                    cso.append(http_save(osrc.port, other_archive))
                    clear(dst.home)
                    cr.append(http_restore(dst.port, ours_archive))
                    clear(odst.home)
                    cro.append(http_restore(odst.port, ours_archive))
            finally:
                osrc.close()
                odst.close()
            print(f"  compared, interleaved: save {mb / min(cs):.0f} MB/s against {mb / min(cso):.0f} MB/s "
                  f"({min(cso) / min(cs):.2f}x), restore {mb / min(cr):.0f} MB/s against "
                  f"{mb / min(cro):.0f} MB/s ({min(cro) / min(cr):.2f}x) for {other_dir}")
        so, sr, ro, rr = min(save_ours), min(save_ref), min(restore_ours), min(restore_ref)
        print(f"  archive sizes: ours {os.path.getsize(ours_archive) / 1e6:.0f} MB, "
              f"tar|zstd -3 {os.path.getsize(ref_archive) / 1e6:.0f} MB")
        print(f"  save     shellctl {mb / so:7.0f} MB/s   tar | zstd -3   {mb / sr:7.0f} MB/s"
              f"   ratio {sr / so:.2f}x (goal >= 1.2x)")
        print(f"  restore  shellctl {mb / ro:7.0f} MB/s   zstd -d | tar -x {mb / rr:7.0f} MB/s"
              f"   ratio {rr / ro:.2f}x (goal >= 1.0x)")
        print(f"  peak RSS growth: save {max(rss_save) / 1024:.1f} MiB, restore "
              f"{max(rss_restore) / 1024:.1f} MiB (goal <= 64 MiB)")

        # Per-operation overhead: a 100-file Home against an empty one.
        small = server_in(work, "small")
        try:
            def timed(op):
                best = None
                for _ in range(20):
                    t = op()
                    best = t if best is None else min(best, t)
                return best
            arch = os.path.join(work, "small.tar.zst")
            empty_save = timed(lambda: http_save(small.port, arch))
            empty_restore = timed(lambda: http_restore(small.port, arch))
            for i in range(100):
                with open(os.path.join(small.home, f"f{i}.txt"), "w") as f:
                    f.write("x" * 1000)
            full_save = timed(lambda: http_save(small.port, arch))
            full_restore = timed(lambda: http_restore(small.port, arch))
            print(f"  100-file Home vs empty: save {full_save * 1000:.1f} / "
                  f"{empty_save * 1000:.1f} ms ({full_save / empty_save:.2f}x), restore "
                  f"{full_restore * 1000:.1f} / {empty_restore * 1000:.1f} ms "
                  f"({full_restore / empty_restore:.2f}x) (goal <= 2x)")
        finally:
            small.close()
        src.close()
        dst.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
