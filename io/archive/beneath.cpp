#include "io/archive/beneath.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace shellctl::io::archive {

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

}  // namespace shellctl::io::archive
