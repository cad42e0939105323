#include "io/sandbox/cgroups.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace shellctl::io::sandbox::cgroups {
namespace {

constexpr long kCgroup2Magic = 0x63677270;  // CGROUP2_SUPER_MAGIC (linux/magic.h)
constexpr const char* kJobPrefix = "job-";

std::string errno_text(int e) { return std::strerror(e); }

bool read_file(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.clear();
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  const int e = errno;
  ::close(fd);
  errno = e;
  return n == 0;
}

// One write of `value` (cgroup files take a whole value per write). False with errno set.
bool write_file(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int e = errno;
  ::close(fd);
  errno = e;
  return n == static_cast<ssize_t>(value.size());
}

bool is_cgroup2(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == kCgroup2Magic;
}

// FNV-1a: a stable short name for a state dir (not a secret, only distinct).
std::string short_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

// A usable job root: cgroup2, writable, with cgroup.kill. Creates it when missing.
bool usable_root(const std::string& path, std::string& why) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    why = "cannot create " + path + ": " + errno_text(errno);
    return false;
  }
  if (!is_cgroup2(path)) {
    why = path + " is not a cgroup v2 directory";
    return false;
  }
  if (::access(path.c_str(), W_OK) != 0 || ::access((path + "/cgroup.procs").c_str(), W_OK) != 0) {
    why = path + " is not writable by this user: " + errno_text(errno);
    return false;
  }
  if (::access((path + "/cgroup.kill").c_str(), W_OK) != 0) {
    why = path + " has no writable cgroup.kill (Linux 5.14 or later is needed): " + errno_text(errno);
    return false;
  }
  return true;
}

// rmdir of `path` and every cgroup below it, deepest first.
bool remove_tree(const std::string& path, std::string& err) {
  if (DIR* d = ::opendir(path.c_str())) {
    std::vector<std::string> children;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (e->d_type == DT_DIR) children.push_back(path + "/" + name);
    }
    ::closedir(d);
    for (const auto& c : children)
      if (!remove_tree(c, err)) return false;
  }
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT) {
    err = "rmdir " + path + ": " + errno_text(errno);
    return false;
  }
  return true;
}

// The pids of the cgroup and of every cgroup below it.
void tree_procs(const std::string& path, std::set<pid_t>& out) {
  std::string text;
  if (read_file(path + "/cgroup.procs", text)) {
    std::istringstream in(text);
    for (long pid; in >> pid;) out.insert(static_cast<pid_t>(pid));
  }
  if (DIR* d = ::opendir(path.c_str())) {
    std::vector<std::string> children;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (e->d_type == DT_DIR && name != "." && name != "..") children.push_back(path + "/" + name);
    }
    ::closedir(d);
    for (const auto& c : children) tree_procs(c, out);
  }
}

// A pidfd for each process in the tree. A pid read from cgroup.procs may exit and be
// reused by an unrelated process before its pidfd_open; a second read after the opens
// keeps only the pidfds whose pid is (still, or again) in the tree: a pidfd pins its
// process, so one whose pid is listed afterwards either is that member or has exited
// (then it is readable at once and costs nothing).
std::vector<int> pin_members(const std::string& path) {
  std::set<pid_t> before, after;
  tree_procs(path, before);
  std::vector<std::pair<pid_t, int>> opened;
  for (pid_t pid : before) {
    // glibc 2.36 declares pidfd_open without C linkage for C++: the system call itself.
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) opened.emplace_back(pid, fd);
  }
  tree_procs(path, after);
  std::vector<int> out;
  for (auto [pid, fd] : opened) {
    if (after.count(pid))
      out.push_back(fd);
    else
      ::close(fd);
  }
  return out;
}

std::optional<bool> populated_from(const std::string& events) {
  std::istringstream in(events);
  std::string key, value;
  while (in >> key >> value)
    if (key == "populated") return value != "0";
  return std::nullopt;
}

}  // namespace

std::string own_cgroup::dir(const std::string& cgroup_path) const {
  if (mount_root != "/" && cgroup_path != mount_root && cgroup_path.rfind(mount_root + "/", 0) != 0)
    return "";
  const std::string rel = mount_root == "/" ? cgroup_path : cgroup_path.substr(mount_root.size());
  return rel == "/" || rel.empty() ? mount : mount + rel;
}

