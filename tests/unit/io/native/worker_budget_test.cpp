// A scope worker's budgets on a real SQLite file (docs/native-scopes.md "The scope worker",
// S19, S20): FULL on every connection, the identity kept and checked, 64 admissions and the
// 65th refused, an input charge that does not fit refused with no row and nothing charged,
// output reserved up to what remains and then nothing, no refund when a job's row goes,
// counters that survive a reopen, and concurrent chargers in separate processes that together
// never pass a limit.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "io/native/worker/worker_budget.hpp"
#include "io/store/jobs_db.hpp"

namespace native = shellctl::io::native;
namespace store = shellctl::io::store;

namespace {
struct temp_spool {
  std::string dir, path;
  temp_spool() {
    char tmpl[] = "/tmp/shellctl-budget-XXXXXX";
    dir = ::mkdtemp(tmpl);
    path = dir + "/shellctl.db";
    // The worker opens its jobs store first: it makes the jobs table.
    store::jobs_db jobs(path, 5000, store::jobs_db::open_mode::create_schema);
  }
  ~temp_spool() { (void)!std::system(("rm -rf " + dir).c_str()); }
};

store::job_row job(const std::string& id) {
  store::job_row r;
  r.job_id = id;
  r.script_path = "jobs/" + id + "/script";
  r.output_path = "/run/dify-native/spool/jobs/" + id + "/output.log";
  r.cwd = "/home/dify";
  r.session_name = "shellctl-" + id;
  r.pane_target = "shellctl-" + id + ":0.0";
  r.created_at = r.updated_at = "2026-12-05T00:00:00Z";
  return r;
}

const native::scope_identity kScope{"scope-a", 3, "2026-12-05T00:00:00Z"};

std::size_t rows(const std::string& path) {
  store::jobs_db jobs(path, 5000, store::jobs_db::open_mode::existing);
  return jobs.list_all().size();
}
}  // namespace

TEST_CASE("FULL durability, and the identity is the scope's for good") {
  temp_spool spool;
  native::worker_budget b(spool.path);
  CHECK(b.synchronous_full());
  CHECK_FALSE(b.identity().has_value());
  b.init(kScope, {1000, 1000, 64});
  REQUIRE(b.identity().has_value());
  CHECK(b.identity()->scope_id == "scope-a");
  CHECK(b.identity()->generation == 3);
  // A restarted worker of the same scope keeps its counters; another scope is refused.
  CHECK(b.charge_input(10));
  b.init(kScope, {5, 5, 5});
  CHECK(b.usage().limits.input_bytes == 1000);
  CHECK(b.usage().input_used == 10);
  CHECK_THROWS_AS(b.init({"scope-a", 4, "x"}, {1, 1, 1}), native::worker_budget_error);
  CHECK_THROWS_AS(b.init({"scope-b", 3, "x"}, {1, 1, 1}), native::worker_budget_error);
}

TEST_CASE("a scope admits 64 jobs in its lifetime, deletes refund nothing") {
  temp_spool spool;
  native::worker_budget b(spool.path);
  b.init(kScope, {1u << 20, 1u << 20, 64});
  for (int i = 0; i < 64; ++i)
    REQUIRE(b.admit(job("j" + std::to_string(i)), 10) == native::admission::admitted);
  CHECK(b.admit(job("j64"), 10) == native::admission::job_capacity_exhausted);
  CHECK(rows(spool.path) == 64);
  CHECK(b.usage().jobs_admitted == 64);
  CHECK(b.usage().input_used == 640);  // the refused one charged nothing
  {
    store::jobs_db jobs(spool.path, 5000, store::jobs_db::open_mode::existing);
    for (int i = 0; i < 64; ++i) REQUIRE(jobs.remove("j" + std::to_string(i)));
  }
  CHECK(rows(spool.path) == 0);
  CHECK(b.usage().jobs_admitted == 64);
  CHECK(b.usage().input_used == 640);
  CHECK(b.admit(job("again"), 1) == native::admission::job_capacity_exhausted);
}

TEST_CASE("an input charge that does not fit leaves no row and charges nothing") {
  temp_spool spool;
  native::worker_budget b(spool.path);
  b.init(kScope, {100, 100, 64});
  CHECK(b.admit(job("a"), 60) == native::admission::admitted);
  CHECK(b.admit(job("b"), 41) == native::admission::input_budget_exhausted);
  CHECK(rows(spool.path) == 1);
  CHECK(b.usage().jobs_admitted == 1);  // the slot went back with the rollback
  CHECK(b.usage().input_used == 60);
  CHECK(b.admit(job("a"), 1) == native::admission::duplicate_job);
  CHECK(b.usage().jobs_admitted == 1);
  CHECK(b.usage().input_used == 60);
  CHECK(b.admit(job("b"), 40) == native::admission::admitted);  // exactly the rest
  CHECK_FALSE(b.charge_input(1));
  CHECK(b.usage().input_used == 100);
}

TEST_CASE("output is reserved up to what remains, then nothing; counters never go down") {
  temp_spool spool;
  {
    native::worker_budget b(spool.path);
    b.init(kScope, {10, 1000, 64});
    CHECK(b.reserve_output(600) == 600);
    CHECK(b.reserve_output(600) == 400);  // what fits
    CHECK(b.reserve_output(1) == 0);
    CHECK(b.reserve_output(0) == 0);
    CHECK(b.usage().output_used == 1000);
  }
  // A reopened catalog (a restarted worker, a new stream) starts where it was.
  native::worker_budget again(spool.path);
  CHECK(again.synchronous_full());
  CHECK(again.usage().output_used == 1000);
  CHECK(again.reserve_output(5) == 0);
}

TEST_CASE("chargers in separate processes never pass the limit together") {
  temp_spool spool;
  {
    native::worker_budget b(spool.path);
    b.init(kScope, {300, 1000, 64});
  }
  constexpr int kProcs = 4, kEach = 400;
  pid_t kids[kProcs];
  int pipes[kProcs][2];
  for (int k = 0; k < kProcs; ++k) {
    REQUIRE(::pipe(pipes[k]) == 0);
    kids[k] = ::fork();
    REQUIRE(kids[k] >= 0);
    if (kids[k] == 0) {
      // Each its own connection, as each job's sanitizer has.
      native::worker_budget mine(spool.path);
      std::uint64_t got = 0, inputs = 0;
      for (int i = 0; i < kEach; ++i) {
        got += mine.reserve_output(1);
        inputs += mine.charge_input(1) ? 1 : 0;
      }
      const std::uint64_t said[2] = {got, inputs};
      (void)!::write(pipes[k][1], said, sizeof said);
      ::_exit(0);
    }
    ::close(pipes[k][1]);
  }
  std::uint64_t output = 0, input = 0;
  for (int k = 0; k < kProcs; ++k) {
    std::uint64_t said[2] = {0, 0};
    CHECK(::read(pipes[k][0], said, sizeof said) == static_cast<ssize_t>(sizeof said));
    ::close(pipes[k][0]);
    output += said[0];
    input += said[1];
    int status = 0;
    CHECK(::waitpid(kids[k], &status, 0) == kids[k]);
    CHECK(WIFEXITED(status));
  }
  native::worker_budget b(spool.path);
  CHECK(output == 1000);  // 1600 asked for, exactly the limit granted
  CHECK(input == 300);
  CHECK(b.usage().output_used == 1000);
  CHECK(b.usage().input_used == 300);
}
