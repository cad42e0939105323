#include "io/fs/inotify_source.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <tuple>

namespace shellctl::io::fs {

inotify_source::inotify_source(sink s) : sink_(std::move(s)) {
  fd_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd_ < 0) throw std::runtime_error(std::string("inotify_init1: ") + std::strerror(errno));
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    ::close(fd_);
    throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  reader_ = std::thread([this] { read_loop(); });
}

inotify_source::~inotify_source() {
  std::uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof one) < 0) {
    // The reader would then block forever; there is nothing sane left to do.
  }
  if (reader_.joinable()) reader_.join();
  ::close(fd_);
  ::close(wake_fd_);
}

int inotify_source::add_dir(const std::string& path) {
  int wd = inotify_add_watch(fd_, path.c_str(),
                             IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY |
                                 IN_DELETE_SELF | IN_ONLYDIR);
  return wd < 0 ? -errno : wd;
}

void inotify_source::remove(int wd) { inotify_rm_watch(fd_, wd); }

void inotify_source::read_loop() {
  alignas(inotify_event) char buf[64 * 1024];
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    std::vector<dir_event> batch;
    // A busy output.log produces a stream of IN_MODIFY: one per (wd, name) per batch is
    // all the actors need, since they re-read the state anyway.
    std::set<std::tuple<int, std::uint32_t, std::string>> seen;
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (char* p = buf; p < buf + n;) {
        auto* ev = reinterpret_cast<inotify_event*>(p);
        std::string name = ev->len ? std::string(ev->name) : std::string();
        auto key = std::make_tuple(ev->wd, ev->mask, name);
        if (seen.insert(key).second) batch.push_back({ev->wd, ev->mask, std::move(name)});
        p += sizeof(inotify_event) + ev->len;
      }
      if (batch.size() > 4096) break;
    }
    if (!batch.empty()) sink_(std::move(batch));
  }
}

}  // namespace shellctl::io::fs
