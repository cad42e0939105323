// io/store/jobs_db against real SQLite files: schema, migration and the CAS rules of
// docs/layout.md "The database".
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "io/store/jobs_db.hpp"

using namespace shellctl::io::store;

namespace {
struct temp_db {
  std::string dir;
  std::string path;
  temp_db() {
    char tmpl[] = "/tmp/shellctl-store-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/shellctl.db";
  }
  ~temp_db() { std::system(("rm -rf '" + dir + "'").c_str()); }
};

job_row make_row(const std::string& id) {
  job_row r;
  r.job_id = id;
  r.script_path = "jobs/" + id + "/script";
  r.output_path = "jobs/" + id + "/output.log";
  r.cwd = "/tmp";
  r.session_name = "shellctl-" + id;
  r.pane_target = "shellctl-" + id + ":0.0";
  r.created_at = "2026-08-04T10:00:00Z";
  r.updated_at = r.created_at;
  return r;
}

const std::vector<job_status> live = {job_status::created, job_status::starting,
                                      job_status::running};

long user_version(const std::string& path) {
  sqlite3* db;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* s;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, nullptr);
  sqlite3_step(s);
  long v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

void exec(const std::string& path, const char* sql) {
  sqlite3* db;
  sqlite3_open(path.c_str(), &db);
  REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}
}  // namespace

TEST_CASE("a new database gets the schema at user_version 1, mode last") {
  temp_db t;
  { jobs_db db(t.path, 5000, jobs_db::open_mode::create_schema); }
  CHECK(user_version(t.path) == 1);
  sqlite3* db;
  sqlite3_open(t.path.c_str(), &db);
  sqlite3_stmt* s;
  sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info('jobs') ORDER BY cid DESC LIMIT 1",
                     -1, &s, nullptr);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "mode");
  sqlite3_finalize(s);
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, nullptr);
  sqlite3_step(s);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "wal");
  sqlite3_finalize(s);
  sqlite3_close(db);
}

TEST_CASE("a legacy database is migrated and its rows become pty") {
  temp_db t;
  exec(t.path,
       "CREATE TABLE jobs (job_id TEXT PRIMARY KEY, script_path TEXT NOT NULL, output_path TEXT "
       "NOT NULL, cwd TEXT NOT NULL, terminal_cols INTEGER NOT NULL DEFAULT 200, terminal_rows "
       "INTEGER NOT NULL DEFAULT 50, status TEXT NOT NULL DEFAULT 'created', session_name TEXT "
       "NOT NULL, pane_target TEXT NOT NULL, exit_code INTEGER, reason TEXT, message TEXT, "
       "created_at TEXT NOT NULL, started_at TEXT, ended_at TEXT, updated_at TEXT NOT NULL);"
       "INSERT INTO jobs (job_id, script_path, output_path, cwd, session_name, pane_target, "
       "created_at, updated_at) VALUES ('old', 's', 'o', '/', 'shellctl-old', 'x', "
       "'2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');");
  jobs_db db(t.path, 5000, jobs_db::open_mode::create_schema);
  CHECK(user_version(t.path) == 1);
  auto row = db.get("old");
  REQUIRE(row);
  CHECK(row->mode == job_mode::pty);
}

TEST_CASE("a newer schema refuses to open and creates nothing") {
  temp_db t;
  exec(t.path, "PRAGMA user_version = 2");
  CHECK_THROWS_AS(jobs_db(t.path, 5000, jobs_db::open_mode::create_schema), db_error);
}

TEST_CASE("runner-exit mode needs an existing file") {
  temp_db t;
  CHECK_THROWS_AS(jobs_db(t.path, 5000, jobs_db::open_mode::existing), db_error);
  CHECK(access(t.path.c_str(), F_OK) != 0);
}

TEST_CASE("insert reports duplicates instead of failing") {
  temp_db t;
  jobs_db db(t.path, 5000, jobs_db::open_mode::create_schema);
  CHECK(db.insert(make_row("a")));
  CHECK_FALSE(db.insert(make_row("a")));
}

TEST_CASE("transitions are compare-and-swap with the column defaults (docs/layout.md \"The database\")") {
  temp_db t;
  jobs_db db(t.path, 5000, jobs_db::open_mode::create_schema);
  db.insert(make_row("a"));
  CHECK(db.apply("a", transition{job_status::starting, {job_status::created}, {}, {}, {}, false},
                 "2026-08-04T10:00:01Z"));
  auto r = db.get("a");
  CHECK(r->status == job_status::starting);
  CHECK(r->started_at == std::optional<std::string>("2026-08-04T10:00:01Z"));
  // The CAS fails from a status that is not allowed; nothing changes.
  CHECK_FALSE(db.apply("a", transition{job_status::running, {job_status::created}, {}, {}, {}, false},
                       "2026-08-04T10:00:02Z"));
  CHECK(db.get("a")->status == job_status::starting);
  // started_at is set only once.
  CHECK(db.apply("a", transition{job_status::running, {job_status::starting}, {}, {}, {}, true},
                 "2026-08-04T10:00:03Z"));
  CHECK(db.get("a")->started_at == std::optional<std::string>("2026-08-04T10:00:01Z"));
  // A terminal target fills ended_at and a missing exit code with 0, sets reason/message.
  CHECK(db.apply("a", transition{job_status::lost, live, std::string("tmux_session_missing"),
                                 std::string("gone"), {}, false},
                 "2026-08-04T10:00:04Z"));
  r = db.get("a");
  CHECK(r->status == job_status::lost);
  CHECK(r->exit_code == std::optional<std::int64_t>(0));
  CHECK(r->ended_at == std::optional<std::string>("2026-08-04T10:00:04Z"));
  CHECK(r->reason == std::optional<std::string>("tmux_session_missing"));
  // Terminal rows are not moved by live-only transitions.
  CHECK_FALSE(db.apply("a", transition{job_status::exited, live, {}, {}, {}, false}, "2026-08-04T10:00:05Z"));
}

