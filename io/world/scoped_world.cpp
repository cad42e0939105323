#include "io/world/scoped_world.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "io/fs/files.hpp"
#include "io/world/job_world.hpp"
#include "io/sandbox/mounts.hpp"

namespace shellctl::io::world {

namespace {

using sandbox::access;

std::string errno_text(int e) { return std::strerror(e); }
std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// O_PATH descriptors opened before the first mount (the mount point may cover a source),
// closed when the build ends.
class sources {
 public:
  ~sources() {
    for (int fd : fds_) ::close(fd);
  }
  int open(const std::string& path, int extra = 0) {
    const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC | extra);
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }

 private:
  std::vector<int> fds_;
};

bool bind_dir(int fd, const std::string& at, access a, std::string& err) {
  return fs::make_dirs(at, 0755, err) && sandbox::bind(fd_path(fd), at, a, err);
}

bool bind_file(int fd, const std::string& at, std::string& err) {
  return sandbox::make_file(at, err) && sandbox::bind(fd_path(fd), at, access::read_write, err);
}

bool symlink_at(const std::string& target, const std::string& at, std::string& err) {
  if (::symlink(target.c_str(), at.c_str()) != 0) {
    err = "symlink " + at + ": " + errno_text(errno);
    return false;
  }
  return true;
}

// The script, read before anything is mounted; longer than the script tmpfs: refused.
bool read_script(const std::string& path, std::uint64_t limit, std::string& out,
                 std::string& err) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    err = "open " + path + ": " + errno_text(errno);
    return false;
  }
  char buf[65536];
  ssize_t n;
  out.clear();
  while ((n = ::read(fd, buf, sizeof buf)) > 0) {
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > limit) break;
  }
  const int e = errno;
  ::close(fd);
  if (n < 0) {
    err = "read " + path + ": " + errno_text(e);
    return false;
  }
  if (out.size() > limit) {
    err = "the script is larger than its " + std::to_string(limit) + "-byte file system";
    return false;
  }
  return true;
}

}  // namespace

bool build_scoped_world(const scoped_world_spec& w, std::string& err) {
  if (w.script_bytes == 0) {
    err = "no size for the script's file system";
    return false;
  }
  if (!sandbox::make_mounts_private(err)) return false;
  std::string script;
  if (!read_script(w.script, w.script_bytes, script, err)) return false;

  sources src;
  struct image_tree {
    std::string name;
    int fd = -1;
    std::string link;
  };
  std::vector<image_tree> image;
  for (const char* name : kScopedImageTrees) {
    const std::string p = (w.image_root == "/" ? "" : w.image_root) + "/" + name;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;  // an image without lib64, say
    image_tree t;
    t.name = name;
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
      if (n <= 0) {
        err = "readlink " + p + ": " + errno_text(errno);
        return false;
      }
      t.link.assign(buf, static_cast<std::size_t>(n));
    } else if (!S_ISDIR(st.st_mode) || (t.fd = src.open(p, O_DIRECTORY | O_NOFOLLOW)) < 0) {
      err = "image tree " + p + ": not a directory";
      return false;
    }
    image.push_back(t);
  }
  std::vector<std::pair<std::string, int>> payload;
  for (const char* sub : {"home", "workspace", "tmp"}) {
    const std::string p = w.payload + "/" + sub;
    if (!fs::make_dirs(p, sub == std::string("tmp") ? 01777 : 0755, err)) return false;
    const int fd = src.open(p, O_DIRECTORY | O_NOFOLLOW);
    if (fd < 0) {
      err = "open " + p + ": " + errno_text(errno);
      return false;
    }
    payload.emplace_back(sub, fd);
  }
  int inputs_fd = -1;
  if (!w.inputs.empty() && (inputs_fd = src.open(w.inputs, O_DIRECTORY | O_NOFOLLOW)) < 0) {
    err = "open " + w.inputs + ": " + errno_text(errno);
    return false;
  }
  std::vector<std::pair<std::string, int>> devices;
  for (const char* name : kScopedDevices) {
    const int fd = src.open(std::string("/dev/") + name);
    if (fd < 0) {
      err = std::string("open /dev/") + name + ": " + errno_text(errno);
      return false;
    }
    devices.emplace_back(name, fd);
  }
  const int null_fd = devices.front().second;

  const std::string root = w.mount_point;
  if (!sandbox::mount_tmpfs(root, "mode=0755,size=64k", err)) return false;
  for (const auto& t : image) {
    const std::string at = root + "/" + t.name;
    if (!t.link.empty() ? !symlink_at(t.link, at, err)
                        : !bind_dir(t.fd, at, access::read_only, err))
      return false;
  }
  for (const auto& [sub, fd] : payload) {
    const std::string at = root + (sub == std::string("home") ? kScopedHome
                                   : sub == std::string("workspace") ? kScopedWorkspace
                                                                     : kScopedTmp);
    if (!bind_dir(fd, at, access::read_write, err)) return false;
  }
  if (inputs_fd >= 0) {
    if (!bind_dir(inputs_fd, root + kScopedInputs, access::read_only, err)) return false;
  } else if (!fs::make_dirs(root + kScopedInputs, 0755, err)) {
    return false;
  }

  // The script's own file system: written once, then read-only for the job.
  const std::string run_job = root + kScopedScriptDir;
  if (!fs::make_dirs(run_job, 0755, err) ||
      !sandbox::mount_tmpfs(run_job, "mode=0755,size=" + std::to_string(w.script_bytes), err))
    return false;
  {
    const std::string at = root + kScopedScript;
    const int fd = ::open(at.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0555);
    const bool ok = fd >= 0 && fs::write_all(fd, script.data(), script.size());
    const int e = errno;
    if (fd >= 0) ::close(fd);
    if (!ok) {
      err = "write " + at + ": " + errno_text(e);
      return false;
    }
  }
  if (!sandbox::set_read_only(run_job, false, err)) return false;

  if (!mount_job_proc(root, null_fd, err)) return false;

  const std::string dev = root + "/dev";
  if (!fs::make_dirs(dev, 0755, err) || !sandbox::mount_tmpfs(dev, "mode=0755,size=64k", err))
    return false;
  for (const auto& [name, fd] : devices)
    if (!bind_file(fd, dev + "/" + name, err)) return false;
  // A private devpts: a job's own terminals (script(1), pty modules) live apart from
  // every other terminal, the worker's panes included.
  if (!fs::make_dirs(dev + "/pts", 0755, err) || !sandbox::mount_devpts(dev + "/pts", err) ||
      !symlink_at("pts/ptmx", dev + "/ptmx", err) || !make_dev_links(dev, err))
    return false;

  return sandbox::set_read_only(root, false, err) && sandbox::pivot_into(root, err);
}

}  // namespace shellctl::io::world
