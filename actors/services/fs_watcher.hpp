#pragma once
// fs_watcher: owns the one inotify descriptor. Job actors ask it to watch their job
// directory and are told which files changed (output.log growing, exit artifacts renamed
// into place, pipe markers created) instead of polling (decision D12).
#include <map>
#include <memory>
#include <string>

#include "actors/protocol/interfaces.hpp"
#include "io/fs/inotify_source.hpp"

namespace shellctl::actors {

struct fs_watcher_state {
  static inline const char* name = "fs_watcher";
  std::unique_ptr<io::fs::inotify_source> source;
  struct watch {
    std::string path;
    dir_listener owner;
  };
  std::map<int, watch> by_wd;
  std::map<std::string, int> by_path;
};

fs_watcher_actor::behavior_type fs_watcher(fs_watcher_actor::stateful_pointer<fs_watcher_state> self);

}  // namespace shellctl::actors
