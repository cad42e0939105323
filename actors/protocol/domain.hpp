#pragma once
// What actors answer: domain values and domain errors, never HTTP. The one mapping to
// status codes and JSON bodies is at the edge (actors/edge/api_edge.cpp, io/json views).
//
// Errors are `caf::error`s of the category `error_category` with a `job_errc` code and a
// human-readable text as context, so that CAF's request/response error path carries them
// from the actor that decided to the edge unchanged.
#include <caf/all.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/fs/file_ops.hpp"
#include "io/store/jobs_db.hpp"
#include "io/text/output_window.hpp"

namespace shellctl::actors {

using io::store::job_row;

// Every way a request can fail, named by its meaning. The edge maps each to the status
// and the error code of the API (docs/api.md "Errors"); `code_text` is that code.
enum class job_errc : std::uint8_t {
  invalid_request = 1,   // 400: the body or query is malformed
  validation_error,      // 422: well-formed, but a value is not acceptable
  invalid_cwd,           // 400
  invalid_offset,        // 400: offset beyond the current output size
  job_not_found,         // 404
  job_running,           // 409: delete without force of a live job
  job_not_running,       // 409: input to a terminal job
  input_unsupported,     // 409: input to a stdio job
  resize_unsupported,    // 409: resize of a stdio job (docs/api.md "Job control")
  tmux_target_missing,   // 409: the pane is gone, the job not yet terminal
  tmux_input_failed,     // 500
  job_id_collision,      // 500
  tmux_unavailable,      // 503: tmux did not answer in time
  storage_unavailable,   // 503: the database cannot be written now
  unavailable,           // 503: shutting down, or the job was removed meanwhile
  snapshot_busy,         // 409: another snapshot save or restore runs
  home_unavailable,      // 500: $HOME unset, missing or not a directory
  snapshot_failed,       // 500: a save failed before its first byte
  archive_malformed,     // 400: a restore's stream is not an acceptable tar+zstd archive
  restore_failed,        // 500: a restore failed for the machine's reasons (space, I/O, time)
  // The file API (docs/api.md "Files").
  invalid_path,          // 400: empty, NUL, not UTF-8, over 4096 bytes
  path_denied,           // 403: outside every root, in the state dir, escaping through a symlink
  file_not_found,        // 404
  not_a_directory,       // 409
  is_a_directory,        // 409
  file_exists,           // 409
  directory_not_empty,   // 409
  range_not_satisfiable, // 416
  file_io_failed,        // 500: disk full, permissions, I/O (the OS error)
  // A native scope's worker (docs/native-scopes.md "The scope worker"): admission refused by
  // its budgets.
  job_capacity_exhausted,  // 409: the scope admitted max_jobs jobs in its lifetime
  input_budget_exhausted,  // 409: the script and env (or /input's text) exceed input_bytes
  internal_error,        // 500 (last: the table's fallback)
};

// The CAF error category of job_errc (atoms have at most 10 characters).
inline constexpr caf::atom_value error_category = caf::atom("shellctl");

caf::error make_job_error(job_errc code, std::string text);
// Whether `e` is the job error `code`.
bool is_job_error(const caf::error& e, job_errc code);

// The text an error carries (ours: the context given to make_*_error; CAF's: its
// rendering), for a log line or a client's message.
std::string error_text(const caf::error& e);
// The code and text of an error made by make_job_error; other errors (CAF's own: timeouts,
// a receiver that is down) come back as internal_error with CAF's rendering.
struct job_error_view {
  job_errc code;
  std::string text;
};
job_error_view read_job_error(const caf::error& e);
std::string_view code_text(job_errc code);
int http_status(job_errc code);

// A result window: the row as answers may show it, and the output read for the request.
struct job_result {
  job_row row;
  std::string output_path;  // absolute
  io::text::output_window window;
};

// A status answer: the row as answers may show it and the output size.
struct job_status_view {
  job_row row;
  std::uint64_t offset = 0;
};

// GET /v1/jobs/{id}/activity (docs/api.md "Job control").
struct job_activity {
  job_row row;
  std::uint64_t offset = 0;
  bool waiting_for_input = false;
  double idle_seconds = 0;  // since the last output byte (the log's modification time)
  struct foreground_process {
    long pid = 0;  // as the job sees it
    std::string command;
  };
  std::optional<foreground_process> foreground;  // PTY jobs that run
  struct terminal_size {
    std::int64_t cols = 0, rows = 0;
  };
  std::optional<terminal_size> terminal;  // PTY jobs that run: the pane's size in tmux
  std::size_t processes = 0;              // live processes of the job
  // Why a finished job ended (docs/api.md "Job control": `ended`); none while it runs.
  struct end_reason {
    std::string by;  // exit, signal, limit, oom, terminate, deadline, failed, lost
    int signal = 0;  // the signal that ended its main process, when one did
    // The limits the kernel held it to (memory_bytes: memory.max reached; pids: a fork
    // refused; cpu: throttled), whatever ended it.
    std::vector<std::string> limits_hit;
  };
  std::optional<end_reason> ended;
};

struct job_deleted {
  std::string job_id;
};

// GET /v1/jobs/{id}/stream: the stream is open; its job_stream actor writes the answer.
struct stream_opened {};

// One row of GET /v1/jobs.
struct job_info {
  std::string job_id;
  io::store::job_status status;
  std::string created_at;
  std::optional<std::string> started_at;
  std::optional<std::string> ended_at;
};

struct job_list {
  std::vector<job_info> jobs;
};

// A snapshot save that ended well: its trailers say so. A failure is an error
// (snapshot_failed, home_unavailable): before the first byte the client gets it as the
// answer, after it the stream is cut (no clean end, no ok trailer).
struct snapshot_saved {
  std::uint64_t bytes = 0;   // compressed bytes sent
  std::string sha256_hex;    // of exactly those bytes
};

struct snapshot_restored {
  std::int64_t entries = 0;
  std::int64_t bytes_written = 0;
};

// The file API's answers (docs/api.md "Files"), as io/fs has them.
using file_stat = io::fs::stat_result;     // GET /v1/files/stat
using file_listing = io::fs::listing;      // GET /v1/files/list
// mkdir, move (the path now) and DELETE (deleted = true).
struct file_done {
  std::string path;
  bool deleted = false;
};
// GET /v1/files/content: the file is open (its op holds the descriptor) and this is what
// it is; the edge picks the range and writes the head, then tells the op to send.
struct file_opened {
  std::string path;
  io::fs::entry_meta meta;
};
// PUT /v1/files/content: the upload is renamed over its target.
struct file_written {
  std::string path;
  std::uint64_t size = 0;
  std::string sha256_hex;
};

// GET /v1/ports: a TCP port on which a process of a job listens, and its job.
struct job_port {
  std::string job_id;
  std::string address;  // the bound address (0.0.0.0, ::, 127.0.0.1 ...)
  std::uint16_t port = 0;
  bool ipv6 = false;
};
struct job_ports {
  std::vector<job_port> ports;  // by port, then family and address
};

// One answer to one request, held by an actor until it can be given. Copies share it and
// the first ok()/fail() delivers: an answer guarded by a deadline and also owed by a
// continuation reaches its client once. Wraps CAF's response promise, so the answer travels
// CAF's request/response path (including its error path) back to the requester.
class held_answer {
 public:
  held_answer() = default;
  explicit held_answer(caf::response_promise rp) : box_(std::make_shared<promise_box>(std::move(rp))) {}
  bool pending() const { return box_ && box_->rp.pending(); }
  void fail(job_errc code, std::string text) const {
    if (pending()) box_->rp.deliver(make_job_error(code, std::move(text)));
  }
  // What a request handler returns when it answers later.
  const caf::response_promise& promise() const { return box_->rp; }

