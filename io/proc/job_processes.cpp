#include "io/proc/job_processes.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace shellctl::io::proc {
namespace {

std::string proc_path(long pid, const char* what) {
  return "/proc/" + std::to_string(pid) + "/" + what;
}

// The PID namespace a process is in, as (device, inode) of /proc/<pid>/ns/pid.
std::optional<std::pair<dev_t, ino_t>> pid_namespace_of(long pid) {
  struct stat st {};
  if (::stat(proc_path(pid, "ns/pid").c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

// (process group, session) from /proc/<pid>/stat; the command name may hold spaces and
// parentheses, so the fields are read after its last ')'.
std::optional<std::pair<long, long>> group_and_session_of(long pid) {
  std::ifstream in(proc_path(pid, "stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  std::string state;
  long ppid = 0, pgrp = 0, session = 0;
  if (!(rest >> state >> ppid >> pgrp >> session)) return std::nullopt;
  return std::make_pair(pgrp, session);
}

// The runner's children (its init, or the job's main process without namespaces).
std::vector<long> children_of(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<long> out;
  long child = 0;
  while (in >> child) out.push_back(child);
  return out;
}

template <class Keep>
std::vector<pid_t> scan_proc(Keep keep) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 1 || *end || pid == ::getpid()) continue;
    if (keep(pid)) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

}  // namespace

std::optional<std::string> cmdline_of(long pid) {
  const int fd = ::open(proc_path(pid, "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string cmdline;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) cmdline.append(buf, static_cast<size_t>(n));
  ::close(fd);
  for (auto& c : cmdline)
    if (c == '\0') c = ' ';
  return cmdline;
}

std::vector<pid_t> job_processes(pid_t runner, const std::string& owner) {
  if (runner <= 1) return {};
  const auto cmdline = cmdline_of(runner);
  if (!cmdline || cmdline->find(owner) == std::string::npos) return {};
  const auto runner_ns = pid_namespace_of(runner);
  for (long child : children_of(runner)) {
    const auto ns = pid_namespace_of(child);
    if (!ns || !runner_ns || *ns == *runner_ns) continue;
    // The job's init: everything else in its namespace is the job.
    return scan_proc([&](long pid) { return pid != child && pid_namespace_of(pid) == ns; });
  }
  return scan_proc([&](long pid) {
    if (pid == runner) return false;
    const auto gs = group_and_session_of(pid);
    return gs && (gs->first == runner || gs->second == runner);
  });
}

std::vector<pid_t> cgroup_job_processes(pid_t runner, const std::vector<pid_t>& members) {
  long init = 0;
  if (runner > 1) {
    const auto runner_ns = pid_namespace_of(runner);
    for (long child : children_of(runner)) {
      const auto ns = pid_namespace_of(child);
      if (ns && runner_ns && *ns != *runner_ns) init = child;
    }
  }
  std::vector<pid_t> out;
  for (pid_t pid : members)
    if (pid != init) out.push_back(pid);
  return out;
}

std::size_t signal_processes(const std::vector<pid_t>& pids, int signo) {
  std::size_t n = 0;
  for (pid_t pid : pids)
    if (::kill(pid, signo) == 0) ++n;
  return n;
}

}  // namespace shellctl::io::proc