TEST_CASE("require_exit_code_null guards the running transition") {
  temp_db t;
  jobs_db db(t.path, 5000, jobs_db::open_mode::create_schema);
  auto row = make_row("a");
  row.status = job_status::starting;
  row.exit_code = 3;
  db.insert(row);
  CHECK_FALSE(db.apply("a", transition{job_status::running, {job_status::starting}, {}, {}, {}, true}, "x"));
}

TEST_CASE("server and helper exit recording: first recorder wins") {
  temp_db t;
  jobs_db db(t.path, 5000, jobs_db::open_mode::create_schema);
  db.insert(make_row("a"));
  CHECK(db.record_exit_server("a", 17, "2026-08-04T10:00:09Z") == record_result::recorded);
  auto r = db.get("a");
  CHECK(r->status == job_status::exited);
  CHECK(r->exit_code == std::optional<std::int64_t>(17));
  CHECK(r->ended_at == std::optional<std::string>("2026-08-04T10:00:09Z"));
  CHECK(r->updated_at == "2026-08-04T10:00:09Z");
  CHECK(db.record_exit_helper("a", 99, "2026-08-04T11:00:00Z") == record_result::already_terminal);
  CHECK(db.get("a")->exit_code == std::optional<std::int64_t>(17));
  CHECK(db.record_exit_helper("zzz", 1, "x") == record_result::not_found);
  CHECK(db.record_exit_server("zzz", 1, "x") == record_result::not_found);
}

TEST_CASE("the helper overwrites ended_at, the server keeps an existing one") {
  temp_db t;
  jobs_db db(t.path, 5000, jobs_db::open_mode::create_schema);
  auto row = make_row("a");
  row.status = job_status::running;
  row.ended_at = "2026-08-04T09:00:00Z";
  db.insert(row);
  row.job_id = "b";
  db.insert(row);
  db.record_exit_helper("a", 0, "2026-08-04T10:00:00Z");
  db.record_exit_server("b", 0, "2026-08-04T10:00:00Z");
  CHECK(db.get("a")->ended_at == std::optional<std::string>("2026-08-04T10:00:00Z"));
  CHECK(db.get("b")->ended_at == std::optional<std::string>("2026-08-04T09:00:00Z"));
}

TEST_CASE("expired_ids selects only terminal rows past the cutoff") {
  temp_db t;
  jobs_db db(t.path, 5000, jobs_db::open_mode::create_schema);
  auto add = [&](std::string id, job_status status, std::optional<std::string> ended) {
    auto r = make_row(id);
    r.status = status;
    r.ended_at = ended;
    db.insert(r);
  };
  add("old_exit", job_status::exited, "2026-08-04T10:00:00Z");
  add("new_exit", job_status::exited, "2026-08-04T12:00:00Z");
  add("running", job_status::running, "2026-08-04T09:00:00Z");
  add("no_end", job_status::lost, std::nullopt);
  add("garbage", job_status::failed, "yesterday");
  auto ids = db.expired_ids("2026-08-04T11:00:00Z");
  REQUIRE(ids.size() == 1);
  CHECK(ids[0] == "old_exit");
  CHECK(db.remove("old_exit"));
  CHECK_FALSE(db.remove("old_exit"));
  CHECK(db.list_all().size() == 4);
}

TEST_CASE("statuses and modes: one spelling each, read back as written") {
  for (auto st : {job_status::created, job_status::starting, job_status::running,
                  job_status::exited, job_status::terminated, job_status::failed,
                  job_status::lost})
    CHECK(parse_status(status_text(st)) == st);
  CHECK(status_text(job_status::terminated) == "terminated");
  CHECK_FALSE(parse_status("Running"));
  CHECK_FALSE(parse_status(""));
  CHECK(is_terminal(job_status::exited));
  CHECK_FALSE(is_terminal(job_status::running));
  CHECK(parse_mode("stdio") == job_mode::stdio);
  CHECK(parse_mode("pty") == job_mode::pty);
  CHECK_FALSE(parse_mode("tty"));

  temp_db t;
  jobs_db db(t.path, 5000, jobs_db::open_mode::create_schema);
  auto r = make_row("a");
  r.mode = job_mode::stdio;
  r.status = job_status::terminated;
  REQUIRE(db.insert(r));
  CHECK(db.get("a")->status == job_status::terminated);
  CHECK(db.get("a")->mode == job_mode::stdio);
  // The words in the file are the table's (what the Go server and its helpers read).
  sqlite3* raw;
  sqlite3_open(t.path.c_str(), &raw);
  sqlite3_stmt* s;
  sqlite3_prepare_v2(raw, "SELECT status, mode FROM jobs WHERE job_id = 'a'", -1, &s, nullptr);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "terminated");
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 1))) == "stdio");
  sqlite3_finalize(s);
  sqlite3_close(raw);
  // A word no status has (written by something else) reads as lost; an unknown mode as pty.
  exec(t.path, "UPDATE jobs SET status = 'paused', mode = 'tty' WHERE job_id = 'a'");
  CHECK(db.get("a")->status == job_status::lost);
  CHECK(db.get("a")->mode == job_mode::pty);
}
