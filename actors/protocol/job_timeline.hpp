#pragma once
// Where a job's milliseconds go (issue: the job fast path): the moments of one job's life,
// as its job_actor sees them, each measured from its admission. A job admitted in this
// process reports them once, with its first answer that says done, to /metrics as
// shellctl_job_timeline_seconds{mode, mark}, so a benchmark can print each step's share.
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace shellctl::actors {

enum class job_mark : std::uint8_t {
  files_written,    // script, env and output path written into the job dir
  row_inserted,     // the store answered the insert ("created")
  starting_stored,  // ... and the "starting" transition
  watch_set,        // the job dir's inotify watch is in place
  session_created,  // tmux answered new-session (PTY: with pipe-pane): the pane's pid is known
  pipe_ready,       // PTY: the sanitizer's .pipe-ready appeared (the output pipe is up)
  gate_opened,      // the runner was let go: the script starts
  running_stored,   // the store answered "running" (the run's start is complete)
  exit_seen,        // the exit artifacts were read: the exit is being recorded
  exit_recorded,    // the store answered the exit
  output_final,     // the output can no longer grow (PTY: the pipe drained)
  done_answered,    // the first answer that says done was handed to its client's edge
};
inline constexpr std::size_t job_mark_count = 12;

constexpr std::string_view mark_name(job_mark m) {
  constexpr std::string_view names[job_mark_count] = {
      "files_written", "row_inserted",  "starting_stored", "watch_set",
      "session_created", "pipe_ready",  "gate_opened",     "running_stored",
      "exit_seen",     "exit_recorded", "output_final",    "done_answered"};
  return names[static_cast<std::uint8_t>(m)];
}

// Seconds from admission to each mark reached (nullopt: not reached, or not this job's kind).
struct job_timeline {
  std::array<std::optional<double>, job_mark_count> at{};
};

// The job actor's recorder: the first time of each mark counts.
class timeline_recorder {
 public:
  using clock = std::chrono::steady_clock;
  void admitted(clock::time_point t) { start_ = t; }
  bool admitted() const { return start_.has_value(); }
  void mark(job_mark m, clock::time_point now = clock::now()) {
    auto& slot = marks_.at[static_cast<std::uint8_t>(m)];
    if (start_ && !slot) slot = std::chrono::duration<double>(now - *start_).count();
  }
  // The timeline, once: later calls give nothing (a job reports one timeline).
  std::optional<job_timeline> take() {
    if (!start_ || reported_) return std::nullopt;
    reported_ = true;
    return marks_;
  }

 private:
  std::optional<clock::time_point> start_;
  job_timeline marks_;
  bool reported_ = false;
};

}  // namespace shellctl::actors
