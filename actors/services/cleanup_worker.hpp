#pragma once
// cleanup_worker: the blocking clean-ups, on its own thread (detached), so that no
// scheduler thread waits on the disk or on /proc: removing a job's tree (already moved
// aside by io::fs::move_aside, so nothing waits for it to be gone) and killing the
// process groups of whatever still names a job dir (a scan of all of /proc). Both are
// best effort and fire-and-forget; a tombstone left by a crash is removed at startup.
#include "actors/protocol/interfaces.hpp"

namespace shellctl::actors {

cleanup_worker_actor::behavior_type cleanup_worker(cleanup_worker_actor::pointer self);

}  // namespace shellctl::actors
