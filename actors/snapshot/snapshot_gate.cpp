#include "actors/snapshot/snapshot_gate.hpp"

#include "actors/snapshot/snapshot_op.hpp"

#include <algorithm>
#include <chrono>
#include <type_traits>

namespace shellctl::actors {
namespace {

using self_ptr = snapshot_gate_actor::stateful_pointer<snapshot_gate_state>;

snapshot_ended outcome(const snapshot_saved& s) { return {true, true, s.bytes, 0}; }
snapshot_ended outcome(const snapshot_restored& r) {
  return {false, true, static_cast<std::uint64_t>(std::max<std::int64_t>(r.bytes_written, 0)), 0};
}

// Runs `req` as the one operation, or refuses it; /metrics learns how each one ended.
template <class Request, class Reply>
caf::result<Reply> admit(self_ptr self, const snapshot_settings& cfg,
                         const metrics_registry_actor& metrics, Request& req) {
  auto& st = self->state;
  if (st.op)
    return make_job_error(job_errc::snapshot_busy, "another snapshot operation is in progress");
  st.op = self->spawn<caf::detached + caf::monitored>(snapshot_op, cfg);
  auto rp = self->make_response_promise<Reply>();
  // Bounded: the op ends itself at its deadline; this is the margin for an op that
  // cannot (its answer then says so, and the gate stays closed until the op is gone).
  const auto bound =
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg.timeout) + std::chrono::seconds(30);
  const auto began = std::chrono::steady_clock::now();
  auto seconds = [began] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  };
  // The gate opens with the op's answer, not with its down message: the answer is its last
  // act, and the down message can arrive after the client has read the whole response and
  // asked again (a second save then saw 409 under load). An op that does not answer within
  // the bound keeps the gate closed until it is gone.
  auto op = st.op;
  auto release = [self, op] {
    if (self->state.op == op) self->state.op = nullptr;
  };
  self->request(st.op, bound, std::move(req))
      .then(
          [self, rp, metrics, seconds, release](Reply& r) mutable {
            release();
            auto ended = outcome(r);
            ended.seconds = seconds();
            self->send(metrics, ended);
            rp.deliver(std::move(r));
          },
          [self, rp, metrics, seconds, release](caf::error& e) mutable {
            if (e != caf::sec::request_timeout) release();
            self->send(metrics, snapshot_ended{std::is_same_v<Reply, snapshot_saved>, false, 0, seconds()});
            rp.deliver(std::move(e));
          });
  return rp;
}

}  // namespace

snapshot_gate_actor::behavior_type snapshot_gate(self_ptr self, snapshot_settings cfg,
                                                 metrics_registry_actor metrics) {
  self->set_down_handler([self](caf::down_msg& dm) {
    if (dm.source == self->state.op.address()) self->state.op = nullptr;
  });
  return {
      [self, cfg, metrics](snapshot_save_request& req) -> caf::result<snapshot_saved> {
        return admit<snapshot_save_request, snapshot_saved>(self, cfg, metrics, req);
      },
      [self, cfg, metrics](snapshot_restore_request& req) -> caf::result<snapshot_restored> {
        return admit<snapshot_restore_request, snapshot_restored>(self, cfg, metrics, req);
      },
      [self](shutdown_jobs&) {
        // An operation under way is not interrupted from here: it ends when its client is
        // gone (the server's shutdown closes every connection) or at its deadline, and its
        // confined helper is killed either way (actors/snapshot/snapshot_op.cpp).
        self->quit();
      },
  };
}

}  // namespace shellctl::actors
