#include "io/fs/beneath.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
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

}  // namespace shellctl::io::fs
