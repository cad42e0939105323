#include "io/proc/runner_inotify.hpp"

#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

namespace shellctl::io::proc {

namespace {
std::int64_t monotonic_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}
}  // namespace

int runner_inotify_instance::add_watch(const std::string& path, std::uint32_t mask) {
  if (fd_ < 0) {
    fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd_ < 0) return -1;
  }
  const int wd = ::inotify_add_watch(fd_, path.c_str(), mask);
  if (wd >= 0) watches_.push_back(wd);
  return wd;
}

void runner_inotify_instance::drop_watches() {
  if (fd_ < 0) return;
  for (int wd : watches_) ::inotify_rm_watch(fd_, wd);  // gone already: EINVAL, harmless
  watches_.clear();
  dropped_at_ms_ = monotonic_ms();
  // Whatever was queued before the watches went is of no use to the next wait.
  char buf[4096];
  while (::read(fd_, buf, sizeof buf) > 0) {
  }
}

int runner_inotify_instance::close_if_idle(int idle_ms) {
  if (!lingering()) return 0;
  const std::int64_t left = dropped_at_ms_ + idle_ms - monotonic_ms();
  if (left > 0) return static_cast<int>(left);
  ::close(fd_);
  fd_ = -1;
  return 0;
}

runner_inotify_instance& runner_inotify() {
  static runner_inotify_instance instance;
  return instance;
}

}  // namespace shellctl::io::proc
