#include "io/native/scope/scope_storage.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "io/fs/files.hpp"
#include "io/sandbox/mounts.hpp"

namespace shellctl::io::native {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

bool copy_file(int src_dir, int dst_dir, const char* name, mode_t mode, const std::string& path,
               std::string& err) {
  const int in = ::openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0) {
    err = "open " + path + ": " + errno_text(errno);
    return false;
  }
  const int out = ::openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           mode & 07777);
  if (out < 0) {
    err = "create " + path + ": " + errno_text(errno);
    ::close(in);
    return false;
  }
  char buf[65536];
  bool ok = true;
  for (;;) {
    const ssize_t n = ::read(in, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      err = "read " + path + ": " + errno_text(errno);
      ok = false;
      break;
    }
    if (!fs::write_all(out, buf, static_cast<std::size_t>(n))) {
      err = "write " + path + ": " + errno_text(errno);
      ok = false;
      break;
    }
  }
  // The creation mode went through the umask: the base's bits, exactly.
  if (ok && ::fchmod(out, mode & 07777) != 0) {
    err = "chmod " + path + ": " + errno_text(errno);
    ok = false;
  }
  ::close(in);
  if (::close(out) != 0 && ok) {
    err = "close " + path + ": " + errno_text(errno);
    ok = false;
  }
  return ok;
}

bool copy_level(int src_dir, int dst_dir, const std::string& path, int depth, std::string& err) {
  if (depth <= 0) {
    err = path + ": nested too deeply";
    return false;
  }
  const int list_fd = ::openat(src_dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = list_fd >= 0 ? ::fdopendir(list_fd) : nullptr;
  if (d == nullptr) {
    err = "open " + path + ": " + errno_text(errno);
    if (list_fd >= 0) ::close(list_fd);
    return false;
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  for (const auto& name : names) {
    const std::string sub = path + "/" + name;
    struct stat st {};
    if (::fstatat(src_dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      err = "stat " + sub + ": " + errno_text(errno);
      return false;
    }
    if (S_ISDIR(st.st_mode)) {
      if (::mkdirat(dst_dir, name.c_str(), 0700) != 0) {
        err = "mkdir " + sub + ": " + errno_text(errno);
        return false;
      }
      const int s = ::openat(src_dir, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      const int t = ::openat(dst_dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      bool ok = s >= 0 && t >= 0;
      if (!ok) err = "open " + sub + ": " + errno_text(errno);
      ok = ok && copy_level(s, t, sub, depth - 1, err);
      // The directory's own bits last, so that a read-only one could still be filled.
      if (ok && ::fchmod(t, st.st_mode & 07777) != 0) {
        err = "chmod " + sub + ": " + errno_text(errno);
        ok = false;
      }
      if (s >= 0) ::close(s);
      if (t >= 0) ::close(t);
      if (!ok) return false;
    } else if (S_ISREG(st.st_mode)) {
      if (!copy_file(src_dir, dst_dir, name.c_str(), st.st_mode, sub, err)) return false;
    } else if (S_ISLNK(st.st_mode)) {
      std::vector<char> target(static_cast<std::size_t>(st.st_size) + 2);
      const ssize_t n = ::readlinkat(src_dir, name.c_str(), target.data(), target.size() - 1);
      if (n < 0) {
        err = "readlink " + sub + ": " + errno_text(errno);
        return false;
      }
      target[static_cast<std::size_t>(n)] = '\0';
      if (::symlinkat(target.data(), dst_dir, name.c_str()) != 0) {
        err = "symlink " + sub + ": " + errno_text(errno);
        return false;
      }
    }
  }
  return true;
}

}  // namespace

bool copy_tree(int src_dir, int dst_dir, std::string& err, int max_depth) {
  return copy_level(src_dir, dst_dir, "base", max_depth, err);
}

bool mount_scope_storage(const scope_storage_spec& s, std::string& err) {
  if (s.spool_bytes == 0 || s.disk_bytes == 0) {
    err = "no size for the spool or the payload";
    return false;
  }
  const std::string spool = s.dir + "/spool", payload = s.dir + "/payload";
  // A small tmpfs of the worker's own on `dir` first: the mount points below are then the
  // worker's to make, whoever owns `dir` on the host.
  if (!sandbox::mount_tmpfs(s.dir, "mode=0755,size=64k", err) ||
      !fs::make_dirs(spool, 0700, err) || !fs::make_dirs(payload, 0755, err) ||
      !sandbox::mount_tmpfs(spool, "mode=0700,size=" + std::to_string(s.spool_bytes), err) ||
      !sandbox::mount_tmpfs(payload, "mode=0755,size=" + std::to_string(s.disk_bytes), err))
    return false;
  for (const auto& [sub, mode] : {std::pair<const char*, mode_t>{"home", 0755},
                                  {"workspace", 0755}, {"tmp", 01777}}) {
    const std::string p = payload + "/" + sub;
    if (::mkdir(p.c_str(), mode) != 0 || ::chmod(p.c_str(), mode) != 0) {
      err = "mkdir " + p + ": " + errno_text(errno);
      return false;
    }
  }
  if (s.base_fd < 0) return true;
  const int home = ::open((payload + "/home").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (home < 0) {
    err = "open " + payload + "/home: " + errno_text(errno);
    return false;
  }
  const bool ok = copy_tree(s.base_fd, home, err);
  ::close(home);
  if (!ok && err.find(std::strerror(ENOSPC)) != std::string::npos)
    err = "the base snapshot does not fit in disk_bytes (" + std::to_string(s.disk_bytes) +
          "): " + err;
  return ok;
}

}  // namespace shellctl::io::native
