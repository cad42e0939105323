#pragma once
// retention_gc: the timer actor of decision D1. Every interval it asks the store for
// terminal jobs whose ended_at is older than the retention and has the registry tell
// their job actors to remove themselves (row, files, tmux session). Unfinished jobs are
// never selected; reads never touch ended_at, so they cannot extend retention.
#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/settings.hpp"

namespace shellctl::actors {

retention_gc_actor::behavior_type retention_gc(retention_gc_actor::pointer self,
                                               retention_settings cfg, job_store_actor store,
                                               job_registry_actor registry,
                                               metrics_registry_actor metrics);

}  // namespace shellctl::actors
