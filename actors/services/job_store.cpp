#include "actors/services/job_store.hpp"

#include "io/text/clock.hpp"

namespace shellctl::actors {


namespace {

// Runs one DB operation and turns SQLite failures into the answer's error, so a full disk
// becomes an error for that request instead of a dead actor: storage_unavailable when it
// passes (the writer retries), internal_error otherwise.
template <class T, class F>
caf::result<T> guarded(F f) {
  try {
    return f();
  } catch (const io::store::db_error& e) {
    return make_job_error(e.transient() ? job_errc::storage_unavailable : job_errc::internal_error, e.what());
  } catch (const std::exception& e) {
    return make_job_error(job_errc::internal_error, e.what());
  }
}

}  // namespace

job_store_actor::behavior_type job_store(job_store_actor::pointer self,
                                         std::shared_ptr<io::store::jobs_db> db,
                                         std::shared_ptr<io::native::worker_budget> budget) {
  return {
      [db, budget](store_insert& m) {
        return guarded<store_outcome>([&]() -> caf::result<store_outcome> {
          store_outcome r;
          if (budget) {
            using io::native::admission;
            switch (budget->admit(m.row, m.input_charge, m.key)) {
              case admission::admitted: r.changed = true; break;
              case admission::duplicate_job: r.changed = false; break;
              case admission::job_capacity_exhausted:
                return make_job_error(job_errc::job_capacity_exhausted,
                                      "The scope admitted all the jobs its limits allow");
              case admission::input_budget_exhausted:
                return make_job_error(job_errc::input_budget_exhausted,
                                      "The job's script and environment exceed the scope's input budget");
            }
          } else {
            r.changed = db->insert(m.row, m.key);
          }
          r.row = db->get(m.row.job_id);
          return r;
        });
      },
      [budget](store_charge_input& m) {
        return guarded<store_outcome>([&]() -> caf::result<store_outcome> {
          // No budget (an ordinary server): nothing to charge.
          if (budget && !budget->charge_input(m.bytes))
            return make_job_error(job_errc::input_budget_exhausted, "The input exceeds the scope's input budget");
          return store_outcome{true, std::nullopt};
        });
      },
      [db](store_apply& m) {
        return guarded<store_outcome>([&]() -> caf::result<store_outcome> {
          store_outcome r;
          r.changed = db->apply(m.job_id, m.t, io::text::utc_now());
          r.row = db->get(m.job_id);
          return r;
        });
      },
      [db](store_record_exit& m) {
        return guarded<store_outcome>([&]() -> caf::result<store_outcome> {
          store_outcome r;
          r.changed = db->record_exit_server(m.job_id, m.code, m.ended_at) ==
                      io::store::record_result::recorded;
          r.row = db->get(m.job_id);
          return r;
        });
      },
      [db](store_remove& m) {
        return guarded<store_outcome>([&]() -> caf::result<store_outcome> {
          return store_outcome{db->remove(m.job_id), std::nullopt};
        });
      },
      [db](store_load_all&) {
        return guarded<store_rows>([&]() -> caf::result<store_rows> {
          return store_rows{db->list_all(), db->run_keys()};
        });
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
      [budget](store_usage&) {
        return guarded<store_usage_reply>([&]() -> caf::result<store_usage_reply> {
          if (!budget) return make_job_error(job_errc::internal_error, "no budget: not a scope's worker");
          return store_usage_reply{budget->usage()};
        });
      },
      [db](store_count_jobs&) {
        return guarded<store_job_counts>([&]() -> caf::result<store_job_counts> {
          store_job_counts r;
          for (auto& c : db->count_by_status_mode())
            r.counts.push_back(job_count{std::move(c.status), std::move(c.mode), c.n});
          return r;
        });
      },
      [self](shutdown_jobs&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