std::optional<own_cgroup> find_own_cgroup(std::string& why) {
  std::string text;
  if (!read_file("/proc/self/cgroup", text)) {
    why = "cannot read /proc/self/cgroup";
    return std::nullopt;
  }
  own_cgroup out;
  bool found = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("0::", 0) == 0) {
      out.path = line.substr(3);
      found = true;
    }
  if (!found) {
    why = "no cgroup v2 hierarchy (no 0:: line in /proc/self/cgroup)";
    return std::nullopt;
  }
  std::ifstream mi("/proc/self/mountinfo");
  for (std::string line; std::getline(mi, line);) {
    // id parent major:minor root mountpoint options [optional...] - fstype source super
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, dash));
    std::string id, parent, dev;
    head >> id >> parent >> dev >> out.mount_root >> out.mount;
    // Our cgroup must lie beneath the mount's root to be reachable through it.
    if (!out.dir(out.path).empty()) return out;
  }
  why = "cgroup2 is not mounted";
  return std::nullopt;
}

bool choose_root(const std::string& given, const std::string& state_dir, root_choice& out,
                 std::string& err) {
  out = root_choice{};
  if (given == "none") {
    out.why_none = "cgroup root \"none\"";
    return true;
  }
  if (!given.empty()) {
    if (given[0] != '/') {
      err = "cgroup root " + given + ": must be an absolute path (or \"none\")";
      return false;
    }
    std::string why;
    if (!usable_root(given, why)) {
      err = "cgroup root: " + why;
      return false;
    }
    out.path = given;
    return true;
  }
  std::string why;
  const auto place = find_own_cgroup(why);
  if (!place) {
    out.why_none = why;
    return true;
  }
  const std::string own = place->dir(place->path);
  if (!is_cgroup2(own) || ::access(own.c_str(), W_OK) != 0) {
    out.why_none = "the server's own cgroup " + own + " is not a writable cgroup v2 directory";
    return true;
  }
  const std::string root = own + "/shellctl-" + short_hash(state_dir);
  if (!usable_root(root, why)) {
    out.why_none = why;
    return true;
  }
  out.path = root;
  out.detected = true;
  return true;
}

void release_root(const root_choice& root) {
  if (root.path.empty()) return;
  // A job cgroup with no process left belongs to a finished job whose background processes
  // have since ended (a job that left nothing is removed when it settles): nothing will use
  // it again — a restart recreates what a job needs — so it goes with the server. One with
  // processes (a job running on in tmux) stays, and with it the root. By the time this runs
  // the HTTP front is drained and the job actors are gone, so no start is between its mkdir
  // and its runner's entry.
  for (const auto& id : job_ids(root.path)) {
    const std::string path = job_path(root.path, id);
    if (populated(path) == false) {
      std::string ignored;
      remove_tree(path, ignored);  // a job's own sub-cgroups first; EBUSY: a process came back
    }
  }
  if (root.detected) ::rmdir(root.path.c_str());  // EBUSY: jobs live on
}

bool prepare_limits(const std::string& root, const job_limits& limits, std::string& err) {
  if (!limits.any()) return true;
  std::vector<std::string> wanted;
  if (!limits.memory_max.empty()) wanted.push_back("memory");
  if (!limits.pids_max.empty()) wanted.push_back("pids");
  if (!limits.cpu_max.empty()) wanted.push_back("cpu");
  if (root.empty()) {
    err = "per-job limits need cgroup v2 containment, which this server does not have";
    return false;
  }
  // Each level from the hierarchy's root down must pass the controllers on: walk up to
  // the first cgroup that has them enabled already (or the mount root), then enable down.
  std::vector<std::string> chain;  // root first
  for (std::string p = root; is_cgroup2(p);) {
    chain.insert(chain.begin(), p);
    const auto slash = p.rfind('/');
    if (slash == std::string::npos || slash == 0) break;
    p = p.substr(0, slash);
  }
  std::string available;
  read_file(root + "/cgroup.controllers", available);
  std::istringstream have(available);
  std::vector<std::string> present;
  for (std::string c; have >> c;) present.push_back(c);
  std::string missing;
  for (const auto& w : wanted) {
    bool found = false;
    for (const auto& p : present) found = found || p == w;
    if (!found) missing += (missing.empty() ? "" : ", ") + w;
  }
  if (!missing.empty()) {
    err = "per-job limits need the cgroup v2 controller(s) " + missing + ", which " + root +
          " does not have (its cgroup.controllers: \"" +
          (available.empty() ? std::string() : available.substr(0, available.find('\n'))) + "\")";
    return false;
  }
  for (std::size_t i = 0; i < chain.size(); ++i) {
    std::string enabled;
    read_file(chain[i] + "/cgroup.subtree_control", enabled);
    for (const auto& w : wanted) {
      if (enabled.find(w) != std::string::npos) continue;
      if (!write_file(chain[i] + "/cgroup.subtree_control", "+" + w)) {
        err = "cannot enable the " + w + " controller in " + chain[i] +
              "/cgroup.subtree_control: " + errno_text(errno) +
              (errno == EBUSY ? " (that cgroup holds processes: give the server a delegated "
                                "--cgroup-root whose processes live in a leaf of their own)"
                              : "");
        return false;
      }
    }
  }
  return true;
}

