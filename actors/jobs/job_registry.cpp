#include "actors/jobs/job_registry.hpp"

#include <tuple>

#include "actors/protocol/job_requests.hpp"

#include <sys/random.h>

#include <cerrno>

#include <algorithm>
#include <filesystem>
#include <set>
#include <memory>

#include "io/fs/files.hpp"
#include "io/fs/home_views.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/policy/path_rules.hpp"
#include "io/text/clock.hpp"

namespace shellctl::actors {
namespace {

using self_ptr = job_registry_actor::stateful_pointer<job_registry_state>;

// Empty when the kernel gives no randomness (getrandom fails for good): the caller
// answers an error instead of spinning.
std::string random_job_id() {
  unsigned char bytes[8];
  size_t got = 0;
  for (int tries = 0; got < sizeof bytes; ++tries) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0)
      got += static_cast<size_t>(n);
    else if (tries >= 100 || (n < 0 && errno != EINTR && errno != EAGAIN))
      return {};
  }
  static const char hex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += hex[b >> 4];
    id += hex[b & 15];
  }
  return id;
}

job_actor_type spawn_job(self_ptr self, job_row row) {
  auto& st = self->state;
  auto id = row.job_id;
  auto job = self->spawn(job_actor, st.cfg, st.peers, std::move(row));
  st.jobs[id] = job;
  return job;
}

// The job's HOME (the request's, else the server's, which jobs inherit through tmux) must
// be one the server may grant (guarantee G4). Answers the refusal text, "" when fine, and
// sets `view` to the job's same-HOME output view (G7).
std::string check_job_home(const job_settings& cfg, const run_spec& spec, std::string& view) {
  std::optional<std::string> requested;
  for (auto& [k, v] : spec.env)
    if (k == "HOME") requested = v;  // the last one wins, as in the job's environment
  const std::string home = requested.value_or(cfg.default_cwd);
  const std::string what = requested ? "env " : "the job inherits the server's ";
  if (home.empty()) return "";  // the runner refuses it itself (exit 125, as the original)
  if (home[0] != '/') {
    if (!cfg.isolation) return "";
    return what + io::policy::home_verdict_text(io::policy::home_verdict::relative, home);
  }
  const auto canonical = io::policy::canonical_prospective(home);
  if (!canonical) return "";  // not creatable: the runner reports it (exit 125)
  auto verdict = io::policy::check_home(*canonical, cfg.state_dir_canonical,
                                         cfg.server_home_canonical);
  // Without isolation only the state dir itself is off limits (it is masked in every job).
  if (!cfg.isolation && verdict != io::policy::home_verdict::inside_state)
    verdict = io::policy::home_verdict::ok;
  if (verdict != io::policy::home_verdict::ok)
    return what + io::policy::home_verdict_text(verdict, *canonical) +
           (requested ? "" : "; set env.HOME");
  view = io::policy::home_view_dir(cfg.state_dir_canonical, *canonical);
  return "";
}

