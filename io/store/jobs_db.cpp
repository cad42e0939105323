#include "io/store/jobs_db.hpp"
#include "io/store/statement.hpp"

#include <string>

namespace shellctl::io::store {
namespace {

// The legacy (user_version 0) table; migration 1 appends `mode` (docs/layout.md "The database").
constexpr const char* create_table_sql = R"(CREATE TABLE IF NOT EXISTS jobs (
  job_id TEXT PRIMARY KEY,
  script_path TEXT NOT NULL,
  output_path TEXT NOT NULL,
  cwd TEXT NOT NULL,
  terminal_cols INTEGER NOT NULL DEFAULT 200,
  terminal_rows INTEGER NOT NULL DEFAULT 50,
  status TEXT NOT NULL DEFAULT 'created',
  session_name TEXT NOT NULL,
  pane_target TEXT NOT NULL,
  exit_code INTEGER,
  reason TEXT,
  message TEXT,
  created_at TEXT NOT NULL,
  started_at TEXT,
  ended_at TEXT,
  updated_at TEXT NOT NULL
))";

// Not part of the original's schema (which never reads it): the run keys (jobs_db.hpp).
constexpr const char* create_run_keys_sql = R"(CREATE TABLE IF NOT EXISTS run_idempotency (
  idempotency_key TEXT PRIMARY KEY,
  job_id TEXT NOT NULL,
  fields_sha256 TEXT NOT NULL
))";

constexpr const char* select_columns =
    "job_id, script_path, output_path, cwd, terminal_cols, terminal_rows, status, "
    "session_name, pane_target, exit_code, reason, message, created_at, started_at, "
    "ended_at, updated_at, mode";


job_row read_row(const statement& s) {
  job_row r;
  r.job_id = s.text(0);
  r.script_path = s.text(1);
  r.output_path = s.text(2);
  r.cwd = s.text(3);
  r.terminal_cols = s.int64(4);
  r.terminal_rows = s.int64(5);
  r.status = parse_status(s.text(6)).value_or(job_status::lost);
  r.session_name = s.text(7);
  r.pane_target = s.text(8);
  r.exit_code = s.opt_int64(9);
  r.reason = s.opt_text(10);
  r.message = s.opt_text(11);
  r.created_at = s.text(12);
  r.started_at = s.opt_text(13);
  r.ended_at = s.opt_text(14);
  r.updated_at = s.text(15);
  r.mode = parse_mode(s.text(16)).value_or(job_mode::pty);
  return r;
}

// "'created','starting','running'": the SQL spelling of a set of statuses, from the one
// table in job_status.hpp.
std::string sql_words(std::initializer_list<job_status> set) {
  std::string out;
  for (auto st : set) {
    if (!out.empty()) out += ',';
    out += '\'';
    out += status_text(st);
    out += '\'';
  }
  return out;
}

const std::string& live_sql() {
  static const std::string s =
      sql_words({job_status::created, job_status::starting, job_status::running});
  return s;
}

const std::string& terminal_sql() {
  static const std::string s = sql_words(
      {job_status::exited, job_status::terminated, job_status::failed, job_status::lost});
  return s;
}

}  // namespace

jobs_db::jobs_db(const std::string& path, int busy_timeout_ms, open_mode mode) {
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (mode == open_mode::create_schema) flags |= SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw db_error("open " + path + ": " + msg);
  }
  try {
    sqlite3_busy_timeout(db_, busy_timeout_ms);
    exec("PRAGMA journal_mode=WAL");
    // WAL + NORMAL never corrupts the file; it only lets a power cut lose the newest
    // commits, which recovery (D8) settles from the artifacts on disk anyway.
    exec("PRAGMA synchronous=NORMAL");
    if (mode == open_mode::create_schema) {
      statement v(db_, "PRAGMA user_version");
      v.step();
      std::int64_t version = v.int64(0);
      if (version > 1)
        throw db_error("database schema version " + std::to_string(version) +
                       " is newer than supported (1)");
      if (version == 0) {
        exec("BEGIN IMMEDIATE");
        try {
          exec(create_table_sql);
          // A legacy table may already have the column if a newer writer migrated it
          // without bumping user_version; only add what is missing.
          statement has(db_, "SELECT 1 FROM pragma_table_info('jobs') WHERE name='mode'");
          if (!has.step()) exec("ALTER TABLE jobs ADD COLUMN mode TEXT NOT NULL DEFAULT 'pty'");
          exec("PRAGMA user_version=1");
          exec("COMMIT");
        } catch (...) {
          sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
          throw;
        }
      }
      exec(create_run_keys_sql);
    }
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

jobs_db::~jobs_db() {
  if (db_) sqlite3_close(db_);
}

void jobs_db::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    const int code = sqlite3_extended_errcode(db_);
    sqlite3_free(err);
    throw db_error(msg, code);
  }
}

