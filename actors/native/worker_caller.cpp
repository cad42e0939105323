#include "actors/native/worker_caller.hpp"

#include "actors/native/native_edge.hpp"
#include "io/native/worker/worker_client.hpp"

namespace shellctl::actors {

worker_caller_actor::behavior_type worker_caller(worker_caller_actor::pointer self) {
  return {
      [self](forward_job& m) {
        io::native::worker_call c;
        c.socket_path = m.route.socket_path;
        c.control_token = m.route.control_token;
        c.method = m.call.req.method;
        c.target = m.target;
        c.body = m.call.req.body;
        // Bounded far above any long-poll a job route allows: a worker that stops
        // answering (frozen) must not hold the client forever.
        c.timeout_ms = 15L * 60 * 1000;
        const auto a = io::native::call_worker(c);
        if (!a.reached) {
          caf::anon_send(caf::actor_cast<scope_actor_type>(m.route.scope), scope_worker_unreachable{});
          m.call.resp.send(native_error_response(
              make_native_error(native_errc::scope_worker_unreachable, "the scope's worker did not answer: " + a.error),
              native_errc::scope_worker_unreachable));
        } else {
          io::http::response r;
          r.status = static_cast<int>(a.status);
          if (!a.content_type.empty()) r.headers.push_back({"Content-Type", a.content_type});
          r.body = a.body;
          m.call.resp.send(std::move(r));
        }
        self->quit();
      },
  };
}

}  // namespace shellctl::actors
