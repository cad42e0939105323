#include "actors/native/scope_actor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "actors/native/network/net_broker.hpp"
#include "io/fs/beneath.hpp"
#include "io/fs/files.hpp"
#include "io/json/json.hpp"
#include "io/native/net/net_sockets.hpp"
#include "io/native/scope/scope_token.hpp"
#include "io/native/worker/worker_client.hpp"
#include "io/native/worker/worker_setup.hpp"
#include "io/native/worker/worker_spawn.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/text/clock.hpp"

namespace shellctl::actors {

namespace native = io::native;

scope_actor_state::~scope_actor_state() {
  if (pidfd >= 0) ::close(pidfd);
  for (int fd : held_fds)
    if (fd >= 0) ::close(fd);
  if (broker_stop >= 0) ::close(broker_stop);  // the broker sees the hang-up and ends
}

namespace {

using self_ptr = scope_actor_type::stateful_pointer<scope_actor_state>;
using cfg_ptr = std::shared_ptr<const supervisor_settings>;

// Descriptors closed when they go out of scope.
struct fd_guard {
  std::vector<int> fds;
  ~fd_guard() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

std::string name_of(const native::scope_record& r) {
  return native::scope_cgroup_name(r.scope_id, r.generation);
}

caf::error err(native_errc code, std::string message) { return make_native_error(code, std::move(message)); }

// One blocking exchange with the catalog: this actor is detached, its thread may wait. The
// catalog's answer, or its error (storage_unavailable), or that it is gone.
template <class Reply, class Msg>
caf::expected<Reply> ask_catalog(self_ptr self, const native_catalog_actor& catalog, Msg msg) {
  caf::expected<Reply> out{err(native_errc::storage_unavailable, "the catalog did not answer")};
  caf::scoped_actor s{self->system()};
  s->request(catalog, caf::infinite, std::move(msg))
      .receive([&](Reply& r) { out = std::move(r); },
               [&](caf::error& e) {
                 out = e.category() == native_error_category
                           ? e
                           : err(native_errc::storage_unavailable, "the catalog is gone: " + self->system().render(e));
               });
  return out;
}

native::worker_identity identity_of(const native::scope_record& r) {
  return {r.scope_id, r.generation, r.worker_pid, r.worker_starttime, r.boot_id};
}

std::string expected_identity(const native::scope_record& r) {
  io::json::writer w;
  w.begin_object();
  w.key("scope_id").value(r.scope_id);
  w.key("generation").value(static_cast<std::int64_t>(r.generation));
  w.end_object();
  return w.finish();
}

native::worker_answer ask_worker(self_ptr self, const cfg_ptr& cfg, const std::string& method,
                                 const std::string& target) {
  native::worker_call c;
  c.socket_path = self->state.socket_path;
  c.control_token = self->state.control_token;
  c.method = method;
  c.target = target;
  c.timeout_ms = static_cast<long>(cfg->worker_call_bound.count());
  return native::call_worker(c);
}

// Whether the worker we hold is alive and is who the catalog says (pidfd, then an identity
// call authenticated with the control token). Reaps a dead child.
bool worker_answers(self_ptr self, const cfg_ptr& cfg, std::string& why) {
  auto& st = self->state;
  if (st.pidfd < 0) {
    why = "no worker is held";
    return false;
  }
  pollfd p{st.pidfd, POLLIN, 0};
  if (::poll(&p, 1, 0) == 1) {
    why = "the worker (pid " + std::to_string(st.record.worker_pid) + ") has exited";
    if (st.worker_is_child) {
      siginfo_t info{};
      ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(st.pidfd), &info, WEXITED | WNOHANG);
    }
    return false;
  }
  const auto a = ask_worker(self, cfg, "GET", "/v1/worker/identity");
  if (!a.reached) {
    why = "the worker's control socket does not answer: " + a.error;
    return false;
  }
  if (a.status != 200 || a.body != expected_identity(st.record)) {
    why = "the worker's identity call answered " + std::to_string(a.status) + " " + a.body;
    return false;
  }
  return true;
}

void release_worker(self_ptr self) {
  auto& st = self->state;
  if (st.pidfd < 0) return;
  if (st.worker_is_child) {
    // The cgroup's end killed it: reap it (bounded: it is dead or dies with the cgroup).
    pollfd p{st.pidfd, POLLIN, 0};
    if (::poll(&p, 1, 2000) == 1) {
      siginfo_t info{};
      ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(st.pidfd), &info, WEXITED | WNOHANG);
    }
  }
  ::close(st.pidfd);
  st.pidfd = -1;
}

// The worker's counters (GET /v1/worker/usage) into the view; the last ones read stay
// when it cannot be asked (a lost worker's spool is gone with it).
void refresh_usage(self_ptr self, const cfg_ptr& cfg, scope_usage& usage) {
  const auto a = ask_worker(self, cfg, "GET", "/v1/worker/usage");
  if (!a.reached || a.status != 200) return;
  auto o = io::json::object::parse(a.body);
  if (!o) return;
  try {
    usage.input_bytes = static_cast<std::uint64_t>(o->get_int("input_bytes").value_or(0));
    usage.output_bytes = static_cast<std::uint64_t>(o->get_int("output_bytes").value_or(0));
    usage.jobs_admitted = static_cast<std::uint64_t>(o->get_int("jobs_admitted").value_or(0));
  } catch (const io::json::type_error&) {
  }
}

// The network's counters, as the catalog holds them (they outlive the worker).
void refresh_net_usage(self_ptr self, const native_catalog_actor& catalog, scope_usage& usage) {
  auto& st = self->state;
  if (st.net.pins.empty()) return;
  const auto n = ask_catalog<catalog_net_state>(self, catalog, catalog_net_read{st.record.scope_id});
  if (!n || !n->budget) return;
  usage.network_bytes = n->budget->bytes_used;
  usage.network_connections = n->budget->conns_used;
}

scope_view view_of(self_ptr self, const cfg_ptr& cfg, const native_catalog_actor& catalog) {
  auto& st = self->state;
  scope_view v;
  v.record = st.record;
  v.targets = st.net.pins;
  refresh_net_usage(self, catalog, st.last_usage);
  if (st.record.state == native::scope_state::ready) {
    refresh_usage(self, cfg, st.last_usage);
    v.transport = scope_transport{"/v1/test-scopes/" + st.record.scope_id,
                                  native::new_scope_token(cfg->token, identity_of(st.record)),
                                  st.record.deadline};
  }
  v.usage = st.last_usage;
  return v;
}

// Commits `to` (CAS from `from`); on success the actor's copy follows.
bool commit(self_ptr self, const native_catalog_actor& catalog,
            std::vector<native::scope_state> from, native::scope_state to,
            const std::string& reason, std::string& error) {
  auto& st = self->state;
  auto r = ask_catalog<catalog_done>(
      self, catalog, catalog_transition{st.record.scope_id, st.record.generation, std::move(from), to, reason});
  if (!r || !r->changed) {
    error = r ? "the catalog no longer holds this scope in the expected state" : error_text(r.error());
    return false;
  }
  st.record.state = to;
  st.record.state_reason = reason;
  return true;
}

// The refs, opened beneath their roots without following any symlink (S3).
caf::error resolve_refs(const cfg_ptr& cfg, const native::create_request& req,
                                         native::worker_setup& setup, fd_guard& fds) {
  const int base_root = ::open(cfg->base_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  const int input_root = ::open(cfg->input_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  fds.fds.push_back(base_root);
  fds.fds.push_back(input_root);
  if (base_root < 0 || input_root < 0)
    return err(native_errc::scope_setup_failed, "the base or input root cannot be opened");
  setup.base_fd = io::fs::open_beneath_no_symlinks(base_root, req.base_snapshot_ref, O_PATH | O_DIRECTORY);
  fds.fds.push_back(setup.base_fd);
  if (setup.base_fd < 0)
    return err(native_errc::base_snapshot_ref_invalid, "base_snapshot_ref \"" + req.base_snapshot_ref +
                                                "\" is not a directory under the base root (" +
                                                std::strerror(errno) + ")");
  for (const auto& ref : req.input_file_refs) {
    const int fd = io::fs::open_beneath_no_symlinks(input_root, ref, O_PATH);
    fds.fds.push_back(fd);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
      return err(native_errc::input_file_ref_invalid,
                 "input_file_refs: \"" + ref + "\" is not a file under the input root");
    setup.input_refs.push_back(ref);
    setup.input_fds.push_back(fd);
    setup.input_paths.push_back(cfg->input_root + "/" + ref);
  }
  return {};
}

// The targets, resolved once and pinned (S22): each must keep an address.
caf::error pin_targets(const cfg_ptr& cfg, const native::create_request& req,
                                        native::scope_network& net) {
  net = {};
  net.bytes_limit = req.limits.network_bytes;
  net.conns_limit = req.limits.network_connections;
  for (const auto& t : req.network_targets) {
    std::string why;
    auto pin = native::pin_target(t.host, t.port, cfg->mediator, why);
    if (pin.addresses.empty()) return err(native_errc::network_target_denied, "network_targets: " + why);
    net.pins.push_back(std::move(pin));
  }
  return {};
}

// The broker (with targets): listening on broker.sock in the host directory before the
// scope is `ready`, admitting only the worker's pid. "" or why not.
std::string start_broker(self_ptr self, const cfg_ptr& cfg, const native_catalog_actor& catalog) {
  auto& st = self->state;
  if (st.net.pins.empty() || st.broker_stop >= 0) return "";
  auto b = std::make_shared<broker_settings>();
  b->scope_id = st.record.scope_id;
  b->socket_path = st.host_dir + "/broker.sock";
  b->worker_pid = static_cast<pid_t>(st.record.worker_pid);
  b->worker_uid = ::getuid();  // the dedicated uid: the worker's user namespace maps to it
  b->pins = st.net.pins;
  b->connection_cap = cfg->connection_cap;
  std::string e;
  const int listen_fd = native::listen_unix(b->socket_path, e);
  if (listen_fd < 0) return "the network broker: " + e;
  int stop[2];
  if (::pipe2(stop, O_CLOEXEC) != 0) {
    ::close(listen_fd);
    return std::string("the network broker: pipe: ") + std::strerror(errno);
  }
  st.broker = self->system().spawn<caf::detached>(net_broker, std::shared_ptr<const broker_settings>(b),
                                                  listen_fd, stop[0], catalog);
  st.broker_stop = stop[1];
  return "";
}

// Closes every proxied connection (S24: before the cgroup's end) and waits for the broker.
void stop_broker(self_ptr self) {
  auto& st = self->state;
  if (st.broker_stop < 0) return;
  ::close(st.broker_stop);
  st.broker_stop = -1;
  caf::scoped_actor s{self->system()};
  s->wait_for(st.broker);
  st.broker = caf::actor{};
}

// The worker: host directory, clone3 into the worker cgroup, setup, ready (docs/native-scopes.md
// "The scope worker").
// The identity goes into the actor's record. "" or why not.
std::string start_worker(self_ptr self, const cfg_ptr& cfg, native::worker_setup& setup) {
  auto& st = self->state;
  const std::string name = name_of(st.record);
  std::string e;
  if (!io::fs::make_dirs(cfg->scopes_dir(), 0700, e)) return e;
  st.host_dir = cfg->scopes_dir() + "/" + name;
  st.socket_path = st.host_dir + "/control.sock";
  if (::mkdir(st.host_dir.c_str(), 0700) != 0) return "mkdir " + st.host_dir + ": " + std::strerror(errno);
  if (!cfg->cgroups->create(name, st.limits, e)) return e;
  st.record.cgroup_path = cfg->cgroups->dir(name);

  fd_guard fds;
  const int cgroup_fd = ::open(cfg->cgroups->worker_dir(name).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  fds.fds.push_back(cgroup_fd);
  if (cgroup_fd < 0) return "open " + cfg->cgroups->worker_dir(name) + ": " + std::strerror(errno);
  setup.host_dir_fd = ::open(st.host_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  fds.fds.push_back(setup.host_dir_fd);
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    return std::string("socketpair: ") + std::strerror(errno);
  fds.fds.push_back(pair[0]);
  native::spawned_worker w;
  const bool spawned = native::spawn_worker(cfg->exe, pair[1], cgroup_fd, w, e);
  ::close(pair[1]);
  if (!spawned) return e;
  st.pidfd = w.pidfd;
  st.worker_is_child = true;
  st.record.worker_pid = w.pid;
  st.record.worker_starttime = w.starttime;
  st.record.boot_id = native::boot_id();
  st.record.worker_nonce = native::new_worker_nonce();
  st.control_token = native::worker_control_token(cfg->token, st.record.scope_id,
                                                  st.record.generation, st.record.worker_nonce);
  setup.control_token = st.control_token;
  if (!native::send_setup(pair[0], setup, e)) return e;
  pollfd p{pair[0], POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(cfg->worker_ready_bound.count())) != 1)
    return "the worker was not ready within " + std::to_string(cfg->worker_ready_bound.count()) + " ms";
  if (auto why = native::receive_answer(pair[0])) return "the worker failed its setup: " + *why;
  return "";
}

// Ends everything of the scope and removes its storage (DELETE, S24), from `destroying`:
// the tombstone, or `quarantined` with the reason. Answers the registry's caller.
caf::expected<scope_gone> end_scope(self_ptr self, const cfg_ptr& cfg, const native_catalog_actor& catalog,
                                    const scope_registry_actor& registry, const std::string& reason) {
  auto& st = self->state;
  scope_gone out{st.record.scope_id, st.record.generation, reason};
  std::string e;
  if (st.record.state != native::scope_state::destroying &&
      !commit(self, catalog,
              {native::scope_state::creating, native::scope_state::ready, native::scope_state::lost,
               native::scope_state::quarantined},
              native::scope_state::destroying, reason, e)) {
    return err(native_errc::storage_unavailable, "the scope's destruction cannot be committed: " + e);
  }
  const std::string name = name_of(st.record);
  stop_broker(self);
  bool clean = cfg->cgroups->destroy(name, cfg->destroy_bound, e);
  release_worker(self);
  if (clean) {
    const std::string dir = st.host_dir.empty() ? cfg->scopes_dir() + "/" + name : st.host_dir;
    io::fs::remove_tree(dir);
    if (::access(dir.c_str(), F_OK) == 0 || errno != ENOENT) {
      e = dir + " could not be removed";
      clean = false;
    }
  }
  if (!clean) {
    std::string e2;
    commit(self, catalog, {native::scope_state::destroying}, native::scope_state::quarantined, e, e2);
    return err(native_errc::scope_cleanup_failed, "the scope could not be cleaned up (it is quarantined; "
                                                  "DELETE retries): " + e);
  }
  auto b = ask_catalog<catalog_done>(self, catalog, catalog_bury{st.record.scope_id, st.record.generation, reason});
  if (!b || !b->changed)
    return err(native_errc::storage_unavailable,
               "the scope's tombstone cannot be committed: " +
                   (b ? std::string("the catalog no longer holds this scope") : error_text(b.error())));
  caf::anon_send(registry, scope_buried{st.record.scope_id, st.record.generation});
  self->quit();
  return out;
}

void arm_deadline(self_ptr self) {
  auto& st = self->state;
  if (st.armed_deadline) return;
  st.armed_deadline = true;
  const auto left = std::max<std::int64_t>(0, st.deadline_epoch - static_cast<std::int64_t>(std::time(nullptr)));
  self->delayed_send(self, std::chrono::seconds(left), scope_deadline{});
}

}  // namespace

scope_actor_type::behavior_type scope_actor(self_ptr self, cfg_ptr cfg, native_catalog_actor catalog,
                                            scope_registry_actor registry) {
  return {
      [=](scope_prepare& m) -> caf::result<scope_prepared> {
        // Create's first steps: refs opened beneath their roots, targets pinned. Held for begin.
        auto& st = self->state;
        const auto& req = m.req;
        st.limits = req.limits;
        st.deadline_epoch = req.deadline_epoch;
        auto& r = st.record;
        r.scope_id = req.scope_id;
        r.generation = req.generation;
        r.state = native::scope_state::creating;
        r.binding_ref = req.binding_ref;
        r.base_snapshot_ref = req.base_snapshot_ref;
        r.input_file_refs = native::refs_json(req.input_file_refs);
        r.capability_digest = req.capability_digest;
        r.deadline = req.deadline;
        r.limits = native::limits_json(req.limits);
        fd_guard fds;
        auto refused = resolve_refs(cfg, req, st.setup, fds);
        if (!refused) refused = pin_targets(cfg, req, st.net);
        if (refused) {
          self->quit();
          return refused;
        }
        st.held_fds = std::move(fds.fds);
        fds.fds.clear();
        return scope_prepared{};
      },
      [=](scope_begin& m) -> caf::result<scope_answer> {
        auto& st = self->state;
        const auto& req = m.req;
        auto& r = st.record;
        r.created_at = io::text::utc_now();
        r.updated_at = r.created_at;
        native::worker_setup& setup = st.setup;
        // The refs' descriptors are closed when this creation ends, however it ends.
        fd_guard fds;
        fds.fds = std::move(st.held_fds);
        st.held_fds.clear();
        auto begun = ask_catalog<catalog_begun>(self, catalog, catalog_begin{r, st.net});
        if (!begun) {
          self->quit();
          return err(native_errc::storage_unavailable, "the catalog cannot record the scope: " + error_text(begun.error()));
        }
        if (begun->outcome != native::create_outcome::created) {
          self->quit();
          return begun->outcome == native::create_outcome::scope_exists
                     ? err(native_errc::scope_exists, "scope " + r.scope_id + " exists")
                     : err(native_errc::scope_generation_stale, "generation " + std::to_string(r.generation) +
                                                                    " of scope " + r.scope_id +
                                                                    " is not newer than its last destroyed one");
        }
        setup.scope_id = r.scope_id;
        setup.generation = r.generation;
        setup.created_at = r.created_at;
        setup.image_root = cfg->image_root;
        setup.limits = {req.limits.input_bytes, req.limits.output_bytes, req.limits.max_jobs,
                        req.limits.disk_bytes,  req.limits.open_files,   req.limits.file_bytes,
                        req.limits.job_wall_seconds, static_cast<std::uint64_t>(req.deadline_epoch)};
        setup.cgroup = cfg->cgroups->dir(name_of(r));
        setup.targets.clear();
        for (const auto& pin : st.net.pins) setup.targets.push_back({pin.host, pin.port});
        st.host_dir = cfg->scopes_dir() + "/" + name_of(r);
        setup.host_dir = st.host_dir;
        std::string why = start_worker(self, cfg, setup);
        if (why.empty()) {
          auto rec = ask_catalog<catalog_done>(self, catalog, catalog_record_worker{r});
          if (!rec || !rec->changed)
            why = "the worker's identity cannot be committed: " +
                  (rec ? std::string("the catalog no longer holds this scope in the expected state") : error_text(rec.error()));
        }
        if (why.empty()) why = start_broker(self, cfg, catalog);
        std::string e;
        if (why.empty() && !commit(self, catalog, {native::scope_state::creating}, native::scope_state::ready, "", e))
          why = "the ready state cannot be committed: " + e;
        if (!why.empty()) {
          auto gone = end_scope(self, cfg, catalog, registry, "setup_failed");
          return !gone && is_native_error(gone.error(), native_errc::scope_cleanup_failed)
                     ? err(native_errc::scope_setup_failed, why + "; and its clean-up failed, the scope is quarantined")
                     : err(native_errc::scope_setup_failed, why);
        }
        arm_deadline(self);
        return scope_answer{view_of(self, cfg, catalog)};
      },
      [=](scope_adopt& m) -> caf::result<scope_answer> {
        // Reattach (S11): the same boot, a pidfd for the pid, the same start time, the pid in
        // the scope's worker cgroup, and an identity call that authenticates and matches.
        auto& st = self->state;
        st.record = m.record;
        if (auto l = native::limits_from_json(st.record.limits)) st.limits = *l;
        if (auto when = io::text::parse_utc(st.record.deadline))
          st.deadline_epoch = std::chrono::duration_cast<std::chrono::seconds>(when->time_since_epoch()).count();
        const std::string name = name_of(st.record);
        st.host_dir = cfg->scopes_dir() + "/" + name;
        st.socket_path = st.host_dir + "/control.sock";
        st.control_token = native::worker_control_token(cfg->token, st.record.scope_id,
                                                        st.record.generation, st.record.worker_nonce);
        {
          // The pins and the budget persist in the catalog (S22): the same network again.
          auto n = ask_catalog<catalog_net_state>(self, catalog, catalog_net_read{st.record.scope_id});
          if (!n) return err(native_errc::storage_unavailable, "the scope's network cannot be read: " + error_text(n.error()));
          st.net.pins = std::move(n->pins);
          if (n->budget) {
            st.net.bytes_limit = n->budget->bytes_limit;
            st.net.conns_limit = n->budget->conns_limit;
          }
        }
        arm_deadline(self);
        if (st.record.state == native::scope_state::destroying) {
          // A destruction that a crash interrupted: carried on.
          auto gone = end_scope(self, cfg, catalog, registry, st.record.state_reason.empty() ? "deleted" : st.record.state_reason);
          if (!gone) return gone.error();
          return scope_answer{};
        }
        if (st.record.state != native::scope_state::ready && st.record.state != native::scope_state::creating)
          return scope_answer{view_of(self, cfg, catalog)};  // lost and quarantined stay as they are
        std::string why;
        if (st.record.state == native::scope_state::creating) why = "its creation never finished";
        else if (st.record.boot_id != native::boot_id()) why = "the machine has rebooted since";
        if (why.empty()) {
          const int fd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(st.record.worker_pid), 0));
          if (fd < 0) why = "its pid " + std::to_string(st.record.worker_pid) + " is gone";
          else st.pidfd = fd;
        }
        if (why.empty() && native::process_starttime(static_cast<pid_t>(st.record.worker_pid)) != st.record.worker_starttime)
          why = "pid " + std::to_string(st.record.worker_pid) + " is another process now (start time differs)";
        if (why.empty()) {
          bool inside = false;
          for (pid_t p : io::sandbox::cgroups::procs(cfg->cgroups->worker_dir(name)))
            inside = inside || p == static_cast<pid_t>(st.record.worker_pid);
          if (!inside) why = "pid " + std::to_string(st.record.worker_pid) + " is not in the scope's worker cgroup";
        }
        if (why.empty()) worker_answers(self, cfg, why);
        if (why.empty()) why = start_broker(self, cfg, catalog);
        if (!why.empty()) {
          if (st.pidfd >= 0) ::close(st.pidfd);
          st.pidfd = -1;
          std::string e;
          if (!commit(self, catalog, {native::scope_state::ready, native::scope_state::creating},
                      native::scope_state::lost, "worker not re-adopted: " + why, e))
            return err(native_errc::storage_unavailable, e);
        }
        return scope_answer{view_of(self, cfg, catalog)};
      },
      [=](scope_inspect&) -> caf::result<scope_answer> {
        auto& st = self->state;
        if (st.record.state == native::scope_state::ready) {
          std::string why;
          if (!worker_answers(self, cfg, why)) {
            std::string e;
            if (!commit(self, catalog, {native::scope_state::ready}, native::scope_state::lost, why, e))
              return err(native_errc::storage_unavailable, e);
          }
        }
        return scope_answer{view_of(self, cfg, catalog)};
      },
      [=](scope_destroy& m) -> caf::result<scope_gone> {
        auto gone = end_scope(self, cfg, catalog, registry, m.reason);
        if (!gone) return gone.error();
        return std::move(*gone);
      },
      [=](scope_job_access& m) -> caf::result<worker_route> {
        auto& st = self->state;
        if (!m.token) return err(native_errc::scope_token_required, "X-Scope-Token is required");
        if (!native::verify_scope_token(cfg->token, identity_of(st.record), *m.token))
          return err(native_errc::scope_token_invalid, "X-Scope-Token is not valid for this scope's worker");
        switch (st.record.state) {
          case native::scope_state::ready:
            return worker_route{st.socket_path, st.control_token, self->address()};
          case native::scope_state::lost:
            return err(native_errc::scope_worker_lost, "the scope's worker is lost: " + st.record.state_reason);
          case native::scope_state::quarantined:
            return err(native_errc::scope_quarantined, "the scope is quarantined: " + st.record.state_reason);
          default:
            return err(native_errc::scope_not_ready, "the scope is " + std::string(native::state_text(st.record.state)));
        }
      },
      [=](scope_deadline&) {
        // The deadline destroys the scope as DELETE would; a failure quarantines it.
        end_scope(self, cfg, catalog, registry, "deadline");
      },
      [=](scope_worker_unreachable&) {
        auto& st = self->state;
        std::string why, e;
        if (st.record.state == native::scope_state::ready && !worker_answers(self, cfg, why))
          commit(self, catalog, {native::scope_state::ready}, native::scope_state::lost, why, e);
      },
      [=](native_shutdown&) {
        // The worker and its jobs go on: a restarted supervisor re-adopts them (S11). The
        // broker's connections end with this process.
        stop_broker(self);
        self->quit();
      },
  };
}

}  // namespace shellctl::actors
