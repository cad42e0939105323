#include "actors/metrics/prometheus_text.hpp"

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "io/store/job_status.hpp"

namespace shellctl::actors {
namespace {

using label = std::pair<std::string_view, std::string_view>;

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // %.17g spells 0.1 as 0.10000000000000001; the shortest form that reads back is nicer.
  for (int prec = 1; prec <= 17; ++prec) {
    char shorter[40];
    std::snprintf(shorter, sizeof shorter, "%.*g", prec, v);
    if (std::strtod(shorter, nullptr) == v) return shorter;
  }
  return buf;
}

std::string number(std::uint64_t v) { return std::to_string(v); }

// Label values are escaped as the format says: backslash, double quote and line feed.
void append_labels(std::string& out, std::initializer_list<label> labels, const char* le = nullptr) {
  if (labels.size() == 0 && !le) return;
  out += '{';
  bool first = true;
  auto one = [&](std::string_view name, std::string_view value) {
    if (!first) out += ',';
    first = false;
    out += name;
    out += "=\"";
    for (char c : value) {
      if (c == '\\') out += "\\\\";
      else if (c == '"') out += "\\\"";
      else if (c == '\n') out += "\\n";
      else out += c;
    }
    out += '"';
  };
  for (const auto& [name, value] : labels) one(name, value);
  if (le) one("le", le);
  out += '}';
}

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

template <class Value>
void sample(std::string& out, const char* name, std::initializer_list<label> labels, Value v) {
  out += name;
  append_labels(out, labels);
  out += ' ';
  out += number(v);
  out += '\n';
}

void histogram_samples(std::string& out, const std::string& name, std::initializer_list<label> labels,
                       const histogram& h) {
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= h.bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    const std::string le = i < h.bounds.size() ? number(h.bounds[i]) : "+Inf";
    out += name + "_bucket";
    append_labels(out, labels, le.c_str());
    out += ' ' + number(cumulative) + '\n';
  }
  out += name + "_sum";
  append_labels(out, labels);
  out += ' ' + number(h.sum) + '\n';
  out += name + "_count";
  append_labels(out, labels);
  out += ' ' + number(h.count) + '\n';
}

// The value kept for `key`, or `fallback` before the first event that sets it: every
// series is there from the start.
template <class Map, class Key, class Value>
Value found_or(const Map& m, const Key& key, Value fallback) {
  auto it = m.find(key);
  return it != m.end() ? it->second : fallback;
}

}  // namespace

