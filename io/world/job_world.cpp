#include "io/world/job_world.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "io/fs/files.hpp"
#include "io/sandbox/mounts.hpp"
#include "io/policy/path_rules.hpp"

namespace shellctl::io::world {

namespace {

using sandbox::access;

// A tree of the own root: bound from `fd` (opened before anything is mounted, so that no
// later mount can change what it names), or re-created as the symlink `link`.
struct tree {
  std::string path;
  int fd = -1;
  std::string link;
  access a = access::read_only;
  bool dir = true;
};

class fd_set_guard {
 public:
  ~fd_set_guard() {
    for (int fd : fds_) ::close(fd);
  }
  // O_PATH descriptor (symlinks followed), or -1 when the path does not exist.
  int open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }

 private:
  std::vector<int> fds_;
};

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool is_dir_fd(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

bool make_symlink(const std::string& target, const std::string& at, std::string& err) {
  if (::symlink(target.c_str(), at.c_str()) != 0 && errno != EEXIST) {
    err = "symlink " + at + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

// Binds `fd` at `at`, creating the mount point (a directory or an empty file) first.
bool bind_at(int fd, const std::string& at, access a, std::string& err, bool recursive = true) {
  const bool dir = is_dir_fd(fd);
  if (dir ? !fs::make_dirs(at, 0755, err)
          : !(fs::make_dirs(fs::parent_of(at), 0755, err) && sandbox::make_file(at, err)))
    return false;
  return sandbox::bind(fd_path(fd), at, a, err, recursive);
}

// The world provides these itself (a procfs of the job's PID namespace, a minimal /dev):
// the host's are never bound in, whatever the lists say.
bool provided_by_world(const std::string& path) {
  return policy::is_within(path, "/proc") || policy::is_within(path, "/dev");
}

// The kernel knobs of procfs stay read-only and the files that leak kernel memory or other
// processes' keys are masked, as container runtimes do. `proc` is the new procfs.
bool harden_proc(const std::string& proc, int null_fd, std::string& err) {
  for (const char* sub : {"sys", "sysrq-trigger", "irq", "bus", "fs"}) {
    const std::string p = proc + "/" + sub;
    if (exists(p) && !sandbox::bind(p, p, access::read_only, err)) return false;
  }
  for (const char* leak : {"kcore", "keys", "timer_list", "sched_debug", "latency_stats"}) {
    const std::string p = proc + "/" + leak;
    if (null_fd >= 0 && exists(p) && !sandbox::bind(fd_path(null_fd), p, access::read_only, err))
      return false;
  }
  for (const char* dir : {"acpi", "scsi"}) {
    const std::string p = proc + "/" + dir;
    if (exists(p) && !(sandbox::mount_tmpfs(p, "mode=0555,size=4k", err) &&
                       sandbox::set_read_only(p, false, err)))
      return false;
  }
  return true;
}

// Directories strictly between `outer` (a writable tree) and `inner` (the state dir) become
// mount points of themselves: a job may then neither rename nor remove them (EBUSY), so the
// server's state dir path keeps naming the server's state dir.
bool pin_between(const std::string& root, const std::string& outer, const std::string& inner,
                 std::string& err) {
  if (inner == outer || !policy::is_within(inner, outer)) return true;
  std::vector<std::string> chain;
  for (std::string d = fs::parent_of(inner); d != outer && policy::is_within(d, outer);
       d = fs::parent_of(d))
    chain.push_back(d);
  std::reverse(chain.begin(), chain.end());
  for (const auto& d : chain)
    if (!sandbox::bind(root + d, root + d, access::read_write, err)) return false;
  return true;
}

// The mask over the state dir: an empty tmpfs showing the same-HOME outputs at S/jobs and
// the job's own directory, read-only. `root` is "" for the host root.
bool mask_state_dir(const world_spec& w, const std::string& root, int job_fd, int view_fd,
                    std::string& err) {
  const std::string s = root + w.state_dir;
  if (!fs::make_dirs(s, 0755, err) || !sandbox::mount_tmpfs(s, "mode=0755,size=64k", err))
    return false;
  if (job_fd < 0) return sandbox::set_read_only(s, false, err);  // nothing shown at all
  if (!fs::make_dirs(s + "/jobs", 0755, err)) return false;
  const std::string own = root + w.job_dir;
  const std::string own_name = w.job_dir.substr(w.job_dir.rfind('/') + 1);
  // The view shows this job only if the server linked it there (same HOME as the server
  // computed): otherwise it is someone else's view and stays out.
  if (view_fd >= 0 && fs::parent_of(w.job_dir) == w.state_dir + "/jobs" &&
      ::faccessat(view_fd, own_name.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
      !sandbox::bind(fd_path(view_fd), s + "/jobs", access::read_only, err, false))
    return false;
  // Not recursive: the own root's tmpfs is mounted on the job dir itself.
  if (!bind_at(job_fd, own, access::read_only, err, false)) return false;
  return sandbox::set_read_only(s, false, err);
}

// The machine's cgroup mounts, read before anything is mounted over them: (mount point,
// file system type), outermost first.
std::vector<std::pair<std::string, std::string>> cgroup_mounts() {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    f >> id >> parent >> dev >> root >> point;
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype == "cgroup" || fstype == "cgroup2") out.emplace_back(point, fstype);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The host root's cgroup view (see job_world.hpp). /sys/fs/cgroup, when it is a mount of
// its own (a hybrid host's tmpfs of v1 hierarchies, or the v2 hierarchy itself), is covered
// by an empty read-only tmpfs holding only the v2 mount point, if the host has one there.
bool own_cgroup_view(const world_spec& w, std::string& err) {
  const auto mounts = cgroup_mounts();
  const std::string top = "/sys/fs/cgroup";
  struct stat a {}, b {};
  const bool top_is_mount = ::stat(top.c_str(), &a) == 0 && ::stat("/sys/fs", &b) == 0 && a.st_dev != b.st_dev;
  auto fresh_v2 = [&](const std::string& at) {
    if (w.own_cgroup) return sandbox::mount_cgroup2(at, err);
    return sandbox::mount_tmpfs(at, "mode=0555,size=4k", err) && sandbox::set_read_only(at, false, err);
  };
  std::vector<std::string> covered;
  auto under_covered = [&](const std::string& p) {
    return std::any_of(covered.begin(), covered.end(), [&](const std::string& c) { return policy::is_within(p, c); });
  };
  if (top_is_mount) {
    const bool v2_at_top = std::any_of(mounts.begin(), mounts.end(), [&](const auto& m) {
      return m.first == top && m.second == "cgroup2";
    });
    if (v2_at_top) {
      if (!fresh_v2(top)) return false;
    } else {
      if (!sandbox::mount_tmpfs(top, "mode=0755,size=4k", err)) return false;
      for (const auto& [point, type] : mounts)
        if (type == "cgroup2" && policy::is_within(point, top) && point != top) {
          if (!fs::make_dirs(point, 0555, err) || !fresh_v2(point)) return false;
        }
      if (!sandbox::set_read_only(top, false, err)) return false;
    }
    covered.push_back(top);
  }
  for (const auto& [point, type] : mounts) {
    if (under_covered(point)) continue;
    if (type == "cgroup2" ? !fresh_v2(point)
                          : !(sandbox::mount_tmpfs(point, "mode=0555,size=4k", err) &&
                              sandbox::set_read_only(point, false, err)))
      return false;
    covered.push_back(point);
  }
  return true;
}

bool host_root_world(const world_spec& w, int job_fd, int view_fd, int null_fd,
                     std::string& err) {
  if (!mount_job_proc("", null_fd, err) || !sandbox::mount_devpts("/dev/pts", err) ||
      !own_cgroup_view(w, err))
    return false;
  if (w.state_dir.empty()) return true;
  // Everything is writable without isolation: every ancestor of the state dir is pinned.
  return pin_between("", "/", w.state_dir, err) && mask_state_dir(w, "", job_fd, view_fd, err);
}

bool own_root_world(const world_spec& w, fd_set_guard& fds, int job_fd, int view_fd,
                    int null_fd, std::string& err) {
  // Every source is opened before the first mount: afterwards the job dir (the new root's
  // mount point) and the state dir are covered.
  std::vector<tree> trees;
  for (const auto& p : w.policy.ro_dirs) {
    struct stat st {};
    if (provided_by_world(p)) continue;
    if (::lstat(p.c_str(), &st) != 0) continue;  // missing configured paths are skipped
    tree t;
    t.path = p;
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
      if (n > 0) {
        t.link.assign(buf, static_cast<std::size_t>(n));
        trees.push_back(t);
        continue;
      }
    }
    t.fd = fds.open(p);
    if (t.fd < 0) continue;
    t.dir = is_dir_fd(t.fd);
    trees.push_back(t);
  }
  auto add_rw = [&](const std::string& p, bool required) {
    tree t;
    t.path = p;
    t.a = access::read_write;
    t.fd = fds.open(p);
    if (t.fd < 0) {
      if (required) err = "open " + p + ": " + std::strerror(errno);
      return !required;
    }
    t.dir = is_dir_fd(t.fd);
    trees.push_back(t);
    return true;
  };
  if (!add_rw(w.home, true)) return false;
  if (w.cwd_granted && w.cwd != w.home && !add_rw(w.cwd, true)) return false;
  for (const auto& p : w.policy.rw_dirs)
    if (!provided_by_world(p)) add_rw(p, false);
  std::vector<std::pair<std::string, int>> devices;
  for (const auto& p : w.policy.rw_files) {
    const int fd = fds.open(p);
    if (fd >= 0) devices.emplace_back(p, fd);
  }
  // Parents before children, so that a grant inside a read-only tree is bound on top of it;
  // the read-write one wins where both name the same path.
  std::stable_sort(trees.begin(), trees.end(), [](const tree& a, const tree& b) {
    return a.path != b.path ? a.path < b.path : a.a < b.a;
  });

  const std::string root = w.root_mount.empty() ? w.job_dir : w.root_mount;
  if (!sandbox::mount_tmpfs(root, "mode=0755,size=1m", err)) return false;

  // The trees first: a tree holding the job dir (the default layout puts the state dir in
  // HOME) copies the root's tmpfs along, and that copy ends under the state dir's mask.
  // A granted tree inside /dev (the server's HOME in /dev/shm, for a Home operation: a job
  // is never granted one there) goes after the world's own /dev, or its tmpfs would cover it.
  auto place = [&](const tree& t) {
    const std::string at = root + t.path;
    if (!t.link.empty())
      return fs::make_dirs(fs::parent_of(at), 0755, err) && make_symlink(t.link, at, err);
    return bind_at(t.fd, at, t.a, err);
  };
  for (const auto& t : trees)
    if (!policy::is_within(t.path, "/dev") && !place(t)) return false;
  if (!mount_job_proc(root, null_fd, err)) return false;

  const std::string dev = root + "/dev";
  if (!fs::make_dirs(dev, 0755, err) || !sandbox::mount_tmpfs(dev, "mode=0755,size=64k", err))
    return false;
  bool ptmx_bound = false;
  for (const auto& [p, fd] : devices) {
    if (!bind_at(fd, root + p, access::read_write, err)) return false;
    ptmx_bound = ptmx_bound || p == "/dev/ptmx";
  }
  if (!fs::make_dirs(dev + "/pts", 0755, err) || !sandbox::mount_devpts(dev + "/pts", err) ||
      !fs::make_dirs(dev + "/shm", 01777, err) ||
      !sandbox::mount_tmpfs(dev + "/shm", "mode=1777,size=64m", err))
    return false;
  if (!ptmx_bound && !make_symlink("pts/ptmx", dev + "/ptmx", err)) return false;
  if (!make_dev_links(dev, err)) return false;
  for (const auto& t : trees)
    if (policy::is_within(t.path, "/dev") && !place(t)) return false;

  if (!exists(root + "/tmp") && !fs::make_dirs(root + "/tmp", 0755, err)) return false;

  if (!w.state_dir.empty()) {
    for (const auto& t : trees)
      if (t.a == access::read_write && !pin_between(root, t.path, w.state_dir, err)) return false;
    if (!mask_state_dir(w, root, job_fd, view_fd, err)) return false;
  } else if (job_fd >= 0 && !bind_at(job_fd, root + w.job_dir, access::read_only, err, false)) {
    return false;
  }
  // A cwd without a grant is still a working directory: an empty one where nothing of the
  // host shows it (a failure here surfaces as the chdir failure, 111).
  if (!w.cwd_granted && !exists(root + w.cwd)) {
    std::string ignored;
    fs::make_dirs(root + w.cwd, 0755, ignored);
  }
  return sandbox::set_read_only(root, false, err) && sandbox::pivot_into(root, err);
}

}  // namespace

bool mount_job_proc(const std::string& root, int null_fd, std::string& err) {
  const std::string proc = root + "/proc";
  return fs::make_dirs(proc, 0555, err) && sandbox::mount_proc(proc, err) &&
         harden_proc(proc, null_fd, err);
}

bool make_dev_links(const std::string& dev, std::string& err) {
  const std::pair<const char*, const char*> links[] = {{"fd", "/proc/self/fd"},
                                                       {"stdin", "/proc/self/fd/0"},
                                                       {"stdout", "/proc/self/fd/1"},
                                                       {"stderr", "/proc/self/fd/2"}};
  for (const auto& [name, target] : links)
    if (!make_symlink(target, dev + "/" + name, err)) return false;
  return true;
}

bool build_world(const world_spec& w, std::string& err) {
  if (!sandbox::make_mounts_private(err)) return false;
  fd_set_guard fds;
  const int job_fd = w.job_dir.empty() ? -1 : fds.open(w.job_dir);
  if (job_fd < 0 && !w.job_dir.empty()) {
    err = "open " + w.job_dir + ": " + std::strerror(errno);
    return false;
  }
  if (w.job_dir.empty() && w.root_mount.empty()) {
    err = "no directory to mount the root on";
    return false;
  }
  const int view_fd = w.home_view.empty() ? -1 : fds.open(w.home_view + "/jobs");
  const int null_fd = fds.open("/dev/null");
  return w.own_root ? own_root_world(w, fds, job_fd, view_fd, null_fd, err)
                    : host_root_world(w, job_fd, view_fd, null_fd, err);
}

}  // namespace shellctl::io::world
