#include "io/proc/stdin_pipe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace shellctl::io::proc::stdin_pipe {

int create(const std::string& path) {
  if (::mkfifo(path.c_str(), 0600) != 0) return -1;
  // Read-write: a FIFO opened so never blocks, and while we hold it the job's reader
  // never sees an end we did not mean (Linux fifo(7)).
  const int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  // Fewer wake-ups for a multi-MiB input; the default 64 KiB stays if refused.
  (void)::fcntl(fd, F_SETPIPE_SZ, 1 << 20);
  return fd;
}

int open_for_job(const std::string& path) {
  // Non-blocking open (no wait for a writer, should the server be gone), then blocking
  // reads, as any program expects of its stdin.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

std::size_t write_all(int fd, std::string_view bytes, int cancel_fd) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return done;
    pollfd fds[2] = {{fd, POLLOUT, 0}, {cancel_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return done;
    }
    if (fds[1].revents != 0) {
      errno = ECANCELED;
      return done;
    }
    if (fds[0].revents & (POLLERR | POLLNVAL)) {
      errno = EPIPE;
      return done;
    }
  }
  return done;
}

}  // namespace shellctl::io::proc::stdin_pipe
