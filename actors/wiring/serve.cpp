#include "actors/wiring/serve.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "actors/edge/api_edge.hpp"
#include "actors/edge/front.hpp"
#include "actors/edge/views.hpp"
#include "actors/services/cgroup_reaper.hpp"
#include "actors/services/cleanup_worker.hpp"
#include "actors/services/event_log.hpp"
#include "actors/services/fs_watcher.hpp"
#include "actors/files/home_files.hpp"
#include "actors/jobs/job_registry.hpp"
#include "actors/services/job_store.hpp"
#include "actors/metrics/metrics_registry.hpp"
#include "actors/jobs/retention_gc.hpp"
#include "actors/snapshot/snapshot_gate.hpp"
#include "actors/services/tmux_server.hpp"
#include "actors/native/network/worker_proxy.hpp"
#include "io/fs/file_roots.hpp"
#include "io/fs/files.hpp"
#include "io/http/server.hpp"
#include "io/json/json.hpp"
#include "io/native/worker/worker_budget.hpp"
#include "io/proc/oom_score.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/sandbox/job_peers.hpp"
#include "io/sandbox/sock_diag.hpp"
#include "io/sandbox/landlock.hpp"
#include "io/sandbox/namespaces.hpp"
#include "io/world/world_probe.hpp"
#include "io/policy/policy.hpp"
#include "io/tmux/pane_shell.hpp"

namespace shellctl::actors {
namespace {

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// The server's own lines (startup, warnings, fatal errors) in the log's format: in text
// the lines an operator (and a grep) knows, "shellctl: warning: ..."; in JSON the same
// words as msg, with fields a collector can filter on.
class server_log {
 public:
  server_log(io::log::format f, io::log::level min) : format_(f), min_(min) {}
  void say(io::log::level l, const std::string& text, const std::vector<io::log::field>& fields = {}) const {
    if (l < min_ && l != io::log::level::error) return;  // errors are always said
    std::string out;
    if (format_ == io::log::format::json)
      io::log::append_line(out, format_, io::log::now_unix_us(), l, text, fields);
    else
      out = text + "\n";
    io::log::write_stderr(out);
  }
  io::log::format format() const { return format_; }
  io::log::level min_level() const { return min_; }

 private:
  io::log::format format_;
  io::log::level min_;
};

std::string own_dir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string exe(buf, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/'));
}

void install_runner(const std::string& link, const server_log& log) {
  ::unlink(link.c_str());
  auto target = find_helper("shellctl-runner", false);
  if (target.empty()) {
    log.say(io::log::level::warn, "shellctl: warning: shellctl-runner not found; jobs will fail to start");
    return;
  }
  if (::symlink(target.c_str(), link.c_str()) == 0) return;
  // A file system without symlinks gets the original's two-line wrapper.
  io::fs::write_file(link, "#!/bin/sh\nexec '" + target + "' \"$@\"\n", 0755);
}

}  // namespace

// A helper binary (docs/layout.md "The binaries"): next to our own executable first, then
// PATH, then the libexec directory `meson install` puts the helpers in (compiled in), so an
// installed server needs no PATH entry for them while a PATH entry still overrides them.
std::string find_helper(const std::string& name, bool bare_fallback) {
  auto dir = own_dir();
  if (!dir.empty() && executable(dir + "/" + name)) return dir + "/" + name;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t i = 0;
    while (i <= p.size()) {
      size_t j = p.find(':', i);
      if (j == std::string::npos) j = p.size();
      std::string candidate = p.substr(i, j - i) + "/" + name;
      if (j > i && executable(candidate)) return bare_fallback ? name : candidate;
      i = j + 1;
    }
  }
  const std::string installed = std::string(SHELLCTL_HELPER_DIR) + "/" + name;
  if (executable(installed)) return installed;
  return bare_fallback ? name : std::string();
}

