#include "actors/services/cleanup_worker.hpp"

#include "io/fs/files.hpp"
#include "io/tmux/control_client.hpp"

namespace shellctl::actors {

cleanup_worker_actor::behavior_type cleanup_worker(cleanup_worker_actor::pointer self) {
  return {
      [](remove_tree& m) {
        if (!m.path.empty()) io::fs::remove_tree(m.path);
      },
      [](kill_groups_naming& m) { io::tmux::kill_process_groups_naming(m.owner); },
      [self](shutdown_jobs&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