// Where `cwd` (absolute, cleaned) is in the worker's own view: the same path, except in a
// native scope's worker, whose jobs see the scoped world (io/world/scoped_world.hpp).
std::string scoped_view(const job_settings& cfg, const std::string& cwd) {
  if (!cfg.scope) return cwd;
  const auto& scope = *cfg.scope;
  const std::pair<const char*, const char*> writable[] = {
      {"/home/dify", "/home"}, {"/workspace", "/workspace"}, {"/tmp", "/tmp"}};
  for (const auto& [inside, sub] : writable) {
    const std::string in = inside;
    if (cwd == in || cwd.rfind(in + "/", 0) == 0)
      return scope.payload + sub + cwd.substr(in.size());
  }
  for (const char* tree : {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"}) {
    const std::string t = tree;
    if (cwd == t || cwd.rfind(t + "/", 0) == 0)
      return (scope.image_root == "/" ? "" : scope.image_root) + cwd;
  }
  return scope.payload + "/no-such-directory";  // nothing else is in the world
}

// A run with an Idempotency-Key that was seen before: the same job fields answer for the
// job the first one started, as a wait from offset 0 with this request's own wait fields
// (timeout, output_limit, ...); other job fields are refused. nullopt: the key is new (or
// the run has none).
std::optional<caf::result<job_result>> answer_repeat(self_ptr self, run_request& req) {
  auto& st = self->state;
  if (req.idempotency_key.empty()) return std::nullopt;
  auto it = st.run_keys.find(req.idempotency_key);
  if (it == st.run_keys.end()) return std::nullopt;
  if (it->second.fields_sha256 != req.fields_sha256)
    return make_job_error(job_errc::validation_error,
                          "Idempotency-Key was already used for another job request (job " +
                              it->second.job_id + ")");
  auto job = st.jobs.find(it->second.job_id);
  if (job == st.jobs.end()) return std::nullopt;  // gone meanwhile: the key is free again
  wait_params p = req.spec.wait;
  p.offset = 0;
  return self->delegate(job->second, wait_request{it->second.job_id, p});
}

void remember_run_key(self_ptr self, const run_request& req, const std::string& job_id) {
  if (req.idempotency_key.empty()) return;
  auto& st = self->state;
  // A key whose job went without telling (it cannot: job_removed erases it) is replaced.
  if (auto old = st.run_keys.find(req.idempotency_key); old != st.run_keys.end())
    st.run_key_of_job.erase(old->second.job_id);
  st.run_keys[req.idempotency_key] = io::store::run_key{req.idempotency_key, job_id, req.fields_sha256};
  st.run_key_of_job[job_id] = req.idempotency_key;
}

void forget_run_key(self_ptr self, const std::string& job_id) {
  auto& st = self->state;
  auto it = st.run_key_of_job.find(job_id);
  if (it == st.run_key_of_job.end()) return;
  st.run_keys.erase(it->second);
  st.run_key_of_job.erase(it);
}

caf::result<job_result> admit(self_ptr self, run_request& req) {
  auto& st = self->state;
  if (auto repeat = answer_repeat(self, req)) return std::move(*repeat);
  auto& spec = req.spec;
  // cwd: absent/empty means the server's HOME; relative paths resolve against the
  // server's working directory; cleaned, symlinks kept (docs/api.md "Jobs"). Control
  // characters never reach tmux or a shell (G3).
  std::string given = spec.cwd.empty() ? st.cfg.default_cwd : spec.cwd;
  if (io::policy::has_control_chars(given))
    return make_job_error(job_errc::invalid_cwd, "cwd must not contain control characters");
  std::string cwd = io::fs::absolute_clean(given);
  if (given.empty() || !io::fs::is_dir(scoped_view(st.cfg, cwd)))
    return make_job_error(job_errc::invalid_cwd, "cwd is not a directory: " + given);
  // tmux allocates the whole screen (and we keep no scrollback): the size is bounded.
  if (spec.cols < 0 || spec.cols > 4096 || spec.rows < 0 || spec.rows > 4096)
    return make_job_error(job_errc::validation_error,
                          "terminal cols and rows must be between 1 and 4096");
  // A scope's job has the scope's HOME, whatever the request says (the runner sets it).
  if (!st.cfg.scope)
    if (auto why = check_job_home(st.cfg, spec, spec.home_view); !why.empty())
      return make_job_error(job_errc::validation_error, why);
  if (auto why = io::sandbox::cgroups::check_run_limits(spec.limits, st.cfg.job_controllers, st.cfg.job_limits);
      !why.empty())
    return make_job_error(job_errc::validation_error, why);
  std::string id;
  for (int attempt = 0; attempt < 20 && id.empty(); ++attempt) {
    std::string candidate = random_job_id();
    if (candidate.empty()) break;
    if (io::fs::make_dir(io::fs::join(st.cfg.state_dir, "jobs/" + candidate), 0700))
      id = candidate;
  }
  if (id.empty())
    return make_job_error(job_errc::job_id_collision, "Failed to allocate a unique job id");
  job_row row;
  row.job_id = id;
  row.script_path = "jobs/" + id + "/script";
  row.output_path = "jobs/" + id + "/output.log";
  row.cwd = cwd;
  row.terminal_cols = spec.cols;
  row.terminal_rows = spec.rows;
  row.status = job_status::created;
  row.session_name = "shellctl-" + id;
  row.pane_target = "shellctl-" + id + ":0.0";
  row.created_at = io::text::utc_now();
  row.updated_at = row.created_at;
  row.mode = spec.mode;
  st.newest_first.push_front(id);
  remember_run_key(self, req, id);
  // The new actor starts the job and answers the requester itself.
  return self->delegate(spawn_job(self, std::move(row)), std::move(req));
}

// GET /v1/jobs: the job actors report their (materialized) state, newest first; the
// answer keeps that order, applies the status filter, then the limit (docs/api.md "Jobs").
// Only as many actors are asked as the answer can still use — a window of the remaining
// limit (at least 16), then the next window if jobs vanished meanwhile or the filter left
// room — so a list costs O(limit), not O(jobs), however many idle jobs there are.
struct list_walk {
  std::vector<job_actor_type> targets;  // newest first
  std::size_t next = 0;                 // the first target not asked yet
  list_request req;
  job_list out;
  answer<job_list> reply;
};

void ask_list_window(self_ptr self, const std::shared_ptr<list_walk>& walk) {
  const std::size_t need = walk->req.limit - std::min(walk->req.limit, walk->out.jobs.size());
  const std::size_t left = walk->targets.size() - walk->next;
  const std::size_t n = std::min(left, std::max<std::size_t>(need, 16));
  if (need == 0 || n == 0) {
    walk->reply.ok(std::move(walk->out));
    return;
  }
  auto window = std::make_shared<std::vector<std::optional<job_info>>>(n);
  auto outstanding = std::make_shared<std::size_t>(n);
  auto absorb = [self, walk, window] {
    for (auto& i : *window) {
      if (!i) continue;  // vanished meanwhile
      if (walk->req.filtered && (!walk->req.status || i->status != *walk->req.status)) continue;
      if (walk->out.jobs.size() >= walk->req.limit) break;
      walk->out.jobs.push_back(std::move(*i));
    }
    ask_list_window(self, walk);
  };
  const std::size_t first = walk->next;
  walk->next += n;
  for (std::size_t k = 0; k < n; ++k) {
    self->request(walk->targets[first + k], std::chrono::seconds(30), info_request{})
        .then(
            [window, outstanding, absorb, k](job_info& info) {
              (*window)[k] = std::move(info);
              if (--*outstanding == 0) absorb();
            },
            [outstanding, absorb](caf::error&) {
              if (--*outstanding == 0) absorb();
            });
  }
}

caf::result<job_list> list(self_ptr self, const list_request& req) {
  auto& st = self->state;
  auto walk = std::make_shared<list_walk>();
  walk->req = req;
  walk->reply = answer_later<job_list>(self);
  for (auto& id : st.newest_first) {
    auto it = st.jobs.find(id);
    if (it != st.jobs.end()) walk->targets.push_back(it->second);
  }
  ask_list_window(self, walk);
  return walk->reply.promise();
}

// A job directory without a row is what a crash leaves between the directory's
// creation and the row's insert, or between a delete's row removal and its rm -rf:
// no client ever saw such a job (or it was deleted), so it goes (D8).
void remove_orphan_dirs(self_ptr self, const std::vector<job_row>& rows) {
  // What a crash left in the trash goes first (the worker runs these in order).
  self->send(self->state.peers.cleanup, remove_tree{self->state.cfg.trash_dir()});
  std::set<std::string> known;
  for (auto& r : rows) known.insert(r.job_id);
  std::error_code ec;
  auto jobs_dir = io::fs::join(self->state.cfg.state_dir, "jobs");
  for (auto& entry : std::filesystem::directory_iterator(jobs_dir, ec)) {
    auto name = entry.path().filename().string();
    if (!known.count(name) && !self->state.jobs.count(name))
      self->send(self->state.peers.cleanup,
                 remove_tree{io::fs::move_aside(entry.path().string(), self->state.cfg.trash_dir())});
  }
  for (auto& [id, job] : self->state.jobs) known.insert(id);
  io::fs::prune_home_views(self->state.cfg.state_dir, known);
}

// A job cgroup (docs/jobs.md "Containment") under our root whose job has no row (a delete that a
// crash cut short between the row's removal and the cgroup's) holds nothing any API call can reach:
// it is killed and removed. A job with a row ends its own cgroup (its actor decides, at recovery,
// whether the job still runs).
void end_orphan_cgroups(self_ptr self, const std::vector<job_row>& rows) {
  const auto& root = self->state.cfg.cgroup_root;
  if (root.empty()) return;
  std::set<std::string> known;
  for (auto& r : rows) known.insert(r.job_id);
  for (const auto& id : io::sandbox::cgroups::job_ids(root)) {
    if (known.count(id) || self->state.jobs.count(id)) continue;
    const auto path = io::sandbox::cgroups::job_path(root, id);
    self->request(self->state.peers.reaper, caf::infinite, end_cgroup{path})
        .then(
            [self, path](cgroup_ended&) {
              self->send(self->state.peers.log,
                         log_event{io::log::level::info, "orphan job cgroup ended",
                                   {{"event", "cgroup_orphan_ended"}, {"cgroup", path}}});
            },
            [self, path](caf::error& e) {
              self->send(self->state.peers.log,
                         log_event{io::log::level::warn, "orphan job cgroup " + path + " not ended: " + error_text(e),
                                   {{"cgroup", path}}});
            });
  }
}

job_registry_actor::behavior_type serving(self_ptr self);

// Recovery's second half: every row gets its actor, told whether its session exists. The
// answer waits until every job has settled (its row true again): the startup retention GC
// that follows reads the rows. Serving starts now; a job that takes longer than the bound
// only makes the GC read an older row (a job that ended while the server was down is then
// collected at the next interval instead). A failed session listing is the answer's error.
void recover_rows(self_ptr self, caf::typed_response_promise<recovered> rp, store_rows rows,
                  const std::set<std::string>& sessions, caf::error listing_failed) {
  remove_orphan_dirs(self, rows.rows);
  end_orphan_cgroups(self, rows.rows);
  for (auto& k : rows.run_keys) {
    self->state.run_key_of_job[k.job_id] = k.key;
    self->state.run_keys[k.key] = k;
  }
  auto left = std::make_shared<std::size_t>(1);
  auto one_settled = [rp, listing_failed, left]() mutable {
    if (--*left != 0) return;
    if (listing_failed)
      rp.deliver(listing_failed);
    else
      rp.deliver(recovered{});
  };
  for (auto& row : rows.rows) {
    if (self->state.jobs.count(row.job_id)) continue;
    bool alive = sessions.count(row.session_name) > 0;
    self->state.newest_first.push_back(row.job_id);
    auto job = spawn_job(self, row);
    ++*left;
    self->request(job, std::chrono::seconds(30), recover_job{alive})
        .then([one_settled](job_recovered&) mutable { one_settled(); },
              [one_settled](caf::error&) mutable { one_settled(); });
  }
  if (!listing_failed) self->become(serving(self));
  one_settled();
}

// A request about one job goes to its actor, which answers the requester (delegation):
// one handler for each of job_request_interface's requests.
struct to_job {
  self_ptr self;
  template <class Request, class Reply>
  auto operator()() const {
    return [self = self](Request& req) -> caf::result<Reply> {
      auto it = self->state.jobs.find(req.job_id);
      if (it == self->state.jobs.end()) return make_job_error(job_errc::job_not_found, "Unknown job id");
      return self->delegate(it->second, std::move(req));
    };
  }
};

// Recovering: a message that needs the recovered registry waits in the mailbox.
template <class Message, class Reply = void>
auto wait_for_recovery() {
  return [](Message&) -> caf::result<Reply> { return caf::skip; };
}
struct wait_for_recovery_of {
  template <class Request, class Reply>
  auto operator()() const {
    return wait_for_recovery<Request, Reply>();
  }
};

// Serving: every job exists as an actor; requests go straight to them.
job_registry_actor::behavior_type serving(self_ptr self) {
  return std::apply([self](auto... job_requests) -> job_registry_actor::behavior_type {
    return {
      [self](run_request& req) -> caf::result<job_result> {
        try {
          return admit(self, req);
        } catch (const std::exception& e) {
          return make_job_error(job_errc::internal_error, e.what());
        }
      },
      job_requests...,
      [self](list_request& req) { return list(self, req); },
      [self](store_usage& req) -> caf::result<store_usage_reply> {
        return self->delegate(self->state.peers.store, req);
      },
      [](recover_all&) -> recovered { return {}; },  // recovered already
      [self](job_removed& m) -> removal_ack {
        auto& st = self->state;
        st.jobs.erase(m.job_id);
        forget_run_key(self, m.job_id);
        auto it = std::find(st.newest_first.begin(), st.newest_first.end(), m.job_id);
        if (it != st.newest_first.end()) st.newest_first.erase(it);
        return {};
      },
      [self](collect_jobs& m) {
        for (auto& id : m.ids) {
          auto it = self->state.jobs.find(id);
          if (it != self->state.jobs.end()) self->send(it->second, collect_if_expired{m.cutoff});
        }
      },
      [self](shutdown_jobs&) {
        for (auto& [id, job] : self->state.jobs) self->send(job, shutdown_jobs{});
        self->state.jobs.clear();
        self->quit();
      },
    };
  }, job_request_handlers(to_job{self}));
}

}  // namespace

