#pragma once
// job_actor: one per job. Owns the job's status (created → starting → running →
// exited|terminated|failed|lost) and answers every request about it (docs/jobs.md
// "Lifecycle"). What it is doing about the status is its phase (job_phase.hpp), held with
// what only that phase needs in job_state.hpp. It learns of progress from events, never by
// polling (D12): fs_watcher reports files in the job dir (output growth, exit artifacts,
// pipe markers), tmux_server reports the session's end. Long-polls wait as waiters and are
// answered on completion, idle flush, a full window or their deadline, whichever first.
//
// The actor is written in sections, one file each (sections.hpp declares what they share):
//   job_actor.cpp  the message table: which handler each request and event reaches
//   start.cpp      admission, the job's files, the session, the pipe handshake, the gate
//   settle.cpp     the store link and the settle rules carried out; the cgroup's end
//   answers.cpp    what answers show: output finality, long-poll windows, streams, guards
//   control.cpp    input, signals, resize, activity and why a job ended
//   removal.cpp    terminate, delete, retention's removal, the actor's end
//   recovery.cpp   a job found in the database at startup
#include "actors/jobs/job_actor/job_state.hpp"

namespace shellctl::actors {

// A new job (the registry created its directory) gets `run_request` first; a job
// recovered from the database gets `recover_job`.
job_actor_type::behavior_type job_actor(job_actor_type::stateful_pointer<job_state> self,
                                        job_settings cfg, job_peers peers, job_row row);

}  // namespace shellctl::actors
