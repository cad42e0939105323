// job_actor's phases under CAF's deterministic test_coordinator, driven through the
// registry as the API drives it; tmux and inotify are played by the test through the
// stand-ins (tests/unit/actors/actor_fixture.hpp). Time is the scheduler's: a timeout is
// reached by advance_time, never by waiting.
#include <doctest/doctest.h>

#include "tests/unit/actors/actor_fixture.hpp"

using namespace shellctl::actors;
namespace store = shellctl::io::store;
namespace fs = shellctl::io::fs;
using shellctl::test::fixture;

namespace {

// A registry started and recovered over an empty database: ready for runs.
struct recovered_fixture : fixture {
  recovered_fixture() {
    start();
    recover();
  }
};

template <class Reply>
struct asked {
  std::optional<Reply> reply;
  std::optional<job_error_view> error;
  bool answered() const { return reply || error; }
};

template <class Reply, class Request>
void ask(fixture& f, Request req, asked<Reply>& out) {
  f.ask(std::move(req), out.reply, out.error);
}

run_request pty_run(double wait_s = 0) {
  run_request run;
  run.spec.script = "echo hi";
  run.spec.cwd = "/tmp";
  run.spec.mode = job_mode::pty;
  run.spec.env = {{"HOME", "/tmp"}};
  run.spec.wait = wait_params{0, wait_s, 100, 0.5};
  return run;
}

// The job directory and session of the one job the test started.
struct started_job {
  std::string id, dir, session;
};

started_job only_job(fixture& f) {
  REQUIRE(f.seen.session_owners.size() == 1);
  started_job j;
  j.session = f.seen.session_owners.begin()->first;
  j.id = j.session.substr(std::string("shellctl-").size());
  j.dir = f.dir + "/jobs/" + j.id;
  return j;
}

// inotify's report of files appearing in the job dir.
void files_appear(fixture& f, const started_job& j, std::set<std::string> names) {
  REQUIRE(f.seen.dir_owners.count(j.dir));
  caf::anon_send(f.seen.dir_owners[j.dir], dir_changed{std::move(names), {}});
}

void session_ends(fixture& f, const started_job& j, bool server_died = false) {
  caf::anon_send(f.seen.session_owners[j.session], session_gone{server_died});
}

void write(const started_job& j, const char* name, const std::string& text = "") {
  fs::write_file(j.dir + "/" + name, text, 0600);
}

// A PTY job through its start: new-session + pipe, the sanitizer's ready file, the gate.
started_job start_pty(fixture& f, asked<job_result>& run) {
  ask(f, pty_run(), run);
  f.sched->run();
  auto j = only_job(f);
  write(j, ".pipe-ready");
  files_appear(f, j, {".pipe-ready"});
  f.sched->run();
  REQUIRE(run.reply);
  REQUIRE(run.reply->row.status == store::job_status::running);
  return j;
}

}  // namespace