// How the confined Home helper is started (io/home/helper.hpp): it is confined as a job of
// the server's HOME is, so it gets the jobs' settings: the system trees read-only (the
// policy's, with path isolation off the defaults), namespaces where jobs have them,
// Landlock required where jobs require it. The file worker also gets the granted trees
// (SHELLCTL_LANDLOCK_RW_PATHS), the file API's other roots.
home_helper_settings home_helper_for(const io::config::serve_config& cfg,
                                     const io::sandbox::namespace_probe& probe, const job_settings& js) {
  auto get = [&cfg](const char* name) -> const char* {
    for (const auto& [k, v] : cfg.isolation_env)
      if (k == name) return v.c_str();
    return nullptr;
  };
  const io::policy::path_policy policy =
      cfg.isolation ? io::policy::policy_from_env(get) : io::policy::default_policy();
  home_helper_settings h;
  h.binary = find_helper("shellctl-home", false);
  h.state_dir = js.state_dir;
  h.args = {"--state-dir", js.state_dir_canonical, "--root-mount", js.runtime_dir + "/home-root"};
  for (const auto& d : policy.ro_dirs) {
    if (d == "/proc" || d.rfind("/proc/", 0) == 0 || d == "/dev" || d.rfind("/dev/", 0) == 0) continue;
    h.args.insert(h.args.end(), {"--ro", d});
  }
  if (!(cfg.namespaces && probe.available)) h.args.push_back("--no-namespaces");
  if (!cfg.isolation) h.args.push_back("--landlock-optional");
  if (const char* rw = get("SHELLCTL_LANDLOCK_RW_PATHS"))
    for (const auto& p : io::policy::split_path_list(rw)) h.file_args.insert(h.file_args.end(), {"--file-root", p});
  return h;
}

