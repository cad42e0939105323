// job_registry under CAF's deterministic test_coordinator: recover-then-serve (requests
// that arrive while recovering wait in the mailbox and are answered, in order, once every
// row has its job actor), delegation of job requests to the job's actor, and domain errors.
// The harness (what is real, what stands in) is tests/unit/actors/actor_fixture.hpp.
#include <doctest/doctest.h>

#include "actors/edge/views.hpp"
#include "tests/unit/actors/actor_fixture.hpp"

using namespace shellctl::actors;
namespace store = shellctl::io::store;
using shellctl::test::fixture;

TEST_CASE("recovering: requests wait in the mailbox and are answered in order after recovery") {
  fixture f;
  {
    store::jobs_db db(f.dir + "/shellctl.db", 1000, store::jobs_db::open_mode::create_schema);
    f.add_finished_job(db, "aaaa", "2026-08-04T10:00:00Z", 0);
    f.add_finished_job(db, "bbbb", "2026-08-04T10:00:01Z", 7);
  }
  shellctl::io::fs::make_dirs(f.dir + "/jobs/orphan", 0700);  // a crash between mkdir and insert
  f.start();

  std::optional<job_list> listed;
  std::optional<job_status_view> status;
  std::optional<job_error_view> list_err, status_err;
  f.ask(list_request{false, std::nullopt, 50}, listed, list_err);
  f.ask(status_request{"bbbb"}, status, status_err);
  f.sched->run();
  CHECK_FALSE(listed);  // skipped: the registry has not recovered yet
  CHECK_FALSE(status);
  CHECK_FALSE(list_err);

  std::optional<shellctl::actors::recovered> recovered;
  std::optional<job_error_view> recover_err;
  f.ask(recover_all{}, recovered, recover_err);
  f.sched->run();
  REQUIRE(recovered);
  CHECK_FALSE(recover_err);

  REQUIRE(listed);
  REQUIRE(listed->jobs.size() == 2);
  CHECK(listed->jobs[0].job_id == "bbbb");  // newest first
  CHECK(listed->jobs[1].job_id == "aaaa");
  CHECK(listed->jobs[0].status == store::job_status::exited);
  REQUIRE(status);
  CHECK(status->row.job_id == "bbbb");
  CHECK(status->row.status == store::job_status::exited);
  CHECK(status->row.exit_code == std::optional<std::int64_t>(7));
  CHECK(status->offset == std::string("out-bbbb\n").size());
  CHECK_FALSE(shellctl::io::fs::exists(f.dir + "/jobs/orphan"));
}

TEST_CASE("serving: unknown ids are job_not_found, known ones answered by the job's actor") {
  fixture f;
  f.start_with(
      [&](store::jobs_db& db) { f.add_finished_job(db, "cccc", "2026-08-04T10:00:00Z", 3); });
  f.recover();

  std::optional<job_result> tail;
  std::optional<job_error_view> tail_err;
  f.ask(tail_request{"cccc", 100}, tail, tail_err);
  std::optional<job_status_view> missing;
  std::optional<job_error_view> missing_err;
  f.ask(status_request{"nope"}, missing, missing_err);
  std::optional<job_result> waited;
  std::optional<job_error_view> refused_err;
  f.ask(wait_request{"cccc", wait_params{1000, 0, 100, 0.5}}, waited, refused_err);
  f.sched->run();

  REQUIRE(tail);
  CHECK(tail->window.text == "out-cccc\n");
  CHECK(tail->row.exit_code == std::optional<std::int64_t>(3));
  REQUIRE(missing_err);
  CHECK(missing_err->code == job_errc::job_not_found);
  CHECK_FALSE(missing);
  CHECK_FALSE(waited);
  REQUIRE(refused_err);  // offset beyond the output
  CHECK(refused_err->code == job_errc::invalid_offset);
  CHECK(refused_err->text == "offset 1000 exceeds current file size 9");

  std::optional<job_deleted> deleted;
  std::optional<job_error_view> delete_err;
  f.ask(delete_request{"cccc", false, 10}, deleted, delete_err);
  f.sched->run();
  REQUIRE(deleted);
  CHECK(deleted->job_id == "cccc");
  CHECK_FALSE(shellctl::io::fs::exists(f.dir + "/jobs/cccc"));
  missing_err.reset();
  f.ask(status_request{"cccc"}, missing, missing_err);
  f.sched->run();
  REQUIRE(missing_err);
  CHECK(missing_err->code == job_errc::job_not_found);
}

