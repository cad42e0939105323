#include "actors/snapshot_gate.hpp"

#include "actors/snapshot_op.hpp"

namespace shellctl::actors {
namespace {

using self_ptr = snapshot_gate_actor::stateful_pointer<snapshot_gate_state>;

// Runs `req` as the one operation, or refuses it.
template <class Request, class Reply>
caf::result<Reply> admit(self_ptr self, const snapshot_settings& cfg, Request& req) {
  auto& st = self->state;
  if (st.op)
    return make_job_error(job_errc::snapshot_busy, "another snapshot operation is in progress");
  st.op = self->spawn<caf::detached + caf::monitored>(snapshot_op, cfg);
  auto rp = self->make_response_promise<Reply>();
  // Bounded: the op ends itself at its deadline; this is the margin for an op that
  // cannot (its answer then says so, and the gate stays closed until the op is gone).
  const auto bound =
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg.timeout) + std::chrono::seconds(30);
  self->request(st.op, bound, std::move(req))
      .then([rp](Reply& r) mutable { rp.deliver(std::move(r)); },
            [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
  return rp;
}

}  // namespace

snapshot_gate_actor::behavior_type snapshot_gate(self_ptr self, snapshot_settings cfg) {
  self->set_down_handler([self](caf::down_msg& dm) {
    if (dm.source == self->state.op.address()) self->state.op = nullptr;
  });
  return {
      [self, cfg](snapshot_save_request& req) -> caf::result<snapshot_saved> {
        return admit<snapshot_save_request, snapshot_saved>(self, cfg, req);
      },
      [self, cfg](snapshot_restore_request& req) -> caf::result<snapshot_restored> {
        return admit<snapshot_restore_request, snapshot_restored>(self, cfg, req);
      },
      [self](shutdown_jobs&) {
        // An operation under way is not interrupted from here (it may be inside libarchive,
        // which must not be unwound): it ends at its deadline, or at once when the server's
        // connections close and its client is gone.
        self->quit();
      },
  };
}

}  // namespace shellctl::actors
