#include "actors/native/catalog.hpp"

#include "io/text/clock.hpp"

namespace shellctl::actors {
namespace {

// A catalog that fails answers storage_unavailable with its message instead of ending the
// actor with it.
template <class Reply, class Work>
caf::result<Reply> guarded(Work work) {
  try {
    Reply r;
    work(r);
    return r;
  } catch (const std::exception& e) {
    return make_native_error(native_errc::storage_unavailable, e.what());
  }
}

}  // namespace

native_catalog_actor::behavior_type native_catalog(native_catalog_actor::pointer self,
                                                   std::shared_ptr<io::native::catalog> db) {
  return {
      [db](catalog_begin& m) {
        return guarded<catalog_begun>([&](catalog_begun& r) { r.outcome = db->begin_create(m.record, m.net); });
      },
      [db](catalog_record_worker& m) {
        return guarded<catalog_done>([&](catalog_done& r) {
          const auto& w = m.record;
          r.changed = db->record_worker(w.scope_id, w.generation, w.worker_pid, w.worker_starttime, w.boot_id,
                                        w.worker_nonce, w.cgroup_path, io::text::utc_now());
        });
      },
      [db](catalog_transition& m) {
        return guarded<catalog_done>([&](catalog_done& r) {
          r.changed = db->transition(m.scope_id, m.generation, m.from, m.to, m.reason, io::text::utc_now());
        });
      },
      [db](catalog_bury& m) {
        return guarded<catalog_done>([&](catalog_done& r) {
          r.changed = db->bury(m.scope_id, m.generation, m.reason, io::text::utc_now());
        });
      },
      [db](catalog_find& m) {
        return guarded<catalog_found>([&](catalog_found& r) {
          r.record = db->find(m.scope_id);
          r.tomb = db->find_tombstone(m.scope_id);
        });
      },
      [db](catalog_retained&) {
        return guarded<catalog_rows>([&](catalog_rows& r) { r.rows = db->retained(); });
      },
      [db](catalog_net_dial& m) {
        return guarded<catalog_net_grant>([&](catalog_net_grant& r) {
          // A spent byte budget refuses the dial before it costs a unit.
          const auto b = db->net_budget(m.scope_id);
          if (b && b->bytes_used >= b->bytes_limit)
            r.refusal = "network_bytes_exhausted";
          else if (db->charge_net_connection(m.scope_id))
            r.granted = 1;
          else
            r.refusal = "network_connections_exhausted";
        });
      },
      [db](catalog_net_reserve& m) {
        return guarded<catalog_net_grant>([&](catalog_net_grant& r) {
          r.granted = db->reserve_net_bytes(m.scope_id, m.max);
          if (r.granted == 0) r.refusal = "network_bytes_exhausted";
        });
      },
      [db](catalog_net_read& m) {
        return guarded<catalog_net_state>([&](catalog_net_state& r) {
          r.pins = db->net_pins(m.scope_id);
          r.budget = db->net_budget(m.scope_id);
        });
      },
      [self](native_shutdown&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
