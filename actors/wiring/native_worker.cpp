#include "actors/wiring/native_worker.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "actors/wiring/serve.hpp"
#include "io/fs/files.hpp"
#include "io/native/scope/scope_storage.hpp"
#include "io/native/worker/worker_budget.hpp"
#include "io/native/worker/worker_setup.hpp"
#include "io/sandbox/mounts.hpp"
#include "io/sandbox/namespaces.hpp"
#include "io/sandbox/network.hpp"
#include "io/store/jobs_db.hpp"
#include "io/text/clock.hpp"

namespace shellctl::actors {
namespace {

constexpr const char* kRun = "/run/dify-native";

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// Binds `path` at `at` if it is still the file `expected` (a descriptor the supervisor
// opened) names: same device and inode, reached without a symlink.
bool bind_verified(int expected, const std::string& path, const std::string& at,
                   io::sandbox::access a, std::string& err) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS;
  const int fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
  if (fd < 0) {
    err = "open " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat want {}, got {};
  bool ok = ::fstat(expected, &want) == 0 && ::fstat(fd, &got) == 0 &&
            want.st_dev == got.st_dev && want.st_ino == got.st_ino;
  if (!ok)
    err = path + " is no longer the file the supervisor resolved";
  else
    ok = io::sandbox::bind(fd_path(fd), at, a, err);
  ::close(fd);
  return ok;
}

// The inputs, read-only at <kRun>/inputs/<ref> (a ref may name subdirectories).
bool bind_inputs(const io::native::worker_setup& s, std::string& err) {
  const std::string dir = std::string(kRun) + "/inputs";
  if (!io::fs::make_dirs(dir, 0755, err)) return false;
  for (std::size_t i = 0; i < s.input_refs.size(); ++i) {
    const std::string at = dir + "/" + s.input_refs[i];
    if (!io::fs::make_dirs(io::fs::parent_of(at), 0755, err) ||
        !io::sandbox::make_file(at, err) ||
        !bind_verified(s.input_fds[i], s.input_paths[i], at, io::sandbox::access::read_only, err))
      return false;
  }
  return true;
}

// Everything before serving; false with `err`.
bool set_up(const io::native::worker_setup& s, std::string& err) {
  // Our own session: the supervisor's terminal and signals are not ours, and its death is
  // not our end (no parent-death signal: a restarted supervisor re-adopts us, S11).
  ::setsid();
  if (!io::sandbox::bring_loopback_up(err)) return false;
  if (!io::sandbox::make_mounts_private(err)) return false;
  // A procfs of our PID namespace: the pids tmux and the runner report (a pane's, a job's
  // processes) are ours, and the job actors find, signal and end processes by them.
  if (!io::sandbox::mount_proc("/proc", err)) return false;
  // /run of our own (the host's is not needed here), then the scope's storage in it.
  if (!io::sandbox::mount_tmpfs("/run", "mode=0755,size=64k", err) ||
      !io::fs::make_dirs(kRun, 0755, err))
    return false;
  io::native::scope_storage_spec storage;
  storage.dir = kRun;
  storage.spool_bytes = s.limits.input_bytes + s.limits.output_bytes + (1u << 20);
  storage.disk_bytes = s.limits.disk_bytes;
  storage.base_fd = s.base_fd;
  if (!io::native::mount_scope_storage(storage, err) || !bind_inputs(s, err)) return false;
  const std::string host = std::string(kRun) + "/host";
  if (!io::fs::make_dirs(host, 0700, err) ||
      !bind_verified(s.host_dir_fd, s.host_dir, host, io::sandbox::access::read_write, err))
    return false;
  // The spool's catalog: the jobs table, then the scope's identity and budgets.
  try {
    const std::string db = std::string(kRun) + "/spool/shellctl.db";
    io::store::jobs_db jobs(db, 5000, io::store::jobs_db::open_mode::create_schema);
    io::native::worker_budget budget(db);
    budget.init({s.scope_id, s.generation, s.created_at},
                {s.limits.input_bytes, s.limits.output_bytes, s.limits.max_jobs});
  } catch (const std::exception& e) {
    err = std::string("catalog: ") + e.what();
    return false;
  }
  return true;
}

io::config::serve_config worker_config(const io::native::worker_setup& s) {
  io::config::serve_config cfg;
  const std::string run = kRun;
  cfg.state_dir = run + "/spool";
  cfg.home = "/home/dify";
  cfg.token = s.control_token;
  cfg.retention = std::chrono::hours(1);  // S8
  cfg.gc_interval = std::chrono::seconds(60);
  cfg.isolation = false;  // the scoped world replaces path isolation
  cfg.namespaces = true;
  cfg.cgroup_root = s.cgroup.empty() ? "none" : s.cgroup;
  cfg.log_format = "json";
  cfg.tmux_env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/dify", "LANG=C.UTF-8"};
  auto& w = cfg.worker;
  w.on = true;
  w.control_socket = run + "/host/control.sock";
  w.peer_uid = ::getuid();  // the supervisor's uid is our root (its user namespace's map)
  w.scope_id = s.scope_id;
  w.generation = s.generation;
  w.payload = run + "/payload";
  w.job_wall = std::chrono::seconds(static_cast<std::int64_t>(s.limits.job_wall_seconds));
  w.deadline_epoch = static_cast<std::int64_t>(s.limits.deadline_epoch);
  w.image_root = s.image_root;
  w.runner_env = {
      {"SHELLCTL_NATIVE_JOB_PAYLOAD", w.payload},
      {"SHELLCTL_NATIVE_JOB_IMAGE_ROOT", s.image_root},
      {"SHELLCTL_NATIVE_JOB_INPUTS", run + "/inputs"},
      {"SHELLCTL_NATIVE_JOB_SCRIPT_BYTES", std::to_string(s.limits.input_bytes + 4096)},
      {"SHELLCTL_NATIVE_JOB_OPEN_FILES", std::to_string(s.limits.open_files)},
      {"SHELLCTL_NATIVE_JOB_FILE_BYTES", std::to_string(s.limits.file_bytes)}};
  for (const auto& t : s.targets) w.proxy_targets.emplace_back(t.host, t.port);
  if (!s.targets.empty()) {
    w.broker_socket = run + "/host/broker.sock";
    // Jobs reach the targets only through the proxy (these override the request's env).
    w.runner_env.emplace_back("SHELLCTL_NATIVE_JOB_PROXY", "http://127.0.0.1:3128");
  }
  return cfg;
}

}  // namespace

int native_worker_main(int argc, char** argv) {
  int setup_fd = -1;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string_view(argv[i]) == "--setup-fd") setup_fd = std::atoi(argv[i + 1]);
  if (setup_fd < 0) {
    std::fputs("usage: shellctl native-worker --setup-fd N (started by the native test supervisor)\n",
               stderr);
    return 2;
  }
  // Not inherited by tmux or a job: only we answer on it.
  ::fcntl(setup_fd, F_SETFD, FD_CLOEXEC);
  std::string err;
  auto setup = io::native::receive_setup(setup_fd, err);
  if (!setup) {
    std::fprintf(stderr, "shellctl: native worker: %s\n", err.c_str());
    io::native::send_answer(setup_fd, err);
    return 1;
  }
  if (!set_up(*setup, err)) {
    std::fprintf(stderr, "shellctl: native worker: %s\n", err.c_str());
    io::native::send_answer(setup_fd, err);
    return 1;
  }
  for (int fd : setup->input_fds) ::close(fd);
  ::close(setup->base_fd);
  ::close(setup->host_dir_fd);
  auto cfg = worker_config(*setup);
  // Ready once the control socket listens: the supervisor is told then (or why not).
  cfg.worker.on_listening = [setup_fd](const std::string& error) {
    io::native::send_answer(setup_fd, error);
    ::close(setup_fd);
  };
  io::sandbox::namespace_probe probe;
  probe.available = io::sandbox::namespaces_available(probe.why);
  return serve(cfg, probe);
}

int native_budget_main(int argc, char** argv) {
  std::string db;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string_view(argv[i]) == "--db") db = argv[i + 1];
  if (db.empty()) {
    std::fputs("usage: shellctl native-budget --db PATH (run by a scope's output copiers)\n", stderr);
    return 2;
  }
  try {
    io::native::worker_budget budget(db);
    // One line per reservation, answered at once: "reserve <n>" -> "<granted>".
    char line[64];
    while (std::fgets(line, sizeof line, stdin) != nullptr) {
      std::uint64_t n = 0;
      if (std::sscanf(line, "reserve %20lu", &n) != 1) break;
      std::printf("%llu\n", static_cast<unsigned long long>(budget.reserve_output(n)));
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shellctl: native budget: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace shellctl::actors
