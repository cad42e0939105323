#include "io/native/worker/worker_budget.hpp"

#include <algorithm>

#include "io/store/statement.hpp"

namespace shellctl::io::native {
namespace {

using store::run_sql;
using store::statement;
using store::transaction;

constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS native_identity(
  scope_id TEXT NOT NULL, generation INTEGER NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS native_budget(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  input_limit INTEGER NOT NULL, input_used INTEGER NOT NULL,
  output_limit INTEGER NOT NULL, output_used INTEGER NOT NULL,
  jobs_limit INTEGER NOT NULL, jobs_admitted INTEGER NOT NULL);
)";

std::int64_t i64(std::uint64_t v) { return static_cast<std::int64_t>(v); }

// One CAS charge on the budget row; true when it changed (the charge fits).
bool charge(sqlite3* db, const char* sql, std::uint64_t n) {
  statement s(db, sql);
  s.bind(1, i64(n));
  s.step();
  return sqlite3_changes(db) == 1;
}

constexpr const char* kChargeJob =
    "UPDATE native_budget SET jobs_admitted = jobs_admitted + ?1 "
    "WHERE id = 1 AND jobs_admitted + ?1 <= jobs_limit";
constexpr const char* kChargeInput =
    "UPDATE native_budget SET input_used = input_used + ?1 "
    "WHERE id = 1 AND input_used + ?1 <= input_limit";

}  // namespace

worker_budget::worker_budget(const std::string& path)
    // FULL on every connection: a charge is durable before the bytes it pays for exist.
    : db_(store::open_full_sync(path, 10000)) {
  try {
    run_sql(db_, kSchema);
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

worker_budget::~worker_budget() { sqlite3_close(db_); }

bool worker_budget::synchronous_full() {
  statement s(db_, "PRAGMA synchronous");
  return s.step() && s.int64(0) == 2;
}

void worker_budget::init(const scope_identity& id, const budget_limits& limits) {
  transaction t(db_);
  if (auto known = identity()) {
    if (known->scope_id != id.scope_id || known->generation != id.generation)
      throw worker_budget_error("this spool belongs to scope " + known->scope_id + " generation " +
                                std::to_string(known->generation));
    return;  // a restarted worker: the counters stand
  }
  {
    statement s(db_, "INSERT INTO native_identity(scope_id, generation, created_at) VALUES(?,?,?)");
    s.bind(1, id.scope_id);
    s.bind(2, i64(id.generation));
    s.bind(3, id.created_at);
    s.step();
  }
  {
    statement s(db_,
                "INSERT INTO native_budget(id, input_limit, input_used, output_limit, "
                "output_used, jobs_limit, jobs_admitted) VALUES(1, ?, 0, ?, 0, ?, 0)");
    s.bind(1, i64(limits.input_bytes));
    s.bind(2, i64(limits.output_bytes));
    s.bind(3, i64(limits.jobs));
    s.step();
  }
  t.commit();
}

std::optional<scope_identity> worker_budget::identity() {
  statement s(db_, "SELECT scope_id, generation, created_at FROM native_identity LIMIT 1");
  if (!s.step()) return std::nullopt;
  return scope_identity{s.text(0), static_cast<std::uint64_t>(s.int64(1)), s.text(2)};
}

admission worker_budget::admit(const store::job_row& row, std::uint64_t input_charge,
                                const std::optional<store::run_key>& key) {
  transaction t(db_);  // a refusal below rolls everything back
  if (!charge(db_, kChargeJob, 1)) return admission::job_capacity_exhausted;
  if (!charge(db_, kChargeInput, input_charge)) return admission::input_budget_exhausted;
  if (!store::insert_row(db_, row, key)) return admission::duplicate_job;
  t.commit();
  return admission::admitted;
}

bool worker_budget::charge_input(std::uint64_t n) { return charge(db_, kChargeInput, n); }

std::uint64_t worker_budget::reserve_output(std::uint64_t n) {
  if (n == 0) return 0;
  transaction t(db_);
  std::uint64_t granted = 0;
  {
    statement s(db_, "SELECT output_limit - output_used FROM native_budget WHERE id = 1");
    if (!s.step()) throw worker_budget_error("no budget recorded");
    const auto left = s.int64(0);
    granted = left <= 0 ? 0 : std::min<std::uint64_t>(n, static_cast<std::uint64_t>(left));
  }
  if (granted == 0) return 0;
  {
    statement s(db_,
                "UPDATE native_budget SET output_used = output_used + ?1 "
                "WHERE id = 1 AND output_used + ?1 <= output_limit");
    s.bind(1, i64(granted));
    s.step();
    if (sqlite3_changes(db_) != 1) return 0;  // cannot happen under the write lock
  }
  t.commit();
  return granted;
}

budget_usage worker_budget::usage() {
  statement s(db_,
              "SELECT input_limit, input_used, output_limit, output_used, jobs_limit, "
              "jobs_admitted FROM native_budget WHERE id = 1");
  budget_usage u;
  if (!s.step()) throw worker_budget_error("no budget recorded");
  u.limits.input_bytes = static_cast<std::uint64_t>(s.int64(0));
  u.input_used = static_cast<std::uint64_t>(s.int64(1));
  u.limits.output_bytes = static_cast<std::uint64_t>(s.int64(2));
  u.output_used = static_cast<std::uint64_t>(s.int64(3));
  u.limits.jobs = static_cast<std::uint64_t>(s.int64(4));
  u.jobs_admitted = static_cast<std::uint64_t>(s.int64(5));
  return u;
}

}  // namespace shellctl::io::native
