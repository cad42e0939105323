#include "actors/services/job_store.hpp"

#include "io/text/clock.hpp"

namespace shellctl::actors {


namespace {
// Runs one DB operation and folds SQLite failures into the reply, so a full disk
// becomes a 500 for that request instead of a dead actor.
template <class F>
store_reply guarded(F f) {
  try {
    return f();
  } catch (const io::store::db_error& e) {
    store_reply r;
    r.ok = false;
    r.error = e.what();
    r.transient = e.transient();
    return r;
  } catch (const std::exception& e) {
    store_reply r;
    r.ok = false;
    r.error = e.what();
    return r;
  }
}
}  // namespace

job_store_actor::behavior_type job_store(job_store_actor::pointer self,
                                         std::shared_ptr<io::store::jobs_db> db,
                                         std::shared_ptr<io::native::worker_budget> budget) {
  return {
      [db, budget](store_insert& m) {
        return guarded([&] {
          store_reply r;
          if (budget) {
            using io::native::admission;
            switch (budget->admit(m.row, m.input_charge, m.key)) {
              case admission::admitted: r.changed = true; break;
              case admission::duplicate_job: r.changed = false; break;
              case admission::job_capacity_exhausted: r.refused = "job_capacity_exhausted"; break;
              case admission::input_budget_exhausted: r.refused = "input_budget_exhausted"; break;
            }
          } else {
            r.changed = db->insert(m.row, m.key);
          }
          r.row = db->get(m.row.job_id);
          return r;
        });
      },
      [budget](store_charge_input& m) {
        return guarded([&] {
          store_reply r;
          // No budget (an ordinary server): nothing to charge.
          r.changed = !budget || budget->charge_input(m.bytes);
          if (!r.changed) r.refused = "input_budget_exhausted";
          return r;
        });
      },
      [db](store_apply& m) {
        return guarded([&] {
          store_reply r;
          r.changed = db->apply(m.job_id, m.t, io::text::utc_now());
          r.row = db->get(m.job_id);
          return r;
        });
      },
      [db](store_record_exit& m) {
        return guarded([&] {
          store_reply r;
          r.changed = db->record_exit_server(m.job_id, m.code, m.ended_at) ==
                      io::store::record_result::recorded;
          r.row = db->get(m.job_id);
          return r;
        });
      },
      [db](store_remove& m) {
        return guarded([&] {
          store_reply r;
          r.changed = db->remove(m.job_id);
          return r;
        });
      },
      [db](store_load_all&) -> store_rows {
        store_rows r;
        try {
          r.rows = db->list_all();
          r.run_keys = db->run_keys();
        } catch (const std::exception& e) {
          r.ok = false;
          r.error = e.what();
        }
        return r;
      },
      [db](store_expired& m) -> store_ids {
        store_ids r;
        try {
          r.ids = db->expired_ids(m.cutoff);
        } catch (const std::exception&) {
          // GC is best effort: the next tick tries again.
        }
        return r;
      },
      [budget](store_usage&) -> store_usage_reply {
        store_usage_reply r;
        if (!budget) {
          r.ok = false;
          r.error = "no budget: not a scope's worker";
          return r;
        }
        try {
          r.usage = budget->usage();
        } catch (const std::exception& e) {
          r.ok = false;
          r.error = e.what();
        }
        return r;
      },
      [db](store_count_jobs&) -> store_job_counts {
        store_job_counts r;
        try {
          for (auto& c : db->count_by_status_mode())
            r.counts.push_back(job_count{std::move(c.status), std::move(c.mode), c.n});
        } catch (const std::exception&) {
          r.ok = false;  // /metrics leaves the family out rather than report zero jobs
        }
        return r;
      },
      [self](shutdown_jobs&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
