#pragma once
// The same-HOME output views (guarantee G7, docs/security.md "Guarantees"). The newest real
// client tells the model to read a job's `output_path` when a window was truncated, and a
// later job of the same agent must be able to do so although the state dir is masked in
// every job. The server keeps, per canonical HOME, a directory
//   <state>/runtime/home-views/<encoded HOME>/jobs/<id>/output.log
// whose entries are hard links to the jobs' output.log files (same inode: they grow as the
// job writes); the runner shows that jobs/ directory, read-only, at <state>/jobs inside
// every job of that HOME. Views live in the runtime dir, which no job ever sees.
#include <set>
#include <string>

namespace shellctl::io::fs {

// Links <job output.log> into `view_dir` (io/policy/path_rules.hpp: home_view_dir) as
// jobs/<job_id>/output.log. False with `err` (the job then simply has no view entry).
bool link_into_home_view(const std::string& view_dir, const std::string& job_id,
                         const std::string& output_log, std::string& err);

// Removes the job's entry from every view (delete, retention, orphan cleanup).
void unlink_from_home_views(const std::string& state_dir, const std::string& job_id);

// Removes entries whose job is not in `known` (startup), and views left empty.
void prune_home_views(const std::string& state_dir, const std::set<std::string>& known);

}  // namespace shellctl::io::fs
