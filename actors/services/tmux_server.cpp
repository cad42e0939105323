#include "actors/services/tmux_server.hpp"

#include <algorithm>
#include <chrono>

#include "io/tmux/command.hpp"
#include "io/tmux/control_client.hpp"

namespace shellctl::actors {
namespace {

using state_ptr = tmux_server_actor::stateful_pointer<tmux_server_state>;

void refresh_sessions(state_ptr self);

// These sessions ended: each owner learns it once.
void report_gone(state_ptr self, const std::vector<std::string>& names, bool server_died) {
  auto& owners = self->state.owners;
  for (auto& name : names) {
    auto it = owners.find(name);
    if (it == owners.end()) continue;
    self->send(it->second, session_gone{server_died});
    owners.erase(it);
  }
}

// Server-wide options, set whenever a tmux server is (re)started: exit-empty off keeps it up with
// zero job sessions (docs/jobs.md "Starting a job"); history-limit 0 because shellctl never reads
// tmux's scrollback (output comes through pipe-pane into output.log), so a job can make tmux hold
// no more than its visible screen (terminal size is capped at 4096x4096).
std::vector<std::string> server_options() {
  return {io::tmux::command("set-option").flag("-g").flag("exit-empty").flag("off").line(),
          io::tmux::command("set-option").flag("-g").flag("history-limit").number(0).line()};
}

// Writes a command's lines to the client; it then expects one block per line.
void send_now(state_ptr self, tmux_server_state::pending_command pc) {
  auto& st = self->state;
  for (auto& l : pc.lines) {
    if (!st.client->send(l)) {
      pc.done(make_tmux_error(tmux_errc::unavailable, "failed to connect to tmux: control client gone"));
      return;
    }
  }
  pc.lines.clear();
  st.pending.push_back(std::move(pc));
}

// Sends the lines, or keeps them until a (new) client is up.
void submit(state_ptr self, std::vector<std::string> lines, std::string creates_session,
            session_owner owner, std::function<void(tmux_result)> done) {
  auto& st = self->state;
  tmux_server_state::pending_command pc{lines.size(),         {}, {},
                                        std::move(creates_session), std::move(owner),
                                        std::move(done),      std::move(lines)};
  if (pc.lines.empty()) {
    pc.done(pc.out);
    return;
  }
  // Nothing was owed until now: tmux's silence counts from here.
  if (st.pending.empty() && st.waiting.empty()) st.last_heard = std::chrono::steady_clock::now();
  if (!st.client || !st.accepting) {
    st.waiting.push_back(std::move(pc));
    return;
  }
  send_now(self, std::move(pc));
}

// A new client is up: server options first, then what waited for it, in order.
void client_ready(state_ptr self) {
  auto& st = self->state;
  st.accepting = true;
  st.restart_failures = 0;
  submit(self, server_options(), "", {}, [self](tmux_result) { refresh_sessions(self); });
  auto waiting = std::move(st.waiting);
  st.waiting.clear();
  for (auto& pc : waiting) send_now(self, std::move(pc));
}

// One of our command lines completed (blocks answer them in the order they were sent).
void finish_block(state_ptr self, bool ok, std::vector<std::string> lines) {
  auto& st = self->state;
  if (st.pending.empty()) return;
  auto& pc = st.pending.front();
  if (!ok && !pc.failure) {
    std::string text;
    for (auto& l : lines) text += (text.empty() ? "" : "\n") + l;
    // What the failure means is read here, once, from tmux's own words.
    pc.failure = make_tmux_error(io::tmux::is_target_missing(text) ? tmux_errc::target_missing
                                                                   : tmux_errc::command_failed,
                                 text.empty() ? "tmux command failed" : text, pc.out);
  }
  // A new-session that succeeded (first line) is tracked from now on; its output is
  // "<pane_pid> <window_id>" (see job_actor's -F format).
  if (ok && pc.out.output.empty() && !pc.creates_session.empty()) {
    st.known.insert(pc.creates_session);
    if (pc.owner) st.owners[pc.creates_session] = pc.owner;
    if (!lines.empty()) {
      auto& line = lines[0];
      auto at = line.find(" @");
      if (at != std::string::npos) st.window_session[line.substr(at + 1)] = pc.creates_session;
    }
  }
  pc.out.output.push_back(std::move(lines));
  if (--pc.remaining == 0) {
    auto done = std::move(pc.done);
    tmux_result result = pc.failure ? tmux_result{std::move(pc.failure)} : tmux_result{std::move(pc.out)};
    st.pending.pop_front();
    done(std::move(result));
  }
}

void on_lines(state_ptr self, std::vector<std::string>& lines) {
  using kind = io::tmux::control_event::kind;
  auto& st = self->state;
  if (!lines.empty()) st.last_heard = std::chrono::steady_clock::now();
  for (auto& line : lines) {
    auto ev = st.parser.feed(std::move(line));
    if (!ev) continue;
    switch (ev->what) {
      case kind::block_ok:
      case kind::block_error:
        finish_block(self, ev->what == kind::block_ok, std::move(ev->lines));
        break;
      case kind::window_closed: {
        auto it = st.window_session.find(ev->window);
        if (it == st.window_session.end()) break;
        std::string name = it->second;
        st.window_session.erase(it);
        st.known.erase(name);
        report_gone(self, {name}, false);
        break;
      }
      case kind::exiting:
        // The client is going (its server died or was killed): anything sent from now on
        // would be lost with it, so commands wait for the next client.
        st.accepting = false;
        break;
      case kind::sessions_changed:
        // Only sessions whose window id is unknown need a listing to notice their end.
        if (st.known.size() > st.window_session.size()) refresh_sessions(self);
        break;
    }
  }
}

void deliver_list(state_ptr self, const caf::expected<session_list>& result) {
  auto waiters = std::move(self->state.list_waiters);
  self->state.list_waiters.clear();
  for (auto& w : waiters) w(result);
}

// Lists the sessions and reports the ones that disappeared. Coalesces bursts: while a
// listing is in flight, further changes only request one more listing afterwards.
void refresh_sessions(state_ptr self) {
  auto& st = self->state;
  if (st.list_in_flight) {
    st.list_again = true;
    return;
  }
  st.list_in_flight = true;
  submit(self, {io::tmux::command("list-sessions").flag("-F").arg("#{session_name} #{window_id}").line()},
         "", {}, [self](tmux_result r) {
    auto& st = self->state;
    st.list_in_flight = false;
    caf::expected<session_list> result{session_list{}};
    if (r) {
      std::map<std::string, std::string> windows;
      for (auto& l : r->output[0]) {
        auto sp = l.rfind(' ');
        std::string name = sp == std::string::npos ? l : l.substr(0, sp);
        result->names.insert(name);
        if (sp != std::string::npos && name != io::tmux::control_session)
          windows[l.substr(sp + 1)] = name;
      }
      std::vector<std::string> gone;
      for (auto& k : st.known)
        if (!result->names.count(k)) gone.push_back(k);
      // Tracked: every session but our own control session.
      st.known = result->names;
      st.known.erase(io::tmux::control_session);
      st.window_session = std::move(windows);
      report_gone(self, gone, false);
    } else {
      result = r.error();
    }
    deliver_list(self, result);
    if (st.list_again) {
      st.list_again = false;
      refresh_sessions(self);
    }
  });
}

bool start_client(state_ptr self, std::string& error) {
  auto& st = self->state;
  auto gen = ++st.generation;
  auto me = caf::actor_cast<tmux_server_actor>(self);
  try {
    st.client = std::make_unique<io::tmux::control_client>(
        st.socket, st.env,
        [me](std::vector<std::string> lines) { caf::anon_send(me, tmux_lines{std::move(lines)}); },
        [me, gen] { caf::anon_send(me, tmux_client_exited{gen}); });
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
  st.parser.reset();
  return true;
}

}  // namespace

tmux_server_actor::behavior_type tmux_server(
    tmux_server_actor::stateful_pointer<tmux_server_state> self, std::string socket,
    std::vector<std::string> env) {
  self->state.socket = std::move(socket);
  self->state.env = std::move(env);
  return {
      [self](tmux_start&) -> caf::result<tmux_ready> {
        std::string error;
        if (!start_client(self, error)) return make_tmux_error(tmux_errc::unavailable, error);
        auto rp = self->make_response_promise<tmux_ready>();
        self->state.accepting = true;
        submit(self, server_options(), "", {},
               [self, rp](tmux_result r) mutable {
                 if (r)
                   rp.deliver(tmux_ready{});
                 else
                   rp.deliver(r.error());
                 refresh_sessions(self);
               });
        return rp;
      },
      [self](tmux_command& m) -> caf::result<tmux_output> {
        auto rp = self->make_response_promise<tmux_output>();
        submit(self, std::move(m.lines), std::move(m.creates_session), std::move(m.owner),
               [rp](tmux_result r) mutable {
                 if (r)
                   rp.deliver(std::move(*r));
                 else
                   rp.deliver(r.error());
               });
        return rp;
      },
      [self](track_session& m) {
        auto& st = self->state;
        if (st.known.count(m.name))
          st.owners[m.name] = std::move(m.owner);
        else
          self->send(m.owner, session_gone{false});  // over before it could be tracked
      },
      [self](list_sessions_request&) -> caf::result<session_list> {
        auto rp = self->make_response_promise<session_list>();
        self->state.list_waiters.push_back([rp](const caf::expected<session_list>& l) mutable {
          if (l)
            rp.deliver(*l);
          else
            rp.deliver(l.error());
        });
        // A fresh listing: one in flight may predate the caller's question.
        if (self->state.list_in_flight)
          self->state.list_again = true;
        else
          refresh_sessions(self);
        return rp;
      },
      [self](tmux_silence_query&) {
        auto& st = self->state;
        if (st.pending.empty() && st.waiting.empty()) return tmux_silence{0};
        return tmux_silence{std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - st.last_heard)
                                .count()};
      },
      [self](tmux_lines& m) { on_lines(self, m.lines); },
      [self](tmux_client_exited& m) {
        auto& st = self->state;
        if (m.generation != st.generation) return;
        st.client.reset();
        st.accepting = false;
        // Every command in flight died with the tmux server.
        auto pending = std::move(st.pending);
        st.pending.clear();
        for (auto& pc : pending) pc.done(make_tmux_error(tmux_errc::server_exited, "server exited unexpectedly"));
        st.list_in_flight = false;
        std::vector<std::string> gone(st.known.begin(), st.known.end());
        st.known.clear();
        st.window_session.clear();
        report_gone(self, gone, true);
        std::string error;
        if (start_client(self, error)) {
          client_ready(self);
          return;
        }
        // Try again shortly. Commands wait meanwhile, but not for ever: after 2 s of
        // failed restarts they are answered with the reason.
        if (++st.restart_failures >= 10) {
          auto waiting = std::move(st.waiting);
          st.waiting.clear();
          for (auto& pc : waiting)
            pc.done(make_tmux_error(tmux_errc::unavailable, "no server running: tmux could not be restarted: " + error));
        }
        // Every 200 ms for the first 2 s, then backing off to one try every 5 s: a server
        // whose tmux cannot start (its state dir deleted under it) must not fork tmux
        // five times a second for ever.
        const int over = std::min(std::max(st.restart_failures - 10, 0), 5);
        self->delayed_send(self, std::min(std::chrono::milliseconds(200 << over), std::chrono::milliseconds(5000)),
                           tmux_client_exited{st.generation});
      },
      [self](shutdown_jobs&) {
        self->state.client.reset();
        self->quit();
      },
  };
}

}  // namespace shellctl::actors
