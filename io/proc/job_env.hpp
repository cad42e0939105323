#pragma once
// The environment a job's script sees (docs/jobs.md "Starting a job", decisions D7/D10):
// the runner's own environment minus tmux's and the server's names, the request's
// `.job-env.json` overlay, then TMPDIR/TMP/TEMP forced to the job's cwd.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shellctl::io::proc {

using env_pairs = std::vector<std::pair<std::string, std::string>>;

// True for names never passed from the runner's environment to a job: TMUX, TMUX_PANE and
// every SHELLCTL_* name (the server's settings, its auth token among them).
bool is_filtered_name(std::string_view name);

// Parses `.job-env.json`: a JSON object whose values are strings (a JSON null value counts
// as "", and a top-level null as an empty object, as Go's decoder treats them). Duplicate
// keys: the last one wins. Names that cannot be environment names (empty, containing '='
// or NUL) and values containing NUL are errors. nullopt on error, with `err` set.
std::optional<env_pairs> parse_env_json(std::string_view text, std::string& err);

// Builds the job's environment as "NAME=value" strings. `base` holds "NAME=value" entries
// (like environ); entries without '=' are dropped and a repeated name keeps its last value.
std::vector<std::string> build_job_env(const std::vector<std::string>& base,
                                       const env_pairs& overlay, const std::string& cwd);

// The process's current environment as "NAME=value" strings.
std::vector<std::string> current_environ();

}  // namespace shellctl::io::proc
