#pragma once
// One RAII prepared statement over a SQLite connection, shared by the jobs table
// (jobs_db.cpp) and the native supervisor's catalogs (io/native): binds, steps, reads
// columns, and throws db_error with SQLite's message on any failure. Also the statement
// runner and the write transaction those share.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

#include "io/store/jobs_db.hpp"  // db_error

namespace shellctl::io::store {

class statement {
 public:
  statement(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
      throw db_error(sqlite3_errmsg(db), sqlite3_extended_errcode(db));
  }
  ~statement() { sqlite3_finalize(stmt_); }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  void bind(int i, const std::string& v) {
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  void bind(int i, const std::optional<std::string>& v) {
    if (v)
      bind(i, *v);
    else
      check(sqlite3_bind_null(stmt_, i));
  }
  void bind(int i, std::int64_t v) { check(sqlite3_bind_int64(stmt_, i, v)); }
  void bind(int i, const std::optional<std::int64_t>& v) {
    if (v)
      bind(i, *v);
    else
      check(sqlite3_bind_null(stmt_, i));
  }
  // True while a row is available.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw db_error(sqlite3_errmsg(db_), sqlite3_extended_errcode(db_));
  }
  int step_rc() { return sqlite3_step(stmt_); }
  std::string text(int col) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col))) : "";
  }
  std::optional<std::string> opt_text(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return text(col);
  }
  std::int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::optional<std::int64_t> opt_int64(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return int64(col);
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw db_error(sqlite3_errmsg(db_), sqlite3_extended_errcode(db_));
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// sqlite3_exec that throws db_error with SQLite's message.
inline void run_sql(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string what = err ? err : "sqlite error";
    sqlite3_free(err);
    throw db_error(what, sqlite3_extended_errcode(db));
  }
}

// Opens (creating) a catalog that must be durable commit by commit (the native supervisor's
// and a scope worker's): WAL, synchronous=FULL on this connection, `busy_ms` of patience
// for other writers. Throws db_error; nothing is left open then.
inline sqlite3* open_full_sync(const std::string& path, int busy_ms) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string what = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw db_error("open " + path + ": " + what);
  }
  try {
    sqlite3_busy_timeout(db, busy_ms);
    run_sql(db, "PRAGMA journal_mode=WAL");
    run_sql(db, "PRAGMA synchronous=FULL");
  } catch (...) {
    sqlite3_close(db);
    throw;
  }
  return db;
}

// A write transaction (BEGIN IMMEDIATE: the write lock is taken at once, so two writers
// queue on the busy timeout instead of failing at their first write) that rolls back
// unless committed.
class transaction {
 public:
  explicit transaction(sqlite3* db) : db_(db) { run_sql(db_, "BEGIN IMMEDIATE"); }
  ~transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;
  void commit() {
    run_sql(db_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  bool done_ = false;
};

}  // namespace shellctl::io::store
