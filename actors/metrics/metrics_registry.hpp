#pragma once
// metrics_registry: the one owner of the counters behind GET /metrics (docs/api.md "Metrics").
// The HTTP loop, the job actors, the snapshot gate and the retention GC tell it what
// happened (fire-and-forget events, actors/protocol/messages.hpp); a scrape gets a copy of the
// counters with what is read at that moment: the database's rows per status and mode
// (asked of job_store, so the figures are the ones GET /v1/jobs would show) and the
// process's RSS and open descriptors. Spawned detached: reading /proc is a system call
// that must not occupy a scheduler thread, and the events are few per request.
#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/metrics_model.hpp"

namespace shellctl::actors {

struct metrics_registry_state {
  static inline const char* name = "metrics_registry";
  metrics_sample counters;  // everything but the parts read at scrape time
};

metrics_registry_actor::behavior_type metrics_registry(
    metrics_registry_actor::stateful_pointer<metrics_registry_state> self, job_store_actor store);

// The process's resident set and its open descriptors, from /proc/self (0 when unreadable).
std::uint64_t process_rss_bytes();
std::uint64_t process_open_fds();

}  // namespace shellctl::actors
