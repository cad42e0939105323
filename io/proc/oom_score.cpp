#include "io/proc/oom_score.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace shellctl::io::proc::oom_score {

std::optional<int> read(pid_t pid) {
  const std::string path =
      pid == 0 ? std::string("/proc/self/oom_score_adj") : "/proc/" + std::to_string(pid) + "/oom_score_adj";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[16] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(buf, &end, 10);
  if (end == buf || v < min_adj || v > max_adj) return std::nullopt;
  return static_cast<int>(v);
}

std::optional<int> read_self() { return read(0); }

bool write_self(int adj) {
  const int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const std::string text = std::to_string(adj);
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int e = errno;
  ::close(fd);
  errno = e;
  return ok;
}

}  // namespace shellctl::io::proc::oom_score
