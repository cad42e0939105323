#include "actors/services/fs_watcher.hpp"

#include <sys/inotify.h>

#include <cstring>

namespace shellctl::actors {

fs_watcher_actor::behavior_type fs_watcher(fs_watcher_actor::stateful_pointer<fs_watcher_state> self) {
  auto me = caf::actor_cast<fs_watcher_actor>(self);
  self->state.source = std::make_unique<io::fs::inotify_source>(
      [me](std::vector<io::fs::dir_event> events) {
        caf::anon_send(me, fs_batch{std::move(events)});
      });
  return {
      [self](watch_dir& m) -> caf::result<watch_set> {
        auto& st = self->state;
        int wd = st.source->add_dir(m.path);
        if (wd < 0) return make_job_error(job_errc::internal_error, "inotify_add_watch " + m.path + ": " + std::strerror(-wd));
        st.by_wd[wd] = {m.path, m.owner};
        st.by_path[m.path] = wd;
        return watch_set{};
      },
      [self](unwatch_dir& m) {
        auto& st = self->state;
        auto it = st.by_path.find(m.path);
        if (it == st.by_path.end()) return;
        st.source->remove(it->second);
        st.by_wd.erase(it->second);
        st.by_path.erase(it);
      },
      [self](fs_batch& m) {
        auto& st = self->state;
        // Group per directory so that each job actor gets one message per batch.
        std::map<int, dir_changed> per_wd;
        for (auto& ev : m.events) {
          if (ev.mask & IN_IGNORED) continue;
          if (!st.by_wd.count(ev.wd)) continue;
          auto& changed = per_wd[ev.wd];
          changed.names.insert(ev.name);
          if (ev.mask & IN_CLOSE_WRITE) changed.closed.insert(ev.name);
        }
        for (auto& [wd, changed] : per_wd) self->send(st.by_wd[wd].owner, std::move(changed));
      },
      [self](shutdown_jobs&) {
        self->state.source.reset();
        self->quit();
      },
  };
}

}  // namespace shellctl::actors
