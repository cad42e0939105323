#include "io/fs/beneath.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace shellctl::io::fs {

namespace {

int open_how_beneath(int root, const std::string& rel, int flags, mode_t mode,
                     unsigned long long resolve) {
  struct open_how how {};
  how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = resolve;
  for (;;) {
    // EAGAIN: a rename or mount raced the walk (the kernel cannot vouch for it); again.
    const long fd = ::syscall(SYS_openat2, root, rel.empty() ? "." : rel.c_str(), &how, sizeof how);
    if (fd >= 0 || (errno != EAGAIN && errno != EINTR)) return static_cast<int>(fd);
  }
}

}  // namespace

int open_beneath(int root, const std::string& rel, int flags, mode_t mode) {
  return open_how_beneath(root, rel, flags, mode, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
}

int open_beneath_no_symlinks(int root, const std::string& rel, int flags) {
  return open_how_beneath(root, rel, flags, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
}

int dirs_beneath(int root, const std::string& rel, mode_t mode) {
  int fd = ::fcntl(root, F_DUPFD_CLOEXEC, 0);
  std::size_t start = 0;
  while (fd >= 0 && start < rel.size()) {
    std::size_t slash = rel.find('/', start);
    if (slash == std::string::npos) slash = rel.size();
    const std::string part = rel.substr(start, slash - start);
    start = slash + 1;
    if (part.empty() || part == ".") continue;
    if (::mkdirat(fd, part.c_str(), mode) != 0 && errno != EEXIST) {
      const int e = errno;
      ::close(fd);
      errno = e;
      return -1;
    }
    // Beneath the current level: a symlinked component that leads out is refused.
    const int next = open_beneath(fd, part, O_PATH | O_DIRECTORY, 0);
    const int e = errno;
    ::close(fd);
    errno = e;
    fd = next;
  }
  return fd;
}

}  // namespace shellctl::io::fs