job_controllers enable_job_controllers(const std::string& root) {
  job_controllers out;
  if (root.empty()) return out;
  std::string available;
  read_file(root + "/cgroup.controllers", available);
  std::istringstream have(available);
  std::set<std::string> present;
  for (std::string c; have >> c;) present.insert(c);
  auto enable = [&](const char* name) {
    if (!present.count(name)) return false;
    std::string enabled;
    read_file(root + "/cgroup.subtree_control", enabled);
    std::istringstream on(enabled);
    for (std::string c; on >> c;)
      if (c == name) return true;
    return write_file(root + "/cgroup.subtree_control", std::string("+") + name);
  };
  out.memory = enable("memory");
  out.pids = enable("pids");
  out.cpu = enable("cpu");
  return out;
}

std::string job_path(const std::string& root, const std::string& job_id) {
  return root + "/" + kJobPrefix + job_id;
}

std::vector<std::string> job_ids(const std::string& root) {
  std::vector<std::string> out;
  DIR* d = ::opendir(root.c_str());
  if (!d) return out;
  const std::string prefix = kJobPrefix;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (e->d_type == DT_DIR && name.size() > prefix.size() && name.rfind(prefix, 0) == 0)
      out.push_back(name.substr(prefix.size()));
  }
  ::closedir(d);
  return out;
}

namespace {
// Every cgroup at and below `path` as belonging to `job`. A job's own cgroups are its to
// make (its cgroup namespace lets it), so the depth is bounded: what lies deeper is not
// looked at.
void map_subtree(const std::string& path, const std::string& job, int depth,
                 std::unordered_map<std::uint64_t, std::string>& out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  out.emplace(static_cast<std::uint64_t>(st.st_ino), job);
  if (depth == 0) return;
  DIR* d = ::opendir(path.c_str());
  if (!d) return;
  std::vector<std::string> children;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (e->d_type == DT_DIR && name != "." && name != "..") children.push_back(path + "/" + name);
  }
  ::closedir(d);
  for (const auto& c : children) map_subtree(c, job, depth - 1, out);
}
}  // namespace

std::unordered_map<std::uint64_t, std::string> job_of_cgroup_ids(const std::string& root) {
  std::unordered_map<std::uint64_t, std::string> out;
  for (const auto& id : job_ids(root)) map_subtree(job_path(root, id), id, 16, out);
  return out;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool create(const std::string& path, const job_limits& limits, std::string& err) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    err = "mkdir " + path + ": " + errno_text(errno);
    return false;
  }
  const std::pair<const char*, const std::string*> settings[] = {
      {"memory.max", &limits.memory_max}, {"pids.max", &limits.pids_max}, {"cpu.max", &limits.cpu_max}};
  for (const auto& [file, value] : settings) {
    if (value->empty()) continue;
    if (!write_file(path + "/" + file, *value)) {
      err = "write " + path + "/" + file + ": " + errno_text(errno);
      return false;
    }
  }
  return true;
}

bool set(const std::string& path, const std::string& file, const std::string& value,
         std::string& err) {
  if (write_file(path + "/" + file, value)) return true;
  err = "write " + path + "/" + file + ": " + errno_text(errno);
  return false;
}

int open_procs(const std::string& path, std::string& err) {
  const int fd = ::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) err = "open " + path + "/cgroup.procs: " + errno_text(errno);
  return fd;
}

bool enter(int procs_fd) { return ::write(procs_fd, "0", 1) == 1; }

std::optional<bool> populated(const std::string& path) {
  std::string text;
  if (!read_file(path + "/cgroup.events", text)) return std::nullopt;
  return populated_from(text);
}

