#pragma once
// One inotify descriptor plus a reader thread. The reader thread owns nothing but the
// read loop: it hands each batch of events to `sink` (which forwards them to the
// fs_watcher actor). Watches are added and removed by the owner (the fs_watcher actor);
// inotify itself is thread-safe, so no user-space state is shared between the threads.
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace shellctl::io::fs {

struct dir_event {
  int wd;
  std::uint32_t mask;
  std::string name;  // file name inside the watched directory ("" for the dir itself)
};

class inotify_source {
 public:
  using sink = std::function<void(std::vector<dir_event>)>;
  explicit inotify_source(sink s);
  ~inotify_source();
  inotify_source(const inotify_source&) = delete;
  inotify_source& operator=(const inotify_source&) = delete;

  // Watches a directory for files appearing, changing and being renamed into it.
  // Returns the watch descriptor, or -errno.
  int add_dir(const std::string& path);
  void remove(int wd);

 private:
  void read_loop();
  int fd_ = -1;
  int wake_fd_ = -1;  // eventfd: tells the reader thread to stop
  sink sink_;
  std::thread reader_;
};

}  // namespace shellctl::io::fs