TEST_CASE("a long-poll on a running job is answered at its deadline, by the actor clock") {
  fixture f;
  f.start_with([&](store::jobs_db& db) { f.add_running_job(db, "dddd", "2026-08-04T10:00:00Z"); });
  f.recover();

  std::optional<job_result> waited;
  std::optional<job_error_view> wait_err;
  f.ask(wait_request{"dddd", wait_params{7, 5, 100, 0.5}}, waited, wait_err);
  f.sched->run();
  CHECK_FALSE(waited);  // nothing new after offset 7, and 5 s have not passed
  CHECK_FALSE(wait_err);
  f.sched->advance_time(std::chrono::seconds(3));
  f.sched->run();
  CHECK_FALSE(waited);
  f.sched->advance_time(std::chrono::seconds(3));
  f.sched->run();
  REQUIRE(waited);
  CHECK(waited->row.status == store::job_status::running);
  CHECK(waited->window.text.empty());
  CHECK(waited->window.offset == 7);
  CHECK_FALSE(waited->window.truncated);

  std::optional<job_deleted> deleted;
  std::optional<job_error_view> delete_err;
  f.ask(delete_request{"dddd", false, 10}, deleted, delete_err);
  f.sched->run();
  REQUIRE(delete_err);  // a running job is not deleted without force
  CHECK(delete_err->code == job_errc::job_running);
  CHECK(delete_err->text == "Job dddd is still running");
}

TEST_CASE("a stdio run: created → starting → running, answered; exit artifacts → exited") {
  fixture f;
  f.start();
  f.recover();

  run_request run;
  run.spec.script = "echo hi";
  run.spec.cwd = "/tmp";
  run.spec.mode = job_mode::stdio;
  run.spec.env = {{"HOME", "/tmp"}};
  run.spec.wait = wait_params{0, 0, 100, 0.5};  // answer as soon as it runs
  std::optional<job_result> started;
  std::optional<job_error_view> start_err;
  f.ask(run, started, start_err);
  f.sched->run();
  REQUIRE_FALSE(start_err);
  REQUIRE(started);
  CHECK(started->row.status == store::job_status::running);
  CHECK(started->row.mode == store::job_mode::stdio);
  const std::string id = started->row.job_id;
  const std::string job_dir = f.dir + "/jobs/" + id;
  CHECK(shellctl::io::fs::exists(job_dir + "/start-gate"));  // the runner was let go
  CHECK(shellctl::io::fs::exists(job_dir + "/script"));
  REQUIRE(f.seen.tmux_lines.size() == 1);
  CHECK(f.seen.tmux_lines[0].rfind("new-session ", 0) == 0);

  // A long-poll that waits for the end.
  std::optional<job_result> waited;
  std::optional<job_error_view> wait_err;
  f.ask(wait_request{id, wait_params{0, 30, 100, 0.5}}, waited, wait_err);
  f.sched->run();
  CHECK_FALSE(waited);

  // The runner prints, records its exit and its pane closes: as inotify and tmux tell it.
  shellctl::io::fs::write_file(job_dir + "/output.log", "hi\n", 0600);
  shellctl::io::fs::write_file(job_dir + "/runner-exit-code", "3", 0600);
  shellctl::io::fs::write_file(job_dir + "/runner-ended-at", "2026-08-04T10:00:05Z", 0600);
  REQUIRE(f.seen.dir_owners.count(job_dir));
  caf::anon_send(f.seen.dir_owners[job_dir],
                 dir_changed{{"output.log", "runner-exit-code", "runner-ended-at"}, {}});
  REQUIRE(f.seen.session_owners.count("shellctl-" + id));
  caf::anon_send(f.seen.session_owners["shellctl-" + id], session_gone{false});
  f.sched->run();
  REQUIRE(waited);
  CHECK(waited->row.status == store::job_status::exited);
  CHECK(waited->row.exit_code == std::optional<std::int64_t>(3));
  CHECK(waited->row.ended_at == std::optional<std::string>("2026-08-04T10:00:05Z"));
  CHECK(waited->window.text == "hi\n");
  CHECK(waited->window.offset == 3);
}

TEST_CASE("a running job whose session is gone without exit artifacts becomes lost") {
  fixture f;
  f.start_with([&](store::jobs_db& db) { f.add_running_job(db, "eeee", "2026-08-04T10:00:00Z"); });
  f.recover();
  std::optional<job_status_view> before;
  std::optional<job_error_view> before_err;
  f.ask(status_request{"eeee"}, before, before_err);
  f.sched->run();
  REQUIRE(before);
  CHECK(before->row.status == store::job_status::running);

  std::optional<job_result> waited;
  std::optional<job_error_view> wait_err;
  f.ask(wait_request{"eeee", wait_params{0, 30, 100, 0.5}}, waited, wait_err);
  f.sched->run();
  CHECK_FALSE(waited);

  // The recovered job asked tmux_server to track its session; now the session ends.
  REQUIRE(f.seen.session_owners.count("shellctl-eeee"));
  caf::anon_send(f.seen.session_owners["shellctl-eeee"], session_gone{false});
  f.sched->run();
  REQUIRE(waited);
  CHECK(waited->row.status == store::job_status::lost);
  CHECK(waited->row.reason == std::optional<std::string>("tmux_session_missing"));
  // D3: only exited reports a number (the row may hold the original's filled-in code).
  CHECK(job_result_json(*waited).find("\"exit_code\":null") != std::string::npos);
  CHECK(waited->window.text == "so far\n");
}
