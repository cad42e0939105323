#include "actors/metrics/metrics_registry.hpp"

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace shellctl::actors {

std::uint64_t process_rss_bytes() {
  // statm's second field is the resident set in pages.
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (got != 2) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::uint64_t process_open_fds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return 0;
  std::uint64_t n = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n > 0 ? n - 1 : 0;  // the directory's own descriptor is not the server's
}

metrics_registry_actor::behavior_type metrics_registry(
    metrics_registry_actor::stateful_pointer<metrics_registry_state> self, job_store_actor store) {
  auto& c = self->state.counters;
  c.start_time_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return {
      [self](http_observed& e) {
        auto& c = self->state.counters;
        ++c.requests[{e.method, e.route, e.status}];
        auto [it, fresh] = c.request_seconds.try_emplace({e.method, e.route}, latency_bounds());
        (void)fresh;
        it->second.observe(static_cast<double>(e.duration_us) / 1e6);
      },
      [self](connections_changed& e) {
        auto& c = self->state.counters;
        c.connections_open = e.open;
        if (e.accepted) ++c.connections_accepted;
      },
      [self](connection_refused& e) { ++self->state.counters.connections_refused[e.reason]; },
      [self](job_started_event& e) {
        auto& c = self->state.counters;
        const std::string mode(io::store::mode_text(e.mode));
        auto [it, fresh] = c.job_start_seconds.try_emplace(mode, latency_bounds());
        (void)fresh;
        it->second.observe(e.seconds);
      },
      [self](job_timeline_event& e) {
        auto& c = self->state.counters;
        const std::string mode(io::store::mode_text(e.mode));
        for (std::size_t i = 0; i < job_mark_count; ++i) {
          if (!e.marks.at[i]) continue;
          const std::string mark(mark_name(static_cast<job_mark>(i)));
          auto [it, fresh] = c.job_timeline_seconds.try_emplace({mode, mark}, latency_bounds());
          (void)fresh;
          it->second.observe(*e.marks.at[i]);
        }
      },
      [self](job_output_final& e) { self->state.counters.output_bytes += e.bytes; },
      [self](job_input_event& e) { self->state.counters.input_bytes += e.bytes; },
      [self](snapshot_ended& e) {
        auto& c = self->state.counters;
        const std::string kind = e.save ? "save" : "restore";
        ++c.snapshots[{kind, e.succeeded ? "ok" : "error"}];
        c.snapshot_bytes[kind] += e.bytes;
        auto [it, fresh] = c.snapshot_seconds.try_emplace(kind, snapshot_bounds());
        (void)fresh;
        it->second.observe(e.seconds);
      },
      [self](gc_swept& e) {
        ++self->state.counters.gc_sweeps;
        self->state.counters.gc_expired += e.expired;
      },
      [self, store](metrics_scrape&) -> caf::result<metrics_sample> {
        auto rp = self->make_response_promise<metrics_sample>();
        metrics_sample s = self->state.counters;
        s.rss_bytes = process_rss_bytes();
        s.open_fds = process_open_fds();
        // Bounded: a store stuck behind a busy database leaves the job counts out of this
        // scrape instead of holding it (the edge's own bound is longer).
        self->request(store, std::chrono::seconds(5), store_count_jobs{})
            .then(
                [rp, s](store_job_counts& counts) mutable {
                  s.jobs_known = true;
                  s.jobs = std::move(counts.counts);
                  rp.deliver(std::move(s));
                },
                [rp, s](caf::error&) mutable { rp.deliver(std::move(s)); });
        return rp;
      },
      [self](shutdown_jobs&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