job_registry_actor::behavior_type job_registry(
    job_registry_actor::stateful_pointer<job_registry_state> self, job_settings cfg,
    job_store_actor store, tmux_server_actor tmux, fs_watcher_actor watcher,
    cleanup_worker_actor cleanup, metrics_registry_actor metrics, event_log_actor log,
    cgroup_reaper_actor reaper) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.peers = job_peers{std::move(store), std::move(tmux), std::move(watcher),
                       caf::actor_cast<job_registry_actor>(self), std::move(cleanup),
                       std::move(metrics), std::move(log), std::move(reaper)};
  // Recovering: until every row has its actor, job requests wait in the mailbox
  // (caf::skip) instead of meeting a half-built registry; then `serving` takes over and
  // the skipped requests are handled in their order. The HTTP front (and /healthz) is
  // up meanwhile, so start-up time does not grow with the number of jobs (D8).
  // The two requests below are unbounded on purpose: startup waits for them, and a store
  // or tmux that never answers leaves nothing to serve (`serve` reports it and stops).
  return std::apply([self](auto... job_requests) -> job_registry_actor::behavior_type {
    return {
      [self](recover_all&) -> caf::result<recovered> {
        auto rp = self->make_response_promise<recovered>();
        self->request(self->state.peers.store, caf::infinite, store_load_all{})
            .then(
                [self, rp](store_rows& rows) mutable {
                  self->request(self->state.peers.tmux, caf::infinite, list_sessions_request{})
                      .then([self, rp, rows](session_list& sessions) mutable {
                              recover_rows(self, rp, rows, sessions.names, caf::error{});
                            },
                            [self, rp, rows](caf::error& e) mutable { recover_rows(self, rp, rows, {}, e); });
                },
                [rp](caf::error& e) mutable { rp.deliver(e); });
        return rp;
      },
      job_requests...,
      wait_for_recovery<run_request, job_result>(),
      wait_for_recovery<store_usage, store_usage_reply>(),
      wait_for_recovery<list_request, job_list>(),
      wait_for_recovery<job_removed, removal_ack>(),
      wait_for_recovery<collect_jobs>(),
      [self](shutdown_jobs&) { self->quit(); },
    };
  }, job_request_handlers(wait_for_recovery_of{}));
}

}  // namespace shellctl::actors