 protected:
  // The last copy of an answer that was never given answers internal_error: a request is
  // never left without an answer (an actor that ends, a path that forgets it), whatever
  // the bound the edge keeps.
  struct promise_box {
    explicit promise_box(caf::response_promise p) : rp(std::move(p)) {}
    promise_box(const promise_box&) = delete;
    promise_box& operator=(const promise_box&) = delete;
    ~promise_box() {
      if (rp.pending())
        rp.deliver(make_job_error(job_errc::internal_error, "the request was dropped without an answer"));
    }
    caf::response_promise rp;
  };
  std::shared_ptr<promise_box> box_;
};

template <class T>
class answer : public held_answer {
 public:
  answer() = default;
  explicit answer(caf::typed_response_promise<T> rp)
      : held_answer(static_cast<caf::response_promise>(rp)) {}
  void ok(T value) const {
    if (pending()) box_->rp.deliver(std::move(value));
  }
};

// Makes the typed answer for the request being handled.
template <class T, class Self>
answer<T> answer_later(Self* self) {
  return answer<T>(self->template make_response_promise<T>());
}

}  // namespace shellctl::actors

// Local values only: they never cross a process boundary, so CAF needs no serializer.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_status_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_deleted)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_activity)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_info)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_list)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::snapshot_saved)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::snapshot_restored)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::io::fs::stat_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::io::fs::listing)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_ports)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_done)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_opened)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_written)
