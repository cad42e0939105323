#include "io/proc/job_processes.hpp"

#include "io/proc/proc_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
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
  const std::string text = read_proc_file(pid, "stat").value_or("");
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
  std::istringstream in(read_proc_file(pid, "task/" + std::to_string(pid) + "/children").value_or(""));
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

namespace {
// A process's pids from /proc/<pid>/status's NSpid line, outermost namespace first.
std::vector<std::string> ns_pids(std::istream& status_lines, std::string* state = nullptr) {
  std::vector<std::string> pids;
  std::string line;
  while (std::getline(status_lines, line)) {
    if (state && line.rfind("State:", 0) == 0) {
      *state = line.substr(6);
    } else if (line.rfind("NSpid:", 0) == 0) {
      std::istringstream in(line.substr(6));
      for (std::string word; in >> word;) pids.push_back(word);
    }
  }
  return pids;
}
}  // namespace

std::vector<pid_t> leftover_processes(const std::vector<pid_t>& members) {
  // The job's init is PID 1 of a namespace one below ours; one the job made for itself
  // (unshare -p) lies deeper, and its PID 1 is the job's own process.
  std::ifstream self("/proc/self/status");
  const std::size_t our_depth = ns_pids(self).size();
  std::vector<pid_t> out;
  for (pid_t pid : members) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string state;
    const auto pids = ns_pids(f, &state);
    if (state.empty()) continue;  // gone meanwhile
    const bool exiting = state.find('Z') != std::string::npos || state.find('X') != std::string::npos;
    const bool init = pids.size() == our_depth + 1 && pids.back() == "1";
    if (!init && !exiting) out.push_back(pid);
  }
  return out;
}

std::vector<pid_t> unsettled_before_hangup(const std::vector<pid_t>& members, pid_t pgrp) {
  std::vector<pid_t> out;
  for (pid_t pid : members) {
    const std::string dir = "/proc/" + std::to_string(pid);
    std::ifstream stat(dir + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;  // gone
    // "pid (comm) S ppid pgrp ...": comm may hold anything, so from its last ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    long ppid = 0, group = 0;
    if (!(rest >> state >> ppid >> group) || group != pgrp || (state != 'R' && state != 'D')) continue;
    std::ifstream status(dir + "/status");
    bool spared = false;
    while (std::getline(status, line)) {
      for (const char* mask : {"SigBlk:", "SigIgn:", "SigCgt:"})
        if (line.rfind(mask, 0) == 0 && (std::strtoull(line.c_str() + std::strlen(mask), nullptr, 16) & 1ULL))
          spared = true;  // bit 0 is SIGHUP (signal 1)
    }
    if (!spared) out.push_back(pid);
  }
  return out;
}

std::size_t signal_processes(const std::vector<pid_t>& pids, int signo) {
  std::size_t n = 0;
  for (pid_t pid : pids)
    if (::kill(pid, signo) == 0) ++n;
  return n;
}

}  // namespace shellctl::io::proc
