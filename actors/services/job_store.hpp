#pragma once
// job_store: the single owner of the server's SQLite connection. Runs detached (its own
// thread), since a write may wait up to busy_timeout for shellctl-runner-exit.
#include <memory>

#include "actors/protocol/interfaces.hpp"
#include "io/native/worker/worker_budget.hpp"
#include "io/store/jobs_db.hpp"

namespace shellctl::actors {

// `db` is opened by the caller (so that a bad database fails startup) and handed over: after
// the spawn only the store's thread uses it. In a native scope's worker `budget` is the
// worker's budget connection on the same file: inserts are then admissions (a job slot and the
// input charge in the insert's transaction, docs/native-scopes.md "The scope worker").
job_store_actor::behavior_type job_store(job_store_actor::pointer self,
                                         std::shared_ptr<io::store::jobs_db> db,
                                         std::shared_ptr<io::native::worker_budget> budget);

}  // namespace shellctl::actors