std::vector<pid_t> procs(const std::string& path) {
  std::vector<pid_t> out;
  std::string text;
  if (!read_file(path + "/cgroup.procs", text)) return out;
  std::istringstream in(text);
  for (long pid; in >> pid;) out.push_back(static_cast<pid_t>(pid));
  return out;
}

std::vector<pid_t> subtree_procs(const std::string& path) {
  std::set<pid_t> all;
  tree_procs(path, all);
  return std::vector<pid_t>(all.begin(), all.end());
}

std::optional<bool> nsdelegate(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::optional<bool> found;
  std::size_t best = 0;
  for (std::string line; std::getline(in, line);) {
    // <id> <parent> <maj:min> <root> <mount point> <options> ... - <fstype> <source> <super options>
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    f >> id >> parent >> dev >> root >> point;
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype, source, super;
    tail >> fstype >> source >> super;
    if (fstype != "cgroup2") continue;
    const bool holds = path == point || point == "/" || path.rfind(point + "/", 0) == 0;
    if (!holds || point.size() < best) continue;
    best = point.size();
    found = ("," + super + ",").find(",nsdelegate,") != std::string::npos;
  }
  return found;
}

namespace {
// The value of `key` in a flat-keyed cgroup file ("key value" lines); 0 when absent.
std::uint64_t keyed_value(const std::string& file, const std::string& key) {
  std::string text;
  if (!read_file(file, text)) return 0;
  std::istringstream in(text);
  std::string k;
  std::uint64_t v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}
}  // namespace

limit_events read_limit_events(const std::string& path) {
  limit_events e;
  e.oom_kill = keyed_value(path + "/memory.events", "oom_kill");
  e.memory_oom = keyed_value(path + "/memory.events", "oom");
  e.pids_max = keyed_value(path + "/pids.events", "max");
  e.cpu_throttled = keyed_value(path + "/cpu.stat", "nr_throttled");
  return e;
}

bool end(const std::string& path, std::chrono::milliseconds bound, std::string& err) {
  const int events = ::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
  if (events < 0) {
    if (errno == ENOENT) return true;  // no such cgroup: nothing to end
    err = "open " + path + "/cgroup.events: " + errno_text(errno);
    return false;
  }
  // `populated 0` comes when the last process has left the cgroup, which the kernel does
  // early in its exit: a PID namespace's init leaves, then waits to reap its namespace; a
  // preempted process may sit between the two steps. The end waits for the processes
  // themselves (their pidfds turn readable when they have exited), so that an answer
  // given after it never meets one of them in /proc.
  std::vector<int> members = pin_members(path);
  bool ok = true;
  if (!write_file(path + "/cgroup.kill", "1")) {
    err = "write " + path + "/cgroup.kill: " + errno_text(errno);
    ok = false;
  }
  const auto deadline = std::chrono::steady_clock::now() + bound;
  char buf[256];
  while (ok) {
    // Read, then wait for the kernel's notification of the next change (POLLPRI): a
    // change between the two still wakes the poll, since it follows a read.
    // seq files (cgroup.events is one) read from the start again after a seek to 0.
    const ssize_t n = ::lseek(events, 0, SEEK_SET) == 0 ? ::read(events, buf, sizeof buf - 1) : -1;
    if (n < 0) {
      err = "read " + path + "/cgroup.events: " + errno_text(errno);
      ok = false;
      break;
    }
    const auto pop = populated_from(std::string(buf, static_cast<std::size_t>(n)));
    if (pop && !*pop) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      err = path + " still holds processes " + std::to_string(bound.count()) +
            " ms after cgroup.kill";
      ok = false;
      break;
    }
    pollfd p{events, POLLPRI, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
      err = "poll " + path + "/cgroup.events: " + errno_text(errno);
      ok = false;
    }
  }
  ::close(events);
  for (std::size_t i = 0; ok && i < members.size(); ++i) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{members[i], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::max<long>(0, left.count())));
    if (r == 0) {
      err = path + ": a process of it has not exited " + std::to_string(bound.count()) +
            " ms after cgroup.kill";
      ok = false;
    } else if (r < 0 && errno == EINTR) {
      --i;  // the same one again
    }
  }
  for (int fd : members) ::close(fd);
  return ok && remove_tree(path, err);
}

}  // namespace shellctl::io::sandbox::cgroups