TEST_CASE("PTY start: the gate opens only after the pipe is ready; done only once it drained") {
  recovered_fixture f;
  asked<job_result> run;
  ask(f, pty_run(), run);
  f.sched->run();
  // awaiting_pipe: session and pipe in one command, the runner still at its gate.
  CHECK_FALSE(run.answered());
  auto j = only_job(f);
  REQUIRE(f.seen.tmux_lines.size() == 3);
  CHECK(f.seen.count("new-session") == 1);
  CHECK(f.seen.count("pipe-pane") == 1);
  CHECK(f.seen.count("display-message") == 1);
  CHECK_FALSE(fs::exists(j.dir + "/start-gate"));
  CHECK(fs::exists(j.dir + "/script"));

  // Another file appearing is no handshake.
  files_appear(f, j, {"output.log"});
  f.sched->run();
  CHECK_FALSE(run.answered());
  CHECK_FALSE(fs::exists(j.dir + "/start-gate"));

  write(j, ".pipe-ready");
  files_appear(f, j, {".pipe-ready"});
  f.sched->run();
  REQUIRE(run.reply);
  CHECK(run.reply->row.status == store::job_status::running);
  CHECK(fs::exists(j.dir + "/start-gate"));
  CHECK_FALSE(fs::exists(j.dir + "/.pipe-ready"));  // the handshake's file is consumed

  // The runner exits and its pane closes, but the sanitizer has not drained the pipe:
  // the answer must not say done while output may still arrive.
  asked<job_result> waited;
  ask(f, wait_request{j.id, wait_params{0, 30, 100, 0.5}}, waited);
  f.sched->run();
  write(j, "runner-exit-code", "0\n");
  write(j, "runner-ended-at", "2026-08-04T10:00:05Z\n");
  files_appear(f, j, {"runner-exit-code", "runner-ended-at"});
  session_ends(f, j);
  f.sched->run();
  CHECK_FALSE(waited.answered());
  asked<job_status_view> mid;
  ask(f, status_request{j.id}, mid);
  f.sched->run();
  REQUIRE(mid.reply);
  CHECK(mid.reply->row.status == store::job_status::running);  // shown as before its end
  CHECK_FALSE(mid.reply->row.exit_code);

  // The sanitizer drained everything (the output is final) and runner-exit recorded it.
  write(j, "output.log", "hi\r\n");
  write(j, ".pipe-drained");
  files_appear(f, j, {"output.log", ".pipe-drained"});
  f.sched->run();
  REQUIRE(waited.reply);
  CHECK(waited.reply->row.status == store::job_status::exited);
  CHECK(waited.reply->row.exit_code == std::optional<std::int64_t>(0));
  CHECK(waited.reply->window.text == "hi\r\n");
}

TEST_CASE("output finality: a pipe that never marks its end is final after its grace, not before") {
  recovered_fixture f;
  asked<job_result> run;
  auto j = start_pty(f, run);
  write(j, "output.log", "partial\r\n");
  files_appear(f, j, {"output.log"});
  f.sched->run();
  // A wait past what was printed: answered by new output or by the job's end only.
  asked<job_result> waited;
  ask(f, wait_request{j.id, wait_params{9, 60, 100, 0.5}}, waited);
  f.sched->run();
  // The runner exits and its pane closes; the sanitizer (killed with its tmux server, say)
  // never writes .pipe-drained.
  write(j, "runner-exit-code", "0\n");
  write(j, "runner-ended-at", "2026-08-04T10:00:05Z\n");
  files_appear(f, j, {"runner-exit-code", "runner-ended-at"});
  session_ends(f, j);
  f.sched->run();
  CHECK_FALSE(waited.answered());  // the output may still grow
  f.sched->advance_time(std::chrono::seconds(5));
  f.sched->run();
  CHECK_FALSE(waited.answered());
  // Past the finalizer's grace the exit is recorded, and past the output's own bound the
  // log is final as it is: the waiter hears done, with everything in it.
  for (int i = 0; i < 4 && !waited.answered(); ++i) {
    f.sched->advance_time(std::chrono::seconds(10));
    f.sched->run();
  }
  REQUIRE(waited.reply);
  CHECK(waited.reply->row.status == store::job_status::exited);
  CHECK(waited.reply->row.exit_code == std::optional<std::int64_t>(0));
  CHECK(waited.reply->window.text.empty());
  CHECK(waited.reply->window.offset == 9);
  // Final for good: a later wait is answered at once, done.
  asked<job_result> later;
  ask(f, wait_request{j.id, wait_params{0, 60, 100, 0.5}}, later);
  f.sched->run();
  REQUIRE(later.reply);
  CHECK(later.reply->row.status == store::job_status::exited);
  CHECK(later.reply->window.text == "partial\r\n");
}

