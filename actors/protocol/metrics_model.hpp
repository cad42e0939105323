#pragma once
// What /metrics reports (docs/api.md "Metrics"), as plain values: the metrics_registry actor
// keeps a `metrics_sample` up to date from the events the other actors send it, and hands
// a copy to the edge, which renders it in Prometheus text format (actors/metrics/prometheus_text.hpp).
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace shellctl::actors {

// A Prometheus histogram: counts per upper bound (not cumulative here; the renderer adds
// them up), the +Inf overflow, the sum and the count.
struct histogram {
  std::vector<double> bounds;        // ascending upper bounds
  std::vector<std::uint64_t> counts;  // bounds.size() + 1 (the last is +Inf)
  double sum = 0;
  std::uint64_t count = 0;

  histogram() = default;
  explicit histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1, 0) {}
  void observe(double v);
};

// Bounds in seconds for request and job-start latencies (1 ms to 60 s: long-polls land at
// the top), and for snapshot durations (up to the 10-minute default timeout).
std::vector<double> latency_bounds();
std::vector<double> snapshot_bounds();

struct job_count {
  std::string status;  // created, starting, running, exited, terminated, failed, lost
  std::string mode;    // pty, stdio
  std::uint64_t n = 0;
};

struct metrics_sample {
  double start_time_s = 0;  // the process's start, Unix seconds
  // Answered requests by (method, route pattern, status); "-" routes are unmatched paths.
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t> requests;
  std::map<std::pair<std::string, std::string>, histogram> request_seconds;  // (method, route)
  std::uint64_t connections_open = 0;
  std::uint64_t connections_accepted = 0;
  // Closed at once by reason: "full", "guest" (made room), "job" (a job's, refused unread).
  std::map<std::string, std::uint64_t> connections_refused;
  std::map<std::string, histogram> job_start_seconds;  // by mode: admitted → running
  // By (mode, mark): admission → each moment of a job's life (actors/protocol/job_timeline.hpp).
  std::map<std::pair<std::string, std::string>, histogram> job_timeline_seconds;
  std::uint64_t output_bytes = 0;  // output of jobs whose output became final
  std::uint64_t input_bytes = 0;   // text typed into jobs (POST .../input)
  std::map<std::pair<std::string, std::string>, std::uint64_t> snapshots;  // (kind, outcome)
  std::map<std::string, std::uint64_t> snapshot_bytes;  // by kind: archive bytes sent/written
  std::map<std::string, histogram> snapshot_seconds;    // by kind
  std::uint64_t gc_sweeps = 0;
  std::uint64_t gc_expired = 0;  // jobs a sweep found past retention
  // Read when the sample is taken.
  std::vector<job_count> jobs;  // every row of the database, by status and mode
  bool jobs_known = false;      // false: the store did not answer (the family is left out)
  std::uint64_t rss_bytes = 0;
  std::uint64_t open_fds = 0;
};

}  // namespace shellctl::actors
