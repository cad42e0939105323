#include "actors/jobs/job_stream.hpp"

#include "io/http/sse.hpp"
#include "io/text/output_window.hpp"

namespace shellctl::actors {
namespace {

using self_ptr = job_stream_actor::stateful_pointer<job_stream_state>;

void finish(self_ptr self, bool clean) {
  auto& st = self->state;
  if (st.ended) return;
  st.ended = true;
  if (clean)
    st.cfg.out.end_stream({});
  else
    st.cfg.out.abort();
  self->quit();
}

void send(self_ptr self, std::string bytes) {
  auto& st = self->state;
  st.sent += bytes.size();
  st.cfg.out.send_chunk(std::move(bytes));
}

// Sends what the log holds beyond `offset`, as far as the connection has room, then the
// exit event once the output is final and all of it is sent.
void pump(self_ptr self) {
  auto& st = self->state;
  if (st.ended) return;
  if (!st.cfg.out.connected()) {  // the client went away
    finish(self, false);
    return;
  }
  while (st.sent - st.cfg.out.stream_acked() < st.cfg.max_in_flight && st.offset < st.known.size) {
    io::text::output_window win;
    try {
      win = io::text::read_output_window(st.cfg.output_path, st.offset, st.cfg.max_event, st.known.done);
    } catch (const std::exception&) {
      win.offset = st.offset;  // shorter than we were told: the log is going with its job
    }
    if (win.offset <= st.offset) {
      // An incomplete character at the end waits for more, unless the output is final:
      // then nothing more will come (a deleted job's log went before we read it all).
      if (st.known.done) st.known.size = st.offset;
      break;
    }
    send(self, io::http::sse_output_event(st.offset, win.offset, win.text));
    st.offset = win.offset;
  }
  if (st.known.done && (st.offset >= st.known.size || !st.cfg.out.connected())) {
    send(self, io::http::sse_exit_event(st.cfg.job_id, st.known.status, st.known.exit_code, st.offset));
    finish(self, true);
  }
}

}  // namespace

job_stream_actor::behavior_type job_stream(self_ptr self, job_stream_settings cfg) {
  auto& st = self->state;
  st.offset = cfg.offset;
  st.cfg = std::move(cfg);
  // The head goes out now; every later write that drains the connection wakes the pump
  // (on the loop thread: one message, the bridge's direction).
  io::http::response head;
  head.status = 200;
  head.headers = {{"Content-Type", "text/event-stream"},
                  {"Cache-Control", "no-store"},
                  {"X-Accel-Buffering", "no"}};
  head.log_job_id = st.cfg.job_id;
  auto me = caf::actor_cast<job_stream_actor>(self);
  st.cfg.out.start_stream(std::move(head), [me] { caf::anon_send(me, stream_drained{}); });
  self->delayed_send(self, st.cfg.keepalive, stream_keepalive{});
  return {
      [self](output_progress& p) {
        // Sizes only grow; a final word stays final.
        auto& st = self->state;
        if (st.known.done) return;
        st.known = std::move(p);
        pump(self);
      },
      [self](stream_drained&) { pump(self); },
      [self](stream_keepalive&) {
        auto& st = self->state;
        if (st.ended) return;
        if (!st.cfg.out.connected()) {
          finish(self, false);
          return;
        }
        // Only when nothing else is waiting to be written: a keep-alive never adds to a
        // backlog.
        if (st.sent == st.cfg.out.stream_acked()) send(self, std::string(io::http::sse_keepalive));
        self->delayed_send(self, st.cfg.keepalive, stream_keepalive{});
      },
      [self](shutdown_jobs&) { finish(self, false); },  // the server stops: no exit event
  };
}

}  // namespace shellctl::actors