bool jobs_db::insert(const job_row& r, const std::optional<run_key>& key) {
  if (!key) return insert_row(db_, r);
  transaction t(db_);
  if (!insert_row(db_, r, key)) return false;
  t.commit();
  return true;
}

bool insert_row(sqlite3* db_, const job_row& r, const std::optional<run_key>& key) {
  statement s(db_,
              "INSERT INTO jobs (job_id, script_path, output_path, cwd, terminal_cols, "
              "terminal_rows, status, session_name, pane_target, exit_code, reason, message, "
              "created_at, started_at, ended_at, updated_at, mode) "
              "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, r.job_id);
  s.bind(2, r.script_path);
  s.bind(3, r.output_path);
  s.bind(4, r.cwd);
  s.bind(5, r.terminal_cols);
  s.bind(6, r.terminal_rows);
  s.bind(7, std::string(status_text(r.status)));
  s.bind(8, r.session_name);
  s.bind(9, r.pane_target);
  s.bind(10, r.exit_code);
  s.bind(11, r.reason);
  s.bind(12, r.message);
  s.bind(13, r.created_at);
  s.bind(14, r.started_at);
  s.bind(15, r.ended_at);
  s.bind(16, r.updated_at);
  s.bind(17, std::string(mode_text(r.mode)));
  int rc = s.step_rc();
  if ((rc & 0xff) == SQLITE_CONSTRAINT) return false;
  if (rc != SQLITE_DONE) throw db_error(sqlite3_errmsg(db_), sqlite3_extended_errcode(db_));
  if (key) {
    // REPLACE: a key whose job the original server deleted (it never reads this table)
    // answers for the new job now.
    statement k(db_, "INSERT OR REPLACE INTO run_idempotency (idempotency_key, job_id, fields_sha256) "
                     "VALUES (?,?,?)");
    k.bind(1, key->key);
    k.bind(2, r.job_id);
    k.bind(3, key->fields_sha256);
    k.step();
  }
  return true;
}

std::optional<job_row> jobs_db::get(const std::string& job_id) {
  statement s(db_, std::string("SELECT ") + select_columns + " FROM jobs WHERE job_id = ?");
  s.bind(1, job_id);
  if (!s.step()) return std::nullopt;
  return read_row(s);
}

std::vector<job_row> jobs_db::list_all() {
  statement s(db_, std::string("SELECT ") + select_columns +
                       " FROM jobs ORDER BY created_at DESC");
  std::vector<job_row> rows;
  while (s.step()) rows.push_back(read_row(s));
  return rows;
}

bool db_error::transient() const {
  switch (code & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_NOMEM:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PROTOCOL:
      return true;
    default:
      return false;
  }
}

std::optional<job_row> preview_apply(const job_row& row, const transition& t,
                                     const std::string& now) {
  bool allowed = false;
  for (const auto& a : t.allowed) allowed = allowed || a == row.status;
  if (!allowed || (t.require_exit_code_null && row.exit_code)) return std::nullopt;
  job_row r = row;
  r.status = t.target;
  r.updated_at = now;
  r.reason = t.reason;
  r.message = t.message;
  if ((t.target == job_status::starting || t.target == job_status::running) && !r.started_at)
    r.started_at = now;
  if (is_terminal(t.target)) {
    if (!r.ended_at) r.ended_at = t.ended_at.value_or(now);
    if (!r.exit_code) r.exit_code = 0;
  }
  return r;
}

std::optional<job_row> preview_record_exit(const job_row& row, std::int64_t code,
                                           const std::string& ended_at) {
  if (is_terminal(row.status)) return std::nullopt;
  job_row r = row;
  r.status = job_status::exited;
  r.exit_code = code;
  if (!r.ended_at) r.ended_at = ended_at;
  r.updated_at = ended_at;
  r.reason.reset();
  r.message.reset();
  return r;
}

bool jobs_db::apply(const std::string& job_id, const transition& t, const std::string& now) {
  // One UPDATE ... WHERE status IN (...) is the compare-and-swap.
  bool terminal = is_terminal(t.target);
  bool starts = t.target == job_status::starting || t.target == job_status::running;
  std::string sql = "UPDATE jobs SET status = ?1, updated_at = ?2, reason = ?3, message = ?4";
  if (starts) sql += ", started_at = COALESCE(started_at, ?2)";
  if (terminal) sql += ", ended_at = COALESCE(ended_at, ?5), exit_code = COALESCE(exit_code, 0)";
  sql += " WHERE job_id = ?6 AND status IN (";
  for (size_t i = 0; i < t.allowed.size(); ++i) sql += i ? ",?" + std::to_string(7 + i) : "?" + std::to_string(7 + i);
  if (t.allowed.empty()) sql += "NULL";
  sql += ")";
  if (t.require_exit_code_null) sql += " AND exit_code IS NULL";
  statement s(db_, sql);
  s.bind(1, std::string(status_text(t.target)));
  s.bind(2, now);
  s.bind(3, t.reason);
  s.bind(4, t.message);
  s.bind(5, t.ended_at.value_or(now));
  s.bind(6, job_id);
  for (size_t i = 0; i < t.allowed.size(); ++i)
    s.bind(static_cast<int>(7 + i), std::string(status_text(t.allowed[i])));
  s.step();
  return sqlite3_changes(db_) > 0;
}

record_result jobs_db::record_exit_server(const std::string& job_id, std::int64_t code,
                                          const std::string& ended_at) {
  auto row = get(job_id);
  if (!row) return record_result::not_found;
  if (is_terminal(row->status)) return record_result::already_terminal;
  statement s(db_,
              "UPDATE jobs SET status = " + sql_words({job_status::exited}) + ", exit_code = ?1, "
              "ended_at = COALESCE(ended_at, ?2), updated_at = ?2, reason = NULL, "
              "message = NULL WHERE job_id = ?3 AND status IN (" + live_sql() + ")");
  s.bind(1, code);
  s.bind(2, ended_at);
  s.bind(3, job_id);
  s.step();
  if (sqlite3_changes(db_) > 0) return record_result::recorded;
  // Lost the race to another recorder: the row is terminal now, or gone.
  return get(job_id) ? record_result::already_terminal : record_result::not_found;
}

record_result jobs_db::record_exit_helper(const std::string& job_id, std::int64_t code,
                                          const std::string& ended_at) {
  auto row = get(job_id);
  if (!row) return record_result::not_found;
  if (is_terminal(row->status)) return record_result::already_terminal;
  // The original helper guards every column with CASE instead of the WHERE clause, so a
  // row that turned terminal in between keeps its values (first recorder wins).
  const std::string live = "CASE WHEN status IN (" + live_sql() + ") THEN ";
  statement s(db_, "UPDATE jobs SET exit_code = " + live + "?1 ELSE exit_code END, " +
                       "ended_at = " + live + "?2 ELSE ended_at END, " +
                       "updated_at = " + live + "?2 ELSE updated_at END, " +
                       "reason = " + live + "NULL ELSE reason END, " +
                       "message = " + live + "NULL ELSE message END, " +
                       "status = " + live + sql_words({job_status::exited}) + " ELSE status END WHERE job_id = ?3");
  s.bind(1, code);
  s.bind(2, ended_at);
  s.bind(3, job_id);
  s.step();
  if (sqlite3_changes(db_) == 0) return record_result::not_found;
  return record_result::recorded;
}

std::vector<std::string> jobs_db::expired_ids(const std::string& cutoff) {
  // The timestamp form sorts lexically, so the comparison can stay in SQL; the length
  // check skips rows whose ended_at is not in that form (they never expire, like Go).
  statement s(db_,
              "SELECT job_id FROM jobs WHERE status IN (" + terminal_sql() +
                  ") AND ended_at IS NOT NULL AND length(ended_at) = 20 AND ended_at <= ?");
  s.bind(1, cutoff);
  std::vector<std::string> ids;
  while (s.step()) ids.push_back(s.text(0));
  return ids;
}

bool jobs_db::remove(const std::string& job_id) {
  transaction t(db_);
  statement s(db_, "DELETE FROM jobs WHERE job_id = ?");
  s.bind(1, job_id);
  s.step();
  const bool removed = sqlite3_changes(db_) > 0;
  statement k(db_, "DELETE FROM run_idempotency WHERE job_id = ?");
  k.bind(1, job_id);
  k.step();
  t.commit();
  return removed;
}

std::vector<run_key> jobs_db::run_keys() {
  exec("DELETE FROM run_idempotency WHERE job_id NOT IN (SELECT job_id FROM jobs)");
  statement s(db_, "SELECT idempotency_key, job_id, fields_sha256 FROM run_idempotency");
  std::vector<run_key> keys;
  while (s.step()) keys.push_back({s.text(0), s.text(1), s.text(2)});
  return keys;
}

std::vector<jobs_db::status_mode_count> jobs_db::count_by_status_mode() {
  statement s(db_, "SELECT status, mode, count(*) FROM jobs GROUP BY status, mode");
  std::vector<status_mode_count> out;
  while (s.step()) out.push_back({s.text(0), s.text(1), static_cast<std::uint64_t>(s.int64(2))});
  return out;
}

}  // namespace shellctl::io::store
