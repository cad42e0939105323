#pragma once
// The jobs table in <state>/shellctl.db (docs/layout.md "The database"): schema, migration and the
// compare-and-swap status transitions. Used by the job_store actor (the server's one
// connection) and by shellctl-runner-exit (its own short-lived connection).
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/store/job_status.hpp"

namespace shellctl::io::store {

struct db_error : std::runtime_error {
  explicit db_error(const std::string& what, int sqlite_code = 0)
      : std::runtime_error(what), code(sqlite_code) {}
  int code;  // SQLite's (extended) result code; 0 when not from SQLite
  // A condition that goes away by itself (disk full, I/O error, busy, out of memory): the
  // write is worth retrying as it is.
  bool transient() const;
};

struct job_row {
  std::string job_id;
  std::string script_path;  // relative to the state dir: jobs/<id>/script
  std::string output_path;  // relative to the state dir: jobs/<id>/output.log
  std::string cwd;
  std::int64_t terminal_cols = 200;
  std::int64_t terminal_rows = 50;
  // A status word the table does not know (a row written by something else) reads as
  // lost: nothing this server knows of accounts for the job.
  job_status status = job_status::created;
  std::string session_name;
  std::string pane_target;
  std::optional<std::int64_t> exit_code;
  std::optional<std::string> reason;
  std::optional<std::string> message;
  std::string created_at;
  std::optional<std::string> started_at;
  std::optional<std::string> ended_at;
  std::string updated_at;
  job_mode mode = job_mode::pty;  // an unknown word reads as pty, the column's default
};

// A generic CAS transition (docs/layout.md "The database").
struct transition {
  job_status target;
  std::vector<job_status> allowed;
  std::optional<std::string> reason;
  std::optional<std::string> message;
  std::optional<std::string> ended_at;  // terminal targets: used when ended_at IS NULL
  bool require_exit_code_null = false;
};

enum class record_result { recorded, already_terminal, not_found };

// An Idempotency-Key of POST /v1/jobs/run (docs/api.md "Safe retries") and what it answers
// for: the job its first request started and the SHA-256 (hex) of that request's job
// fields (actors/edge/requests.cpp, job_fields_digest).
// Kept in the table run_idempotency beside `jobs`, which the original server never reads:
// a key lives exactly as long as its job's row.
struct run_key {
  std::string key;
  std::string job_id;
  std::string fields_sha256;
};

// What jobs_db::apply / record_exit_server would make of `row`, computed in memory by the
// same rules (nullopt: the compare-and-swap would not match). Lets a job show what it
// knows while a failing write is retried.
std::optional<job_row> preview_apply(const job_row& row, const transition& t,
                                     const std::string& now);
std::optional<job_row> preview_record_exit(const job_row& row, std::int64_t code,
                                           const std::string& ended_at);

// INSERT of `row` on `db` (jobs_db::insert, and a native scope's admission, which inserts
// in the same transaction as its charges), with its run key when the request had one (the
// caller's transaction holds both). False on a duplicate job_id.
bool insert_row(sqlite3* db, const job_row& row, const std::optional<run_key>& key = {});

class jobs_db {
 public:
  enum class open_mode {
    create_schema,  // server: create/migrate the schema (refuses user_version > 1)
    existing,       // runner-exit: the file and schema must exist
  };
  jobs_db(const std::string& path, int busy_timeout_ms, open_mode mode);
  ~jobs_db();
  jobs_db(const jobs_db&) = delete;
  jobs_db& operator=(const jobs_db&) = delete;

  // False on a duplicate job_id. The row and its key, if any, in one transaction.
  bool insert(const job_row& row, const std::optional<run_key>& key = {});
  std::optional<job_row> get(const std::string& job_id);
  // Every row, newest first (ORDER BY created_at DESC).
  std::vector<job_row> list_all();
  // True when a row changed. `now` is the timestamp used for updated_at and defaults.
  bool apply(const std::string& job_id, const transition& t, const std::string& now);
  // Runner-exit recording as the server does it (ended_at only if NULL).
  record_result record_exit_server(const std::string& job_id, std::int64_t code,
                                   const std::string& ended_at);
  // Runner-exit recording as shellctl-runner-exit does it (ended_at overwritten).
  record_result record_exit_helper(const std::string& job_id, std::int64_t code,
                                   const std::string& ended_at);
  // Terminal jobs whose ended_at (a valid timestamp) is <= cutoff: retention's victims.
  std::vector<std::string> expired_ids(const std::string& cutoff);
  // True when a row was deleted (its run key goes with it, in the same transaction).
  bool remove(const std::string& job_id);
  // Every run key whose job has a row; keys left without one (the original server, or a
  // crash, removed the row alone) are dropped first.
  std::vector<run_key> run_keys();
  // How many rows there are per (status, mode), as the columns spell them (/metrics).
  struct status_mode_count {
    std::string status;
    std::string mode;
    std::uint64_t n = 0;
  };
  std::vector<status_mode_count> count_by_status_mode();

 private:
  sqlite3* db_ = nullptr;
  void exec(const char* sql);
};

}  // namespace shellctl::io::store
