#include "actors/jobs/retention_gc.hpp"

#include "io/text/clock.hpp"

namespace shellctl::actors {

retention_gc_actor::behavior_type retention_gc(retention_gc_actor::pointer self,
                                               retention_settings cfg, job_store_actor store,
                                               job_registry_actor registry,
                                               metrics_registry_actor metrics) {
  return {
      [=](gc_tick&) {
        auto cutoff = io::text::format_utc(
            std::chrono::system_clock::now() -
            std::chrono::duration_cast<std::chrono::system_clock::duration>(cfg.retention));
        // Best effort: a store that does not answer in time is asked again next tick.
        self->request(store, cfg.interval, store_expired{cutoff})
            .then(
                [=](store_ids& expired) {
                  self->send(metrics, gc_swept{expired.ids.size()});
                  if (!expired.ids.empty())
                    self->send(registry, collect_jobs{std::move(expired.ids), cutoff});
                },
                [](caf::error&) {});
        self->delayed_send(self, cfg.interval, gc_tick{});
      },
      [=](shutdown_jobs&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
