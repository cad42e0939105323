#include "actors/native_catalog.hpp"

#include "io/text/clock.hpp"

namespace shellctl::actors {
namespace {

std::string now_text() { return io::text::utc_now(); }

}  // namespace

native_catalog_actor::behavior_type native_catalog(native_catalog_actor::pointer self,
                                                   std::shared_ptr<io::native::catalog> db) {
  return {
      [db](catalog_begin& m) {
        catalog_begun r;
        try {
          r.outcome = db->begin_create(m.record);
          r.ok = true;
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        return r;
      },
      [db](catalog_record_worker& m) {
        catalog_done r;
        try {
          const auto& w = m.record;
          r.ok = db->record_worker(w.scope_id, w.generation, w.worker_pid, w.worker_starttime,
                                   w.boot_id, w.worker_nonce, w.cgroup_path, now_text());
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        return r;
      },
      [db](catalog_transition& m) {
        catalog_done r;
        try {
          r.ok = db->transition(m.scope_id, m.generation, m.from, m.to, m.reason, now_text());
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        return r;
      },
      [db](catalog_bury& m) {
        catalog_done r;
        try {
          r.ok = db->bury(m.scope_id, m.generation, m.reason, now_text());
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        return r;
      },
      [db](catalog_find& m) {
        catalog_found r;
        try {
          r.record = db->find(m.scope_id);
          r.tomb = db->find_tombstone(m.scope_id);
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        return r;
      },
      [db](catalog_retained&) {
        catalog_rows r;
        try {
          r.rows = db->retained();
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        return r;
      },
      [self](native_shutdown&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
