#pragma once
// retention_gc: the timer actor of decision D1. Every interval it asks the store for
// terminal jobs whose ended_at is older than the retention and has the registry tell
// their job actors to remove themselves (row, files, tmux session). Unfinished jobs are
// never selected; reads never touch ended_at, so they cannot extend retention.
#include "actors/messages.hpp"
#include "actors/settings.hpp"

namespace shellctl::actors {

caf::behavior retention_gc(caf::event_based_actor* self, retention_settings cfg,
                           caf::actor store, caf::actor registry);

}  // namespace shellctl::actors
