#pragma once
// The files of one job directory, S/jobs/<id> (docs/layout.md "The state directory"): what the
// server writes before a start, the markers the output pipe and the runner leave there, and the
// exit record. The server (job_actor), the runner and the pipe program all name them from here.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shellctl::io::fs {

namespace job_files {
inline constexpr const char* script = "script";
inline constexpr const char* env = ".job-env.json";
inline constexpr const char* output = "output.log";
inline constexpr const char* start_gate = "start-gate";       // the server lets the runner go
inline constexpr const char* pipe_ready = ".pipe-ready";      // the sanitizer is reading
inline constexpr const char* pipe_drained = ".pipe-drained";  // it read everything
inline constexpr const char* pipe_failed = ".pipe-failed";    // it stopped with an error
inline constexpr const char* pipe_end = ".pipe-end";          // it read the runner's end marker
// A native scope's job spent its output budget (io/native/worker/output_budget.hpp).
inline constexpr const char* output_overflow = ".output-overflow";
inline constexpr const char* pipe_errors = "pipe-error.log";
// A PTY job's unfinished last line (a prompt), as the sanitizer holds it while the pane is
// quiet: what an answer shows past the log while the job waits for its terminal.
inline constexpr const char* pending_line = ".pending-line";
inline constexpr const char* exit_code = "runner-exit-code";
// Ours: the signal that ended the job's main process (absent when it exited).
inline constexpr const char* exit_signal = "runner-exit-signal";
inline constexpr const char* ended_at = "runner-ended-at";
}  // namespace job_files

// The runner's exit record as found on disk.
struct exit_record {
  bool code_file = false;   // runner-exit-code holds something
  bool ended_file = false;  // runner-ended-at holds something
  std::optional<std::int64_t> code;  // the code, when it is a number
  std::string ended_at;
  bool unreadable = false;  // a read failed (not "missing"): no evidence either way
  bool complete() const { return code.has_value() && ended_file; }
};

class job_dir {
 public:
  explicit job_dir(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const;
  bool has(const char* name) const;

  // Before a start: the script, its environment (a JSON object) and an empty output log
  // at `output_log` (the row's output_path), all 0600. Throws std::system_error.
  void write_inputs(std::string_view script, std::string_view env_json,
                    const std::string& output_log) const;
  // Lets the runner go (it waits for this file). Throws std::system_error.
  void open_gate() const;
  exit_record read_exit_record() const;
  // .pipe-failed, on behalf of a sanitizer that died without writing a marker (the Go
  // pipe shell's step for a failed sanitizer, docs/jobs.md "The output pipe"). Throws
  // std::system_error.
  void mark_pipe_failed() const;
  // Removes a marker (missing is fine).
  void forget(const char* name) const;

 private:
  std::string path_;
};

}  // namespace shellctl::io::fs
