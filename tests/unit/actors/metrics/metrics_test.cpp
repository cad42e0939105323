// The /metrics text (actors/metrics/prometheus_text.hpp) from a hand-made sample: histogram buckets are
// cumulative and end at +Inf with the count, label values are escaped, every family is
// there before the first event, and the job gauge lists every status and mode.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "actors/metrics/prometheus_text.hpp"
#include "actors/protocol/job_timeline.hpp"

using namespace shellctl::actors;

namespace {
bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}
}  // namespace

TEST_CASE("histogram buckets: each observation lands in the first bound at or above it") {
  histogram h({0.1, 1});
  h.observe(0.05);
  h.observe(0.1);  // on the bound: le is "less than or equal"
  h.observe(0.5);
  h.observe(7);
  CHECK(h.counts == std::vector<std::uint64_t>{2, 1, 1});
  CHECK(h.count == 4);
  CHECK(h.sum == doctest::Approx(7.65));
}

TEST_CASE("an empty sample still has every family, with zeros") {
  metrics_sample s;
  s.jobs_known = true;
  const auto text = prometheus_text(s);
  for (const char* family :
       {"shellctl_http_requests_total counter", "shellctl_http_request_duration_seconds histogram",
        "shellctl_http_connections_open gauge", "shellctl_jobs gauge",
        "shellctl_job_start_duration_seconds histogram", "shellctl_job_output_bytes_total counter",
        "shellctl_job_input_bytes_total counter", "shellctl_snapshots_total counter",
        "shellctl_snapshot_bytes_total counter", "shellctl_snapshot_duration_seconds histogram",
        "shellctl_gc_sweeps_total counter", "shellctl_gc_expired_jobs_total counter",
        "process_resident_memory_bytes gauge", "process_open_fds gauge"}) {
    CAPTURE(family);
    CHECK(has_line(text, std::string("# TYPE ") + family));
  }
  CHECK(has_line(text, R"(shellctl_jobs{status="lost",mode="stdio"} 0)"));
  CHECK(has_line(text, R"(shellctl_job_start_duration_seconds_bucket{mode="pty",le="+Inf"} 0)"));
  CHECK(has_line(text, R"(shellctl_snapshots_total{kind="restore",outcome="error"} 0)"));
}

TEST_CASE("requests and their latency, cumulative buckets, escaped labels") {
  metrics_sample s;
  s.requests[{"GET", "/v1/jobs/{job_id}", 404}] = 3;
  s.requests[{"GET", "a\"b\\c\nd", 200}] = 1;
  histogram h(std::vector<double>{0.001, 0.5});
  h.observe(0.0005);
  h.observe(0.2);
  h.observe(9);
  s.request_seconds[{"POST", "/v1/jobs/run"}] = h;
  s.jobs = {{"exited", "pty", 5}, {"running", "stdio", 2}};
  s.jobs_known = true;
  const auto text = prometheus_text(s);
  CHECK(has_line(text, R"(shellctl_http_requests_total{method="GET",route="/v1/jobs/{job_id}",status="404"} 3)"));
  CHECK(has_line(text, R"(shellctl_http_requests_total{method="GET",route="a\"b\\c\nd",status="200"} 1)"));
  CHECK(has_line(text, R"(shellctl_http_request_duration_seconds_bucket{method="POST",route="/v1/jobs/run",le="0.001"} 1)"));
  CHECK(has_line(text, R"(shellctl_http_request_duration_seconds_bucket{method="POST",route="/v1/jobs/run",le="0.5"} 2)"));
  CHECK(has_line(text, R"(shellctl_http_request_duration_seconds_bucket{method="POST",route="/v1/jobs/run",le="+Inf"} 3)"));
  CHECK(has_line(text, R"(shellctl_http_request_duration_seconds_count{method="POST",route="/v1/jobs/run"} 3)"));
  CHECK(has_line(text, R"(shellctl_http_request_duration_seconds_sum{method="POST",route="/v1/jobs/run"} 9.2005)"));
  CHECK(has_line(text, R"(shellctl_jobs{status="exited",mode="pty"} 5)"));
  CHECK(has_line(text, R"(shellctl_jobs{status="running",mode="stdio"} 2)"));
  CHECK(has_line(text, R"(shellctl_jobs{status="running",mode="pty"} 0)"));
}

TEST_CASE("a store that did not answer leaves the job gauge out instead of reporting zero jobs") {
  metrics_sample s;
  s.jobs_known = false;
  CHECK(prometheus_text(s).find("shellctl_jobs{") == std::string::npos);
}

TEST_CASE("a job's timeline: from admission, first time of each mark, reported once") {
  using clock = std::chrono::steady_clock;
  timeline_recorder rec;
  rec.mark(job_mark::files_written);  // before admission: not a timeline of this process
  CHECK(!rec.take());
  const auto t0 = clock::now();
  rec.admitted(t0);
  rec.mark(job_mark::session_created, t0 + std::chrono::milliseconds(3));
  rec.mark(job_mark::session_created, t0 + std::chrono::milliseconds(9));  // the first counts
  rec.mark(job_mark::done_answered, t0 + std::chrono::milliseconds(12));
  auto t = rec.take();
  REQUIRE(t);
  CHECK(!t->at[static_cast<int>(job_mark::files_written)]);
  CHECK(*t->at[static_cast<int>(job_mark::session_created)] == doctest::Approx(0.003));
  CHECK(*t->at[static_cast<int>(job_mark::done_answered)] == doctest::Approx(0.012));
  CHECK(!rec.take());  // once
  CHECK(mark_name(job_mark::pipe_ready) == "pipe_ready");
  CHECK(mark_name(job_mark::done_answered) == "done_answered");

  metrics_sample s;
  histogram h(latency_bounds());
  h.observe(0.003);
  s.job_timeline_seconds[{"pty", "session_created"}] = h;
  const auto text = prometheus_text(s);
  CHECK(text.find("# TYPE shellctl_job_timeline_seconds histogram") != std::string::npos);
  CHECK(text.find("shellctl_job_timeline_seconds_count{mode=\"pty\",mark=\"session_created\"} 1") !=
        std::string::npos);
}