TEST_CASE("PTY: a sanitizer that closes output.log without a marker fails the job truthfully") {
  recovered_fixture f;
  asked<job_result> run;
  auto j = start_pty(f, run);
  // inotify's IN_CLOSE_WRITE of output.log: its one writer, the sanitizer, let go of it.
  auto output_closed = [&] {
    caf::anon_send(f.seen.dir_owners[j.dir], dir_changed{{"output.log"}, {"output.log"}});
    f.sched->run();
  };
  auto row_now = [&] {
    asked<job_status_view> seen;
    ask(f, status_request{j.id}, seen);
    f.sched->run();
    REQUIRE(seen.reply);
    return seen.reply->row;
  };

  SUBCASE("closed with .pipe-drained already there: the normal end, nothing is written") {
    write(j, ".pipe-drained");
    files_appear(f, j, {".pipe-drained"});
    f.sched->run();
    output_closed();
    CHECK_FALSE(fs::exists(j.dir + "/.pipe-failed"));
    CHECK(row_now().status == store::job_status::running);  // the session still runs
  }
  SUBCASE("written to but not closed: the sanitizer is still at work") {
    files_appear(f, j, {"output.log"});
    f.sched->run();
    CHECK_FALSE(fs::exists(j.dir + "/.pipe-failed"));
    CHECK(row_now().status == store::job_status::running);
  }
  SUBCASE("closed with no marker (the sanitizer was killed): .pipe-failed, failed/pipe_failed") {
    output_closed();
    CHECK(fs::exists(j.dir + "/.pipe-failed"));
    const auto row = row_now();
    CHECK(row.status == store::job_status::failed);
    CHECK(row.reason == std::optional<std::string>("pipe_failed"));
    // No exit was seen: the row's exit_code is the schema's 0 for terminal rows, which the
    // API shows as null for every status but exited.
  }
}

// The job's row as a status request shows it.
store::job_row status_of(fixture& f, const started_job& j) {
  asked<job_status_view> seen;
  ask(f, status_request{j.id}, seen);
  f.sched->run();
  REQUIRE(seen.reply);
  return seen.reply->row;
}

TEST_CASE("PTY start whose pipe never gets ready fails at its timeout, and its session goes") {
  recovered_fixture f;
  asked<job_result> run;
  ask(f, pty_run(), run);
  f.sched->run();
  auto j = only_job(f);
  CHECK_FALSE(run.answered());
  const auto before = f.seen.tmux_lines.size();
  // The run's timeout (0 s) and its 3 s of grace pass: it answers with the job as it
  // stands, not done, so its client waits on it by id.
  f.sched->advance_time(std::chrono::seconds(4));
  f.sched->run();
  REQUIRE(run.reply);
  CHECK(run.reply->row.status == store::job_status::starting);
  CHECK(run.reply->window.text == "");
  f.sched->advance_time(std::chrono::seconds(7));
  f.sched->run();
  const auto row = status_of(f, j);
  CHECK(row.status == store::job_status::failed);
  CHECK(row.reason == std::optional<std::string>("start_failed"));
  CHECK(row.message == std::optional<std::string>("timed out waiting for pipe ready (10s)"));
  CHECK(f.seen.count("kill-session", before) >= 1);
  CHECK_FALSE(fs::exists(j.dir + "/start-gate"));  // the script never ran

  // A late handshake changes nothing: the start is over.
  write(j, ".pipe-ready");
  files_appear(f, j, {".pipe-ready"});
  f.sched->run();
  CHECK_FALSE(fs::exists(j.dir + "/start-gate"));
}

