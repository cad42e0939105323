// A job found in the database when the server starts (docs/jobs.md "Recovery after a
// restart"; D8: never a runner waiting forever, always a truthful status): its cgroup and
// session adopted again, its files looked at, and its status settled from them.
#include "actors/jobs/job_actor/sections.hpp"
#include "io/fs/files.hpp"
#include "io/proc/stdin_pipe.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/tmux/control_client.hpp"
#include "io/tmux/job_commands.hpp"

namespace shellctl::actors::job {

namespace files = io::fs::job_files;

namespace {

// A crash in the middle of a start, before the gate opened: the script never ran and the
// client never learned the job id (the run answer comes after the gate). Finishing the
// start now would run a script its client already saw fail, perhaps twice after a retry;
// so whatever survives of it is stopped and the job recorded as failed.
bool before_the_gate(self_ptr self) {
  return io::store::is_before_running(self->state.row.status) && !has(self, files::start_gate);
}

// The session is there: what tmux says of its pane decides.
void recover_with_pane(self_ptr self) {
  tmux(self, {io::tmux::pane_query_line(pane(self))}, [self](tmux_result& r) {
    auto& st = self->state;
    if (!r) {
      if (is_tmux_error(r.error(), tmux_errc::target_missing)) st.session_alive = false;
      settle(self);
      return;
    }
    auto pane_facts = io::tmux::read_pane_query(r->output.empty() ? std::vector<std::string>{} : r->output[0]);
    st.pane_pid = pane_facts.pid;
    if (before_the_gate(self)) {
      fail_interrupted_start(self, "start interrupted by a server restart; the script never ran");
      return;
    }
    if (is_pty(self) && !pane_facts.pipe_active && !has(self, files::pipe_drained)) {
      apply(self, transition{job_status::failed, live_statuses(), std::string("pipe_failed"),
                             std::string("The tmux output pipe stopped while the job was still running."),
                             {}, false},
            [self](const store_result&) { recovery_settled(self); });
      return;
    }
    settle(self);
  });
}

}  // namespace

void recover(self_ptr self, bool session_alive) {
  auto& st = self->state;
  st.session_alive = session_alive;
  // The job's cgroup, if it has one, is adopted again (its path is the job's id).
  if (!st.cgroup_path.empty() && io::sandbox::cgroups::exists(st.cgroup_path)) st.cgroup.at = cgroup_life::present{};
  enter(self, phases::live{});
  // The session's end comes from tmux_server (at once, if it ended since the listing).
  if (session_alive) self->send(st.peers.tmux, track_session{st.row.session_name, caf::actor_cast<session_owner>(self)});
  if (!io::fs::exists(st.dir)) {
    // Only a delete removes a job dir before its row (when the disk was full): finish it.
    remove_job(self, std::nullopt);
    return;
  }
  st.pipe_attached = is_pty(self);  // a PTY job that got this far had (or has) its pipe
  // A piped stdin ended with the server that held it: the job read EOF (docs/api.md "stdin
  // for stdio tools").
  if (!is_pty(self) && has(self, io::proc::stdin_pipe::file_name)) st.stdin.at = stdin_pipe::closed{};
  st.gate_opened = has(self, files::start_gate);
  if (done(self)) {
    if (session_alive) kill_session(self);
    if (!keeps_leftovers(self)) end_job_cgroup(self);  // an end the crash cut short
    refresh_output(self);
    settle(self);
    return;
  }
  arm_wall_deadline(self);
  auto watched = [self](bool watching) {
        auto& st = self->state;
        st.watching = watching;
        if (st.session_alive) {
          recover_with_pane(self);
          return;
        }
        if (before_the_gate(self)) {
          // Whatever of the start survives (a runner at its gate) is stopped. Not lost:
          // nothing was running.
          self->send(st.peers.cleanup, kill_groups_naming{st.dir});
          fail_interrupted_start(self, "start interrupted by a server restart; the script never ran");
          return;
        }
        settle(self);
  };
  self->request(st.peers.watcher, caf::infinite, watch_dir{st.dir, caf::actor_cast<dir_listener>(self)})
      .then([watched](watch_set&) { watched(true); }, [watched](caf::error&) { watched(false); });
}

}  // namespace shellctl::actors::job
