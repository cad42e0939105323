#pragma once
// The harness of the actor tests: CAF's deterministic test_coordinator running the real
// registry, its job actors, the job_store on a real SQLite file, the cleanup_worker and the
// job directories on disk. Stand-ins: tmux_server and fs_watcher, because each owns a
// reader thread (tmux's stdout, inotify) that would enqueue messages behind the
// deterministic scheduler's back; the stand-ins implement the same typed interfaces and
// answer as the real ones do, and tell the test who owns which session and directory, so
// that a test can play tmux and inotify towards a job actor.
#include <doctest/doctest.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/services/cgroup_reaper.hpp"
#include "actors/services/cleanup_worker.hpp"
#include "actors/services/event_log.hpp"
#include "actors/jobs/job_registry.hpp"
#include "actors/services/job_store.hpp"
#include "actors/metrics/metrics_registry.hpp"
#include "io/fs/files.hpp"

namespace shellctl::test {

using namespace shellctl::actors;
namespace store = shellctl::io::store;


// What the stand-ins learn, so that a test can play tmux and inotify towards a job actor.
// Everything runs on the test's one thread (the deterministic scheduler): nothing is shared.
struct observed {
  std::map<std::string, session_owner> session_owners;  // from new-session commands
  std::map<std::string, dir_listener> dir_owners;       // from watch_dir
  std::vector<std::string> tmux_lines;                  // every command line sent
  bool pipe_active = true;  // what display-message #{pane_pipe} prints ("1" or "0")
  std::int64_t tmux_silent_ms = 0;  // what tmux_silence_query answers: 0 = tmux answers
  // A busy tmux: while set, command answers are held (in order) until the stand-in is
  // told to let them go (fixture::release_tmux).
  bool hold_tmux = false;
  std::vector<std::function<void()>> held_tmux;
  // Lines sent since `from` that start with `command`.
  std::size_t count(const std::string& command, std::size_t from = 0) const {
    std::size_t n = 0;
    for (std::size_t i = from; i < tmux_lines.size(); ++i)
      n += tmux_lines[i].rfind(command + " ", 0) == 0;
    return n;
  }
};

// A pane pid no process can have (above any pid_max): the job actor's process-group kills
// of it reach nothing on the machine running the tests.
inline constexpr const char* stand_in_pane = "2000000000 @9";

// `alive`: the sessions tmux lists (their jobs recover as running).
inline tmux_server_actor::behavior_type tmux_stand_in(tmux_server_actor::pointer self,
                                               std::set<std::string> alive, observed* seen) {
  return {
      [](tmux_start&) { return tmux_ready{}; },
      [self, seen](tmux_command& m) -> caf::result<tmux_output> {
        tmux_output r;
        r.output.resize(m.lines.size());
        seen->tmux_lines.insert(seen->tmux_lines.end(), m.lines.begin(), m.lines.end());
        if (!m.creates_session.empty()) {
          r.output[0].push_back(stand_in_pane);  // "<pane_pid> <window_id>", as tmux prints it
          seen->session_owners[m.creates_session] = m.owner;
        }
        // display-message: the pipe's state, and for recovery's query the pane pid too.
        const std::string pipe = seen->pipe_active ? "1" : "0";
        for (std::size_t i = 0; i < m.lines.size(); ++i) {
          const auto& l = m.lines[i];
          if (l.rfind("display-message ", 0) != 0) continue;
          if (l.find("#{pane_pid} #{pane_pipe}") != std::string::npos)
            r.output[i].push_back("2000000000 " + pipe);
          else if (l.find("#{pane_pipe}") != std::string::npos)
            r.output[i].push_back(pipe);
        }
        if (seen->hold_tmux) {
          auto rp = self->make_response_promise<tmux_output>();
          seen->held_tmux.push_back([rp, r]() mutable { rp.deliver(r); });
          return rp;
        }
        return r;
      },
      [alive](list_sessions_request&) { return session_list{alive}; },
      [seen](tmux_silence_query&) { return tmux_silence{seen->tmux_silent_ms}; },
      [alive, seen](track_session& m) {
        if (alive.count(m.name))
          seen->session_owners[m.name] = m.owner;
        else
          caf::anon_send(m.owner, session_gone{false});
      },
      [seen](tmux_lines&) {  // here: let the held answers go, in order
        seen->hold_tmux = false;
        auto held = std::move(seen->held_tmux);
        seen->held_tmux.clear();
        for (auto& h : held) h();
      },
      [](tmux_client_exited&) {},
      [self](shutdown_jobs&) { self->quit(); },
  };
}

inline fs_watcher_actor::behavior_type watcher_stand_in(fs_watcher_actor::pointer self,
                                                 observed* seen) {
  return {
      [seen](watch_dir& m) {
        seen->dir_owners[m.path] = m.owner;
        return watch_set{};
      },
      [](unwatch_dir&) {},
      [](fs_batch&) {},
      [self](shutdown_jobs&) { self->quit(); },
  };
}

struct fixture {
  std::string dir;
  caf::actor_system_config cfg;
  std::optional<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;
  job_registry_actor registry;
  job_store_actor store_actor;
  tmux_server_actor tmux;
  fs_watcher_actor watcher;
  cleanup_worker_actor cleanup;
  cgroup_reaper_actor reaper;  // idle here: these jobs have no cgroup (js.cgroup_root "")
  metrics_registry_actor metrics;
  event_log_actor events;