TEST_CASE("a start past 10 s goes on while tmux answers (busy), and fails once tmux is silent (stuck)") {
  recovered_fixture f;
  f.seen.hold_tmux = true;  // new-session is sent, its answer comes when released
  asked<job_result> run;
  ask(f, pty_run(30), run);
  f.sched->run();
  auto j = only_job(f);
  REQUIRE(f.seen.held_tmux.size() == 1);

  SUBCASE("busy: every look finds tmux answering; its answer at 25 s starts it") {
    f.sched->advance_time(std::chrono::seconds(25));
    f.sched->run();
    CHECK_FALSE(run.answered());
    CHECK(status_of(f, j).status == store::job_status::starting);
    f.release_tmux();
    write(j, ".pipe-ready");
    files_appear(f, j, {".pipe-ready"});
    f.sched->run();
    CHECK(fs::exists(j.dir + "/start-gate"));
    CHECK(status_of(f, j).status == store::job_status::running);
    // The run waits for the job within its 30 s, counted from its arrival: at 30 s it
    // answers, running, although the start took 25 of them.
    CHECK_FALSE(run.answered());
    f.sched->advance_time(std::chrono::milliseconds(4900));
    f.sched->run();
    CHECK_FALSE(run.answered());
    f.sched->advance_time(std::chrono::milliseconds(200));
    f.sched->run();
    REQUIRE(run.reply);
    CHECK(run.reply->row.status == store::job_status::running);
  }
  SUBCASE("stuck: tmux has owed an answer for 5 s in silence; the start fails, its run hears") {
    f.seen.tmux_silent_ms = 5000;
    f.sched->advance_time(std::chrono::seconds(10));
    f.sched->run();
    REQUIRE(run.reply);
    CHECK(run.reply->row.status == store::job_status::failed);
    CHECK(run.reply->row.reason == std::optional<std::string>("start_failed"));
    CHECK(run.reply->row.message ==
          std::optional<std::string>("the job did not start: tmux stopped answering"));
    // tmux answers late: the session it made is removed; the script never runs.
    const auto before = f.seen.tmux_lines.size();
    f.release_tmux();
    CHECK(f.seen.count("kill-session", before) >= 1);
    CHECK_FALSE(fs::exists(j.dir + "/start-gate"));
  }
}

TEST_CASE("PTY start: an inactive pipe, or a pane that dies before the handshake, fails it") {
  SUBCASE("pipe-pane did not take") {
    fixture f;
    f.seen.pipe_active = false;
    f.start();
    f.recover();
    asked<job_result> run;
    ask(f, pty_run(), run);
    f.sched->run();
    REQUIRE(run.reply);
    CHECK(run.reply->row.status == store::job_status::failed);
    CHECK(run.reply->row.message ==
          std::optional<std::string>("tmux output pipe is not active after pipe-pane"));
  }
  SUBCASE("the pane closed while the pipe was awaited") {
    recovered_fixture f;
    asked<job_result> run;
    ask(f, pty_run(), run);
    f.sched->run();
    auto j = only_job(f);
    session_ends(f, j);
    f.sched->run();
    REQUIRE(run.reply);
    CHECK(run.reply->row.status == store::job_status::failed);
    CHECK(run.reply->row.message == std::optional<std::string>(
                                        "tmux pane disappeared before the output pipe was ready"));
  }
  SUBCASE("the tmux server died: the start begins again on the next one") {
    recovered_fixture f;
    asked<job_result> run;
    ask(f, pty_run(), run);
    f.sched->run();
    auto j = only_job(f);
    session_ends(f, j, /*server_died=*/true);
    f.sched->run();
    CHECK_FALSE(run.answered());
    CHECK(f.seen.count("new-session") == 2);
    write(j, ".pipe-ready");
    files_appear(f, j, {".pipe-ready"});
    f.sched->run();
    REQUIRE(run.reply);
    CHECK(run.reply->row.status == store::job_status::running);
  }
}