std::string prometheus_text(const metrics_sample& s) {
  std::string out;
  out.reserve(8192);

  family(out, "shellctl_http_requests_total", "counter",
         "Answered HTTP requests by method, route pattern (- for no route) and status.");
  for (const auto& [key, n] : s.requests) {
    const auto& [method, route, status] = key;
    const std::string code = std::to_string(status);
    sample(out, "shellctl_http_requests_total", {{"method", method}, {"route", route}, {"status", code}}, n);
  }
  family(out, "shellctl_http_request_duration_seconds", "histogram",
         "Time from a request's first byte to its answer (long-polls included), by method and route.");
  for (const auto& [key, h] : s.request_seconds)
    histogram_samples(out, "shellctl_http_request_duration_seconds",
                      {{"method", key.first}, {"route", key.second}}, h);
  family(out, "shellctl_http_connections_open", "gauge", "Client connections open now.");
  sample(out, "shellctl_http_connections_open", {}, s.connections_open);
  family(out, "shellctl_http_connections_accepted_total", "counter", "Client connections accepted.");
  sample(out, "shellctl_http_connections_accepted_total", {}, s.connections_accepted);
  family(out, "shellctl_http_connections_refused_total", "counter",
         "Connections closed at once: full (every one authenticated), guest (the oldest without the "
         "token, closed to make room), job (a job's, refused before a byte was read).");
  for (const char* reason : {"full", "guest", "job"}) {
    const auto it = s.connections_refused.find(reason);
    sample(out, "shellctl_http_connections_refused_total", {{"reason", reason}},
           it == s.connections_refused.end() ? 0 : it->second);
  }

  if (s.jobs_known) {
    family(out, "shellctl_jobs", "gauge", "Jobs in the database by status and mode.");
    for (const std::string_view status : io::store::detail::status_words) {
      for (const auto mode : {io::store::job_mode::pty, io::store::job_mode::stdio}) {
        const std::string_view m = io::store::mode_text(mode);
        std::uint64_t n = 0;
        for (const auto& c : s.jobs)
          if (c.status == status && c.mode == m) n += c.n;
        sample(out, "shellctl_jobs", {{"status", status}, {"mode", m}}, n);
      }
    }
  }
  family(out, "shellctl_job_start_duration_seconds", "histogram",
         "Time from a run request's admission to its job running, by mode.");
  for (const auto mode : {io::store::job_mode::pty, io::store::job_mode::stdio}) {
    const std::string m(io::store::mode_text(mode));
    histogram_samples(out, "shellctl_job_start_duration_seconds", {{"mode", m}},
                      found_or(s.job_start_seconds, m, histogram(latency_bounds())));
  }
  family(out, "shellctl_job_timeline_seconds", "histogram",
         "From a job's admission to each moment of its life (mark), reported with its first "
         "answer that says done; jobs admitted in this process.");
  for (const auto& [key, h] : s.job_timeline_seconds)
    histogram_samples(out, "shellctl_job_timeline_seconds", {{"mode", key.first}, {"mark", key.second}}, h);
  family(out, "shellctl_job_output_bytes_total", "counter",
         "Bytes of output.log of the jobs whose output became final in this process.");
  sample(out, "shellctl_job_output_bytes_total", {}, s.output_bytes);
  family(out, "shellctl_job_input_bytes_total", "counter", "Bytes of text typed into jobs.");
  sample(out, "shellctl_job_input_bytes_total", {}, s.input_bytes);

  family(out, "shellctl_snapshots_total", "counter", "Home snapshot operations by kind and outcome.");
  for (const char* kind : {"save", "restore"})
    for (const char* outcome : {"ok", "error"})
      sample(out, "shellctl_snapshots_total", {{"kind", kind}, {"outcome", outcome}},
             found_or(s.snapshots, std::pair<std::string, std::string>(kind, outcome), std::uint64_t{0}));
  family(out, "shellctl_snapshot_bytes_total", "counter",
         "Archive bytes streamed by saves, bytes written by restores.");
  for (const char* kind : {"save", "restore"})
    sample(out, "shellctl_snapshot_bytes_total", {{"kind", kind}},
           found_or(s.snapshot_bytes, std::string(kind), std::uint64_t{0}));
  family(out, "shellctl_snapshot_duration_seconds", "histogram", "Duration of home snapshot operations.");
  for (const char* kind : {"save", "restore"})
    histogram_samples(out, "shellctl_snapshot_duration_seconds", {{"kind", kind}},
                      found_or(s.snapshot_seconds, std::string(kind), histogram(snapshot_bounds())));

  family(out, "shellctl_gc_sweeps_total", "counter", "Retention sweeps run.");
  sample(out, "shellctl_gc_sweeps_total", {}, s.gc_sweeps);
  family(out, "shellctl_gc_expired_jobs_total", "counter",
         "Terminal jobs the sweeps found past retention and handed over for deletion.");
  sample(out, "shellctl_gc_expired_jobs_total", {}, s.gc_expired);

  family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  sample(out, "process_resident_memory_bytes", {}, s.rss_bytes);
  family(out, "process_open_fds", "gauge", "Number of open file descriptors.");
  sample(out, "process_open_fds", {}, s.open_fds);
  family(out, "process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch in seconds.");
  sample(out, "process_start_time_seconds", {}, s.start_time_s);
  return out;
}

}  // namespace shellctl::actors