  // The busy stand-in tmux answers what it held (observed::hold_tmux).
  void release_tmux() {
    caf::anon_send(tmux, tmux_lines{});
    sched->run();
  }

  fixture() {
    char tmpl[] = "/tmp/shellctl-registry-XXXXXX";
    dir = mkdtemp(tmpl);
    shellctl::io::fs::make_dirs(dir + "/jobs", 0700);
    shellctl::io::fs::make_dirs(dir + "/runtime", 0700);
    cfg.set("scheduler.policy", caf::atom("testing"));
  }
  ~fixture() {
    // Every actor is told to stop: the system waits for all of them before it goes.
    if (sys) {
      caf::anon_send(registry, shutdown_jobs{});
      caf::anon_send(store_actor, shutdown_jobs{});
      caf::anon_send(tmux, shutdown_jobs{});
      caf::anon_send(watcher, shutdown_jobs{});
      caf::anon_send(cleanup, shutdown_jobs{});
      caf::anon_send(reaper, shutdown_jobs{});
      caf::anon_send(metrics, shutdown_jobs{});
      caf::anon_send(events, shutdown_jobs{});
      sched->run();
    }
    sys.reset();
    std::system(("rm -rf '" + dir + "'").c_str());
  }

  std::set<std::string> alive_sessions;
  observed seen;

  // A stdio job's row and directory after its start: running, its runner let go.
  store::job_row insert_running(store::jobs_db& db, const std::string& id,
                                const std::string& created, const std::string& output) {
    store::job_row r;
    r.job_id = id;
    r.script_path = "jobs/" + id + "/script";
    r.output_path = "jobs/" + id + "/output.log";
    r.cwd = "/tmp";
    r.session_name = "shellctl-" + id;
    r.pane_target = "shellctl-" + id + ":0.0";
    r.created_at = created;
    r.updated_at = created;
    r.mode = store::job_mode::stdio;
    REQUIRE(db.insert(r));
    REQUIRE(db.apply(id, store::transition{store::job_status::running, {store::job_status::created}, {}, {}, {}, false}, created));
    shellctl::io::fs::make_dirs(dir + "/jobs/" + id, 0700);
    shellctl::io::fs::write_file(dir + "/jobs/" + id + "/output.log", output, 0600);
    shellctl::io::fs::write_file(dir + "/jobs/" + id + "/start-gate", "", 0600);
    return r;
  }

  // A running stdio job, as the server left it when it stopped: its session lives on.
  void add_running_job(store::jobs_db& db, const std::string& id, const std::string& created) {
    alive_sessions.insert(insert_running(db, id, created, "so far\n").session_name);
  }

  // A finished stdio job (its output cannot grow: no session), as a crash leaves it.
  void add_finished_job(store::jobs_db& db, const std::string& id, const std::string& created,
                        std::int64_t code) {
    insert_running(db, id, created, "out-" + id + "\n");
    REQUIRE(db.record_exit_server(id, code, created) == store::record_result::recorded);
  }

  // Startup's recover_all, run to completion.
  void recover() {
    std::optional<shellctl::actors::recovered> done;
    std::optional<job_error_view> err;
    ask(recover_all{}, done, err);
    sched->run();
    REQUIRE(done);
    REQUIRE_FALSE(err);
  }

  // Starts with the rows `fill` writes into the database first.
  template <class Fill>
  void start_with(Fill fill) {
    {
      store::jobs_db db(dir + "/shellctl.db", 1000, store::jobs_db::open_mode::create_schema);
      fill(db);
    }
    start();
  }

  void start() {
    sys.emplace(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
    auto db = std::make_shared<store::jobs_db>(dir + "/shellctl.db", 1000,
                                               store::jobs_db::open_mode::create_schema);
    job_settings js;
    js.state_dir = dir;
    js.runtime_dir = dir + "/runtime";
    js.default_cwd = "/tmp";
    js.state_dir_canonical = dir;
    js.server_home_canonical = "/tmp";
    js.runner_link = dir + "/runtime/bin/shellctl-runner";
    js.isolation = false;
    store_actor = sys->spawn(job_store, db, std::shared_ptr<io::native::worker_budget>{});
    tmux = sys->spawn(tmux_stand_in, alive_sessions, &seen);
    watcher = sys->spawn(watcher_stand_in, &seen);
    cleanup = sys->spawn(cleanup_worker);
    reaper = sys->spawn(cgroup_reaper, cgroup_reaper_settings{});
    metrics = sys->spawn(metrics_registry, store_actor);
    // The log is off: these tests read answers, not stderr (tests/e2e/http/test_logs.py does).
    events = sys->spawn(event_log, event_log_settings{shellctl::io::log::format::off, {}});
    registry = sys->spawn(job_registry, js, store_actor, tmux, watcher, cleanup, metrics, events, reaper);
    sched->run();
  }

  // Sends `req` to the registry from a client actor; the answer lands in `out`.
  template <class Request, class Reply>
  void ask(Request req, std::optional<Reply>& out, std::optional<job_error_view>& err) {
    auto reg = registry;
    sys->spawn([reg, req, &out, &err](caf::event_based_actor* client) {
      client->request(reg, std::chrono::seconds(60), req)
          .then([&out](Reply& r) { out = std::move(r); },
                [&err](caf::error& e) { err = read_job_error(e); });
    });
  }
};


}  // namespace shellctl::test