TEST_CASE("terminate: ^C, answered once the session is gone, or when the grace runs out") {
  SUBCASE("the job ends on ^C") {
    recovered_fixture f;
    asked<job_result> run;
    auto j = start_pty(f, run);
    const auto before = f.seen.tmux_lines.size();
    asked<job_status_view> term;
    ask(f, terminate_request{j.id, 5}, term);
    f.sched->run();
    CHECK(f.seen.count("send-keys", before) == 1);
    CHECK_FALSE(term.answered());  // the session still lives
    session_ends(f, j);
    write(j, ".pipe-drained");
    files_appear(f, j, {".pipe-drained"});
    f.sched->run();
    REQUIRE(term.reply);
    CHECK(term.reply->row.status == store::job_status::terminated);
    CHECK(term.reply->row.ended_at);
  }
  SUBCASE("the job ignores ^C: answered at the grace's end, its session killed") {
    recovered_fixture f;
    asked<job_result> run;
    auto j = start_pty(f, run);
    const auto before = f.seen.tmux_lines.size();
    asked<job_status_view> term;
    ask(f, terminate_request{j.id, 5}, term);
    f.sched->run();
    f.sched->advance_time(std::chrono::seconds(4));
    f.sched->run();
    CHECK_FALSE(term.answered());
    f.sched->advance_time(std::chrono::seconds(2));
    f.sched->run();
    CHECK(f.seen.count("kill-session", before) >= 1);
    // Answered once the output is final: the killed pane's pipe drains (or its grace ends).
    write(j, ".pipe-drained");
    files_appear(f, j, {".pipe-drained"});
    f.sched->run();
    REQUIRE(term.reply);
    CHECK(term.reply->row.status == store::job_status::terminated);
  }
}

TEST_CASE("delete during terminate: the terminate is answered first, then the job goes") {
  recovered_fixture f;
  asked<job_result> run;
  auto j = start_pty(f, run);
  asked<job_status_view> term;
  ask(f, terminate_request{j.id, 30}, term);
  asked<job_deleted> del;
  ask(f, delete_request{j.id, true, 30}, del);
  f.sched->run();
  CHECK_FALSE(term.answered());
  CHECK_FALSE(del.answered());
  CHECK(fs::exists(j.dir));
  // A reader while the terminate is under way still sees the job.
  asked<job_status_view> mid;
  ask(f, status_request{j.id}, mid);
  f.sched->run();
  REQUIRE(mid.reply);

  session_ends(f, j);
  write(j, ".pipe-drained");
  files_appear(f, j, {".pipe-drained"});
  f.sched->run();
  REQUIRE(term.reply);
  CHECK(term.reply->row.status == store::job_status::terminated);
  REQUIRE(del.reply);
  CHECK(del.reply->job_id == j.id);
  CHECK_FALSE(fs::exists(j.dir));
  asked<job_status_view> after;
  ask(f, status_request{j.id}, after);
  f.sched->run();
  REQUIRE(after.error);
  CHECK(after.error->code == job_errc::job_not_found);
}

TEST_CASE("a forced delete during a start: the start never opens its gate; all are answered") {
  recovered_fixture f;
  asked<job_result> run;
  ask(f, pty_run(), run);
  f.sched->run();
  auto j = only_job(f);
  asked<job_deleted> del;
  ask(f, delete_request{j.id, true, 0}, del);
  f.sched->run();
  // The terminate of a session whose start had not finished: no grace, the pane goes.
  session_ends(f, j);
  f.sched->run();
  REQUIRE(del.reply);
  REQUIRE(run.answered());
  if (run.reply) CHECK(store::is_terminal(run.reply->row.status));
  CHECK_FALSE(fs::exists(j.dir));
  // The sanitizer's late handshake finds a removed job: no gate, no error.
  caf::anon_send(f.seen.dir_owners[j.dir], dir_changed{{".pipe-ready"}, {}});
  f.sched->run();
  CHECK_FALSE(fs::exists(j.dir + "/start-gate"));
}

TEST_CASE("input: pasted through a buffer into the pane, then waits as asked; stdio refuses") {
  recovered_fixture f;
  asked<job_result> run;
  auto j = start_pty(f, run);
  const auto before = f.seen.tmux_lines.size();
  asked<job_result> typed;
  ask(f, input_request{j.id, "ls\n", wait_params{0, 0, 100, 0.5}}, typed);
  f.sched->run();
  REQUIRE(typed.reply);
  CHECK(f.seen.count("load-buffer", before) == 1);
  CHECK(f.seen.count("paste-buffer", before) == 1);
  CHECK(f.seen.count("delete-buffer", before) == 1);
  // The pasted file is gone once tmux loaded it.
  CHECK(std::system(("ls " + f.dir + "/runtime | grep -q shellctl-input-").c_str()) != 0);
}
