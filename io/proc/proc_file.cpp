#include "io/proc/proc_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace shellctl::io::proc {

std::optional<std::string> read_proc_fd(int fd) {
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return text;
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
}

std::optional<std::string> read_proc_file(long pid, const std::string& what) {
  const std::string path = "/proc/" + std::to_string(pid) + "/" + what;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  auto text = read_proc_fd(fd);
  ::close(fd);
  return text;
}

}  // namespace shellctl::io::proc
