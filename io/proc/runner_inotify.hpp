#pragma once
// The runner's one inotify instance, for its two waits on the job directory: the start
// gate and, for PTY jobs, the pipe's end (.pipe-end). Both are on every job's path.
//
// Why one instance that is never closed on that path: closing an inotify instance flushes
// fsnotify's mark reaper, which waits for an SRCU grace period — 3.5 ms mean, 20 ms at
// worst per close measured on the 2-core VM of the job benchmark (and a watch removed by
// any process, the server's own included, can make a close wait). Removing a watch is
// cheap (its mark is freed later), so a wait ends by removing its watches, and the
// instance is closed only once it has been idle long enough for the reaper to be done
// (close_if_idle, from the runner's wait loop), or by the kernel at exit: after the
// pane's descriptors 0-2, so tmux sees the pane close first.
//
// The runner is single-threaded: one instance per process (runner_inotify()).
#include <cstdint>
#include <string>
#include <vector>

namespace shellctl::io::proc {

class runner_inotify_instance {
 public:
  // Watches `path` (opening the instance first if need be; non-blocking, close-on-exec).
  // The watch descriptor, or -1 with errno set (EMFILE/ENFILE: no instance to be had;
  // ENOSPC: out of watches).
  int add_watch(const std::string& path, std::uint32_t mask);
  // The instance's descriptor to poll and read (-1: none open).
  int fd() const { return fd_; }
  // Ends the current wait: removes every watch added since the last call.
  void drop_watches();
  // True while the instance is open with no watch, waiting to be closed cheaply.
  bool lingering() const { return fd_ >= 0 && watches_.empty(); }
  // Closes a lingering instance once its last watch was dropped `idle_ms` ago or more.
  // Returns the milliseconds left to wait (0: closed or nothing to close).
  int close_if_idle(int idle_ms = 100);

 private:
  int fd_ = -1;
  std::vector<int> watches_;
  std::int64_t dropped_at_ms_ = 0;
};

runner_inotify_instance& runner_inotify();

}  // namespace shellctl::io::proc
