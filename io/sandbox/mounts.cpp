#include "io/sandbox/mounts.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shellctl::io::sandbox {

namespace {

std::string fail_text(const char* what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

// mount_setattr(2) (Linux 5.12) changes flags of a whole tree in one call; older kernels
// get one remount per mount point, keeping the flags a user namespace may not clear.
bool set_attrs(const std::string& dst, unsigned long long attrs, bool recursive,
               std::string& err) {
  struct mount_attr attr {};
  attr.attr_set = attrs;
  const long rc = ::syscall(SYS_mount_setattr, AT_FDCWD, dst.c_str(),
                            recursive ? AT_RECURSIVE : 0, &attr, sizeof attr);
  if (rc == 0) return true;
  if (errno != ENOSYS) {
    err = fail_text("set mount flags on", dst);
    return false;
  }
  struct statvfs vfs {};
  if (::statvfs(dst.c_str(), &vfs) != 0) {
    err = fail_text("statvfs", dst);
    return false;
  }
  unsigned long flags = MS_BIND | MS_REMOUNT;
  if (vfs.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (vfs.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (vfs.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (vfs.f_flag & ST_RDONLY) flags |= MS_RDONLY;
  if (attrs & MOUNT_ATTR_RDONLY) flags |= MS_RDONLY;
  if (attrs & MOUNT_ATTR_NOSUID) flags |= MS_NOSUID;
  if (attrs & MOUNT_ATTR_NODEV) flags |= MS_NODEV;
  if (attrs & MOUNT_ATTR_NOEXEC) flags |= MS_NOEXEC;
  if (::mount(nullptr, dst.c_str(), nullptr, flags, nullptr) != 0) {
    err = fail_text("remount", dst);
    return false;
  }
  return true;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

bool make_mounts_private(std::string& err) {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    err = fail_text("make private", "/");
    return false;
  }
  return true;
}

bool bind(const std::string& src, const std::string& dst, access a, std::string& err,
          bool recursive) {
  unsigned long flags = MS_BIND;
  if (recursive) flags |= MS_REC;
  if (::mount(src.c_str(), dst.c_str(), nullptr, flags, nullptr) != 0) {
    err = "bind " + src + " on " + dst + ": " + std::strerror(errno);
    return false;
  }
  unsigned long long attrs = is_directory(dst) ? MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV : 0;
  if (a == access::read_only) attrs |= MOUNT_ATTR_RDONLY;
  return attrs == 0 || set_attrs(dst, attrs, recursive, err);
}

bool mount_tmpfs(const std::string& dst, const std::string& options, std::string& err) {
  if (::mount("tmpfs", dst.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    err = fail_text("mount tmpfs on", dst);
    return false;
  }
  return true;
}

bool mount_proc(const std::string& dst, std::string& err) {
  if (::mount("proc", dst.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    err = fail_text("mount proc on", dst);
    return false;
  }
  return true;
}

bool mount_cgroup2(const std::string& dst, std::string& err) {
  if (::mount("cgroup2", dst.c_str(), "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    err = fail_text("mount cgroup2 on", dst);
    return false;
  }
  return true;
}

bool mount_devpts(const std::string& dst, std::string& err) {
  if (::mount("devpts", dst.c_str(), "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=0620") != 0) {
    err = fail_text("mount devpts on", dst);
    return false;
  }
  return true;
}

bool set_read_only(const std::string& dst, bool recursive, std::string& err) {
  return set_attrs(dst, MOUNT_ATTR_RDONLY, recursive, err);
}

bool pivot_into(const std::string& new_root, std::string& err) {
  // pivot_root(".", ".") stacks the old root on the new one; detaching "." then drops it.
  if (::chdir(new_root.c_str()) != 0) {
    err = fail_text("chdir", new_root);
    return false;
  }
  if (::syscall(SYS_pivot_root, ".", ".") != 0) {
    err = fail_text("pivot_root", new_root);
    return false;
  }
  if (::umount2(".", MNT_DETACH) != 0) {
    err = fail_text("detach old root under", new_root);
    return false;
  }
  if (::chdir("/") != 0) {
    err = fail_text("chdir", "/");
    return false;
  }
  return true;
}

bool make_file(const std::string& path, std::string& err) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return true;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    err = fail_text("create", path);
    return false;
  }
  ::close(fd);
  return true;
}

}  // namespace shellctl::io::sandbox
