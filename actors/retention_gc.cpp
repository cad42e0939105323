#include "actors/retention_gc.hpp"

#include "io/text/clock.hpp"

namespace shellctl::actors {

caf::behavior retention_gc(caf::event_based_actor* self, retention_settings cfg,
                           caf::actor store, caf::actor registry) {
  return {
      [=](gc_tick&) {
        auto cutoff = io::text::format_utc(
            std::chrono::system_clock::now() -
            std::chrono::duration_cast<std::chrono::system_clock::duration>(cfg.retention));
        self->request(store, caf::infinite, store_expired{cutoff})
            .then([=](store_ids& expired) {
              if (!expired.ids.empty())
                self->send(registry, collect_jobs{std::move(expired.ids), cutoff});
            });
        self->delayed_send(self, cfg.interval, gc_tick{});
      },
      [=](shutdown_jobs&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