io::sandbox::namespace_probe probe_job_sandbox(const io::config::serve_config& cfg) {
  io::sandbox::namespace_probe probe;
  if (!cfg.namespaces) return probe;  // SHELLCTL_JOB_NAMESPACES=off: jobs get none
  probe.available = io::sandbox::namespaces_available(probe.why);
  if (!probe.available) return probe;
  // The world of a job of the server's HOME in its own cwd, as the runner builds it
  // (io/proc/runner.cpp init_role) from the settings the server hands it (D7).
  auto get = [&cfg](const char* name) -> const char* {
    for (const auto& [k, v] : cfg.isolation_env)
      if (k == name) return v.c_str();
    return nullptr;
  };
  io::world::world_spec w;
  w.policy = io::policy::policy_from_env(get);
  w.own_root = w.policy.isolation;
  struct stat st {};
  if (::stat(cfg.state_dir.c_str(), &st) == 0) w.state_dir = io::fs::canonical_or(cfg.state_dir);
  w.home = cfg.home.empty() ? "" : io::fs::canonical_or(cfg.home);
  w.cwd = w.home;
  if (w.own_root && (w.home.empty() || ::stat(w.home.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    probe.world_problem = "the server's HOME (" + cfg.home + ") is not a directory: a job has no HOME to be granted";
    return probe;
  }
  probe.world_problem = io::world::world_problem(w);
  return probe;
}

// What jobs will run in, probed once so that an operator learns it at startup rather than
// from every job failing with 125: "" in `problem` when jobs can start.
std::string describe_sandbox(const io::config::serve_config& cfg,
                             const io::sandbox::namespace_probe& probe, const server_log& log,
                             std::string& problem) {
  const std::string& ns_why = probe.why;
  const bool ns = cfg.namespaces && probe.available;
  const int abi = io::sandbox::landlock_abi();
  std::string text;
  if (cfg.isolation) {
    text = "path isolation on (landlock " +
           (abi > 0 ? "ABI " + std::to_string(abi) : std::string("unavailable")) + ", " +
           (ns ? "own namespaces" : "no namespaces") + ")";
    if (!ns)
      problem = ns_why;
    else if (abi <= 0)
      problem = "Landlock is not available";
  } else {
    text = std::string("path isolation off (") +
           (ns ? "own namespaces" : cfg.namespaces ? "no namespaces: " + ns_why : "namespaces off") +
           ")";
  }
  // With the namespaces there, a job's first process builds its world in them whether
  // isolation is on or off: a world that cannot be built fails every job.
  if (problem.empty() && ns) problem = probe.world_problem;
  if (!problem.empty())
    log.say(io::log::level::warn,
            "shellctl: warning: this machine cannot build the job sandbox (" + problem +
                "): every job fails with exit code 125" +
                (cfg.isolation && !ns ? "; SHELLCTL_ENABLE_PATH_ISOLATION=false runs jobs without path isolation"
                                      : ""));
  return text;
}

int serve(const io::config::serve_config& cfg, const io::sandbox::namespace_probe& probe) {
  // --log-format: text on a terminal, JSON lines otherwise (a collector reads a pipe).
  const bool json_log = cfg.log_format == "json" || (cfg.log_format.empty() && ::isatty(STDERR_FILENO) != 1);
  const server_log log(json_log ? io::log::format::json : io::log::format::text,
                       static_cast<io::log::level>(std::clamp(cfg.log_level, 0, 3)));
  std::string sandbox_problem;  // what fails every job's start; "" = nothing the probe found
  std::string sandbox_text = describe_sandbox(cfg, probe, log, sandbox_problem);
  // Under memory pressure the job is the OOM killer's victim, never the control plane:
  // the server (and the tmux server and helpers it starts, which inherit it) keeps a low
  // score where it may lower it, every job process a high one (set by the runner).
  if (!io::proc::oom_score::write_self(io::proc::oom_score::server_adj))
    log.say(io::log::level::info, "shellctl: oom_score_adj stays " +
                                      std::to_string(io::proc::oom_score::read_self().value_or(0)) +
                                      " (lowering it needs CAP_SYS_RESOURCE): jobs get " +
                                      std::to_string(cfg.job_oom_score_adj));
  job_settings js;
  try {
    // The state dir by its real path. A job's sandbox mounts its new root on the job's own
    // directory and names the job's files by these paths, so a symlink on the way (systemd's
    // DynamicUser makes /var/lib/<name> one, into /var/lib/private) would leave the job's
    // script out of its reach. Without symlinks this is the path as given.
    const std::string given = io::fs::absolute_clean(cfg.state_dir);
    io::fs::make_dirs(given, 0700);
    js.state_dir = io::fs::canonical_or(given);
  } catch (const std::exception& e) {
    log.say(io::log::level::error, std::string("shellctl: initialize: ") + e.what());
    return 1;
  }
  js.runtime_dir = js.state_dir + "/runtime";  // D10: --state-dir moves it too
  js.tmux_socket = js.runtime_dir + "/tmux.sock";
  js.runner_link = js.runtime_dir + "/bin/shellctl-runner";
  js.sanitizer = find_helper("shellctl-sanitize-pty", true);
  js.default_cwd = cfg.home;
  js.runner_policy_env = cfg.isolation_env;
  js.runner_policy_env.emplace_back("SHELLCTL_STATE_DIR", js.state_dir);
  js.runner_policy_env.emplace_back("SHELLCTL_JOB_OOM_SCORE_ADJ", std::to_string(cfg.job_oom_score_adj));
  js.isolation = cfg.isolation;
  const auto& worker = cfg.worker;
  if (worker.on) {
    // A native scope's worker: its jobs run in the scoped world (io/world/scoped_world.hpp).
    js.default_cwd = "/home/dify";
    js.isolation = false;
    scope_policy scope;
    scope.payload = worker.payload;
    scope.image_root = worker.image_root;
    scope.wall_limit = worker.job_wall;
    scope.wall_until_epoch = worker.deadline_epoch;
    js.runner_policy_env.insert(js.runner_policy_env.end(), worker.runner_env.begin(),
                                worker.runner_env.end());
    sandbox_text = "native scope " + worker.scope_id + " generation " +
                   std::to_string(worker.generation);
    // The output budget: every byte reserved in the spool's catalog before it is written,
    // through `shellctl native-budget` (this very binary) from the sanitizer and the runner.
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    scope.budget.helper = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : "shellctl";
    scope.budget.db = js.state_dir + "/shellctl.db";
    js.runner_policy_env.emplace_back("SHELLCTL_NATIVE_JOB_BUDGET_HELPER", scope.budget.helper);
    js.runner_policy_env.emplace_back("SHELLCTL_NATIVE_JOB_BUDGET_DB", scope.budget.db);
    js.scope = std::move(scope);
  }

  // Jobs' connections to the API (G5): refused by their socket's cgroup where the kernel
  // reports it (sock_diag) and jobs have cgroups; said at startup and in /v1/info.
  bool api_refuses_jobs = false;
  std::string api_jobs_text;

  // Containment (docs/jobs.md "Containment"): the job root, decided once. A root that was asked
  // for and cannot be used, or limits without their controllers, stop startup; finding none by
  // detection is the fallback (process group and session), said once here.
  io::sandbox::cgroups::root_choice root;
  {
    std::string err;
    if (!io::sandbox::cgroups::choose_root(cfg.cgroup_root, js.state_dir, root, err) ||
        !io::sandbox::cgroups::prepare_limits(root.path, cfg.job_limits, err)) {
      log.say(io::log::level::error, "shellctl: initialize: " + err);
      io::sandbox::cgroups::release_root(root);
      return 1;
    }
    js.cgroup_root = root.path;
    js.job_limits = cfg.job_limits;
    js.job_controllers = io::sandbox::cgroups::enable_job_controllers(root.path);
    if (root.path.empty()) {
      if (cfg.cgroup_root != "none")
        log.say(io::log::level::warn,
                "shellctl: warning: no cgroup v2 containment (" + root.why_none +
                    "): a job is ended by its process group and session (and its PID namespace), "
                    "so a daemon it started without namespaces can outlive it");
      sandbox_text += ", no cgroup containment";
    } else {
      // Containment does not depend on nsdelegate (a job's cgroup view is the wall,
      // io/world/job_world.hpp); the operator learns what the host has all the same.
      const auto delegate = io::sandbox::cgroups::nsdelegate(root.path);
      js.cgroup_nsdelegate = delegate;
      sandbox_text += ", cgroup " + root.path +
                      (delegate ? (*delegate ? " (nsdelegate)" : " (no nsdelegate)") : "");
      js.runner_policy_env.emplace_back("SHELLCTL_JOB_CGROUP_ROOT", root.path);
      const auto& c = js.job_controllers;
      const std::string offered = std::string(c.memory ? " memory" : "") + (c.pids ? " pids" : "") + (c.cpu ? " cpu" : "");
      sandbox_text += offered.empty() ? ", no per-run limits (the job root has no memory, pids or cpu controller)"
                                      : ", per-run limits:" + offered;
    }
  }
  if (!worker.on) {
    if (js.cgroup_root.empty()) {
      api_jobs_text = ", jobs' connections to the API not told apart (no cgroup containment)";
    } else {
      const auto probe = io::sandbox::probe_loopback();
      api_refuses_jobs = probe.result == io::sandbox::peer_lookup::found;
      api_jobs_text = api_refuses_jobs ? ", jobs' connections to the API refused"
                                       : ", jobs' connections to the API not told apart (" + probe.err + ")";
    }
    sandbox_text += api_jobs_text;
  }

  std::shared_ptr<io::store::jobs_db> db;
  std::shared_ptr<io::native::worker_budget> budget;  // a scope worker's admissions
  try {
    for (auto& d : {js.state_dir, js.runtime_dir, js.state_dir + "/jobs", js.runtime_dir + "/bin",
                    js.runtime_dir + "/home-root"}) {
      io::fs::make_dirs(d, 0700);
    }
    db = std::make_shared<io::store::jobs_db>(js.state_dir + "/shellctl.db",
                                              js.sqlite_busy_timeout_ms,
                                              io::store::jobs_db::open_mode::create_schema);
    if (worker.on) budget = std::make_shared<io::native::worker_budget>(js.state_dir + "/shellctl.db");
    install_runner(js.runner_link, log);
    js.state_dir_canonical = io::fs::canonical_or(js.state_dir);
    js.server_home_canonical = io::fs::canonical_or(cfg.home);
  } catch (const std::exception& e) {
    log.say(io::log::level::error, std::string("shellctl: initialize: ") + e.what());
    return 1;
  }

  caf::actor_system_config sys_cfg;
  // Work sharing: idle scheduler threads sleep on a condition variable until a message
  // arrives. CAF's default work stealing polls (spins, then naps in 50 us and 10 ms steps),
  // which cost this server 8-40 % of a CPU while idle and competed with tmux and the job's
  // processes for the 2 CPUs on every job (measured side by side, bench/jobs_bench.py).
  // A few messages per job need no stealing.
  sys_cfg.set("scheduler.policy", caf::atom("sharing"));
  caf::actor_system sys{sys_cfg};
  auto store = sys.spawn<caf::detached>(job_store, db, budget);
  db.reset();
  budget.reset();  // the store's thread is the only user from here on
  // Detached: its writes to the control client block while a stopped tmux server does not
  // read, and that must never hold a scheduler thread.
  auto tmux = sys.spawn<caf::detached>(tmux_server, js.tmux_socket,
                                       io::tmux::with_pane_shell(cfg.tmux_env));
  auto watcher = sys.spawn(fs_watcher);
  auto cleanup = sys.spawn<caf::detached>(cleanup_worker);
  auto metrics = sys.spawn<caf::detached>(metrics_registry, store);
  auto events = sys.spawn<caf::detached>(event_log, event_log_settings{log.format(), log.min_level()});
  auto reaper = sys.spawn<caf::detached>(cgroup_reaper, cgroup_reaper_settings{});
  auto registry = sys.spawn(job_registry, js, store, tmux, watcher, cleanup, metrics, events, reaper);
  // One edge per scheduler thread: decoding bodies and encoding answers (output windows of
  // up to 512 KiB) then runs in parallel; the edges hold no state, so any request may go to
  // any of them (the front deals them out in turn).
  // Home operations (snapshots, the file API) run in the confined helper, never in the
  // server (io/home/helper.hpp): how to start it.
  const char* home_env = std::getenv("HOME");
  const home_helper_settings helper = home_helper_for(cfg, probe, js);
  // Home snapshots: the server's own $HOME, never a guessed path (docs/api.md "Home snapshots").
  auto gate = sys.spawn(snapshot_gate,
                        snapshot_settings{home_env ? home_env : "", cfg.snapshot_timeout, helper}, metrics);
  // The file API (docs/api.md "Files"): the server's $HOME and the job-writable trees,
  // served by the confined file worker; never the state dir.
  auto home_worker = sys.spawn<caf::detached>(home_files, home_files_settings{home_env ? home_env : "", helper});
  file_settings files;
  files.worker = home_worker;
  std::vector<api_edge_actor> edges;
  for (std::size_t i = 0; i < std::max<std::size_t>(1, sys.scheduler().num_workers()); ++i)
    edges.push_back(sys.spawn(api_edge, registry, gate, metrics, cfg.snapshot_timeout, files, js.cgroup_root));
  auto gc = sys.spawn(retention_gc, retention_settings{cfg.retention, cfg.gc_interval}, store,
                      registry, metrics);
  // A scope's worker with network targets: the jobs' proxy
  // (docs/native-scopes.md "The network broker"). Its stop pipe's write end closes with
  // stop_all, and the proxy and its connections end.
  int proxy_stop = -1;
  auto stop_all = [&] {
    if (proxy_stop >= 0) ::close(proxy_stop);
    proxy_stop = -1;
    for (auto& e : edges) caf::anon_send(e, shutdown_jobs{});
    caf::anon_send(gate, shutdown_jobs{});
    caf::anon_send(home_worker, shutdown_jobs{});
    caf::anon_send(gc, shutdown_jobs{});
    caf::anon_send(registry, shutdown_jobs{});
    caf::anon_send(watcher, shutdown_jobs{});
    caf::anon_send(tmux, shutdown_jobs{});
    caf::anon_send(store, shutdown_jobs{});
    caf::anon_send(cleanup, shutdown_jobs{});
    caf::anon_send(reaper, shutdown_jobs{});
    caf::anon_send(metrics, shutdown_jobs{});
    caf::anon_send(events, shutdown_jobs{});
  };
  if (worker.on && !worker.proxy_targets.empty()) {
    std::string err;
    const int listen_fd = listen_proxy(err);
    int stop[2];
    if (listen_fd < 0 || ::pipe2(stop, O_CLOEXEC) != 0) {
      if (listen_fd >= 0) ::close(listen_fd);
      if (err.empty()) err = std::string("proxy: pipe: ") + std::strerror(errno);
      log.say(io::log::level::error, "shellctl: initialize: " + err);
      if (worker.on_listening) worker.on_listening(err);
      stop_all();
      return 1;
    }
    auto p = std::make_shared<proxy_settings>();
    for (const auto& [host, port] : worker.proxy_targets) p->targets.push_back({host, port});
    p->broker_socket = worker.broker_socket;
    sys.spawn<caf::detached>(worker_proxy, std::shared_ptr<const proxy_settings>(p), listen_fd, stop[0]);
    proxy_stop = stop[1];
  }

  {
    caf::scoped_actor self{sys};
    std::string failure;
    self->request(tmux, caf::infinite, tmux_start{})
        .receive([&](tmux_ready&) {}, [&](caf::error& e) { failure = "tmux: " + error_text(e); });
    if (!failure.empty()) {
      log.say(io::log::level::error, "shellctl: initialize: " + failure);
      stop_all();
      return 1;
    }
  }

  io::http::server_config http_cfg;
  http_cfg.host = cfg.listen_host;
  http_cfg.port = cfg.listen_port;
  if (worker.on) {
    // The control socket: its supervisor alone (its uid, by the kernel's word), then the
    // worker control token (docs/native-scopes.md "The scope worker").
    http_cfg.unix_path = worker.control_socket;
    http_cfg.accept_peer = [uid = worker.peer_uid](int, unsigned peer) { return peer == uid; };
  }
  http_cfg.max_connections = cfg.max_connections;
  http_cfg.max_buffered_bytes = cfg.max_buffered_bytes;
  http_cfg.head_timeout = std::max(std::chrono::milliseconds(1),
                                   std::chrono::duration_cast<std::chrono::milliseconds>(cfg.head_timeout));
  if (log.min_level() <= io::log::level::info) http_cfg.access_log = log.format();
  http_cfg.describe = [](const io::http::request& req, std::string& pattern, std::string& job) {
    const auto m = match_route(req.method, req.path);
    if (m.result != route_match::kind::found) return;
    pattern = route_pattern(m.id);
    job = m.job_id;
  };
  // /metrics hears of every answer and connection from the loop thread (one message each,
  // the same direction as the requests themselves).
  http_cfg.on_answered = [metrics](const io::http::access_entry& e) {
    caf::anon_send(metrics, http_observed{e.method, e.route, e.status, e.duration_us});
  };
  http_cfg.on_connections = [metrics](std::size_t open, bool accepted) {
    caf::anon_send(metrics, connections_changed{open, accepted});
  };
  http_cfg.on_refused = [metrics](const char* reason) {
    caf::anon_send(metrics, connection_refused{std::string(reason) == "refused" ? "job" : reason});
  };
  // G5: a connection is a guest until a head with the token comes; guests make room.
  http_cfg.authenticates = [token = cfg.token](const io::http::request& head) {
    return bearer_matches(head.find_header("authorization"), token);
  };
  // No job may call the control API (with or without a token): a TCP connection whose peer
  // socket belongs to a job's cgroup is closed before a byte of it is read. The kernel's
  // answer is one netlink round trip per connection (measured in bench/http_bench.py).
  if (!worker.on && api_refuses_jobs) {
    auto peers = std::make_shared<io::sandbox::job_peers>(js.cgroup_root);
    auto said = std::make_shared<bool>(false);
    http_cfg.accept_tcp = [peers, said, &log](int fd) {
      const auto v = peers->of_connection(fd);
      if (v == io::sandbox::job_peers::verdict::unknown && !*said) {
        *said = true;
        log.say(io::log::level::warn, "shellctl: warning: cannot tell whether a connection comes from a job (" +
                                          peers->why() + "); it is served");
      }
      return v != io::sandbox::job_peers::verdict::job;
    };
  }
  // The route and the token are decided once per request, on the loop thread: on the head
  // when a body follows (G5: a peer without the token, or asking for no route, is answered
  // before its body is read), else on the complete request.
  const std::string token = cfg.token;
  const int abi = io::sandbox::landlock_abi();
  const std::string info = server_info_json(
      {SHELLCTL_VERSION, cfg.isolation && abi > 0 ? std::optional<int>(abi) : std::nullopt,
       !js.cgroup_root.empty(), js.cgroup_nsdelegate, api_refuses_jobs,
       io::proc::oom_score::read_self(), cfg.job_oom_score_adj, js.job_controllers, js.job_limits,
       sandbox_problem});
  std::string identity;
  if (worker.on) {
    io::json::writer w;
    w.begin_object();
    w.key("scope_id").value(worker.scope_id);
    w.key("generation").value(static_cast<std::int64_t>(worker.generation));
    w.end_object();
    identity = w.finish();
  }
  auto check = [token, info, identity, on = worker.on](const io::http::request& req) {
    return on ? check_at_worker_front(req, token, identity) : check_at_front(req, token, info);
  };
  http_cfg.head_check = [check](io::http::request& head) -> std::optional<io::http::response> {
    auto verdict = check(head);
    if (auto* answer = std::get_if<io::http::response>(&verdict)) {
      // Refusals end the connection before the body; /healthz is answered after it.
      if (answer->status >= 400) return std::move(*answer);
      return std::nullopt;
    }
    auto& match = std::get<route_match>(verdict);
    // A restore's archive is extracted as it arrives, never held whole (docs/snapshots.md
    // "Restore"). An upload goes to disk as it arrives (docs/api.md "Files": no size limit,
    // flat memory).
    if (match.id == route::snapshot_restore || match.id == route::file_write) head.stream_body = true;
    head.accepted = std::move(match);
    return std::nullopt;
  };
  // The handler runs on the loop thread only: `next_edge` needs no synchronization.
  std::size_t next_edge = 0;
  io::http::server front(http_cfg, [&edges, &next_edge, check](io::http::request&& req,
                                                               io::http::responder resp) {
    route_match route;
    if (auto* decided = std::any_cast<route_match>(&req.accepted)) {
      route = std::move(*decided);
    } else {
      auto verdict = check(req);
      if (auto* answer = std::get_if<io::http::response>(&verdict)) {
        resp.send(std::move(*answer));
        return;
      }
      route = std::get<route_match>(std::move(verdict));
    }
    auto& edge = edges[next_edge++ % edges.size()];
    caf::anon_send(edge, http_call{std::move(req), std::move(route), std::move(resp)});
  });
  try {
    front.listen();
  } catch (const std::exception& e) {
    log.say(io::log::level::error, std::string("shellctl: ") + e.what());
    if (worker.on_listening) worker.on_listening(e.what());
    stop_all();
    return 1;
  }
  if (worker.on_listening) worker.on_listening("");

  // D8: every row is settled against tmux and the files on disk. Job requests that
  // arrive meanwhile wait in the registry's mailbox; a failure stops the server. The
  // flag is written by this one actor and read after run() returns. The actor accepts no
  // message (it only waits for one answer), so it has no interface to type: the one
  // untyped actor in the tree.
  std::atomic<int> rc{0};
  auto startup = sys.spawn([&, registry, gc](caf::event_based_actor* startup) {
    startup->request(registry, caf::infinite, recover_all{})
        .then(
            [&, gc](recovered&) {
              caf::anon_send(gc, gc_tick{});  // GC once at startup, then every interval
            },
            [&](caf::error& e) {
              log.say(io::log::level::error, "shellctl: initialize: recover: " + error_text(e));
              rc = 1;
              front.stop();
            });
  });
  log.say(io::log::level::info,
          "shellctl serving on " + (worker.on ? worker.control_socket : cfg.listen_text) +
              " (auth " + (cfg.token.empty() ? "off" : "on") + ", " + sandbox_text +
              ", state dir " + js.state_dir + ")",
          {{"listen", cfg.listen_text},
           {"auth", cfg.token.empty() ? "off" : "on"},
           {"sandbox", sandbox_text},
           {"state_dir", js.state_dir},
           {"version", SHELLCTL_VERSION}});
  front.run();
  // The startup actor refers to `front`: it must be gone before `front` is.
  caf::anon_send_exit(startup, caf::exit_reason::user_shutdown);
  caf::scoped_actor{sys}->wait_for(startup);
  stop_all();
  io::sandbox::cgroups::release_root(root);
  return rc;
}

}  // namespace shellctl::actors
