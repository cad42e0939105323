#pragma once
// job_registry: knows which jobs exist. Admits new jobs (cwd check, id and directory
// allocation), routes requests to the job's actor, lists jobs by asking each actor, and
// fans tmux session-end events out to the job actors. It holds no job state itself:
// every status question goes to the job_actor that owns it.
#include <deque>
#include <map>
#include <string>

#include "actors/jobs/job_actor/job_actor.hpp"
#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/settings.hpp"

namespace shellctl::actors {

struct job_registry_state {
  static inline const char* name = "job_registry";
  job_settings cfg;
  job_peers peers;  // `registry` is this actor
  std::map<std::string, job_actor_type> jobs;
  std::deque<std::string> newest_first;  // creation order for GET /v1/jobs
  // Idempotency-Key → the job its first run started (and that request's body hash), and
  // back: a key lives as long as its job. Kept here, in the one actor every run passes
  // through, so repeats that arrive together are told apart by mailbox order alone.
  std::map<std::string, io::store::run_key> run_keys;
  std::map<std::string, std::string> run_key_of_job;
};

job_registry_actor::behavior_type job_registry(
    job_registry_actor::stateful_pointer<job_registry_state> self, job_settings cfg,
    job_store_actor store, tmux_server_actor tmux, fs_watcher_actor watcher,
    cleanup_worker_actor cleanup, metrics_registry_actor metrics, event_log_actor log,
    cgroup_reaper_actor reaper);

}  // namespace shellctl::actors
