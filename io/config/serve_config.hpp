#pragma once
// `shellctl serve` settings (docs/layout.md "Settings"): flags with Go's flag syntax and the
// environment (SHELLCTL_*). Everything is validated here so that a bad setting stops
// startup with one clear line instead of surfacing later.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "io/sandbox/cgroups.hpp"

namespace shellctl::io::config {

struct serve_config {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8765;
  std::string listen_text = "127.0.0.1:8765";
  std::string state_dir;  // resolved (flag, XDG_DATA_HOME, HOME)
  std::string home;       // the server's HOME: default cwd
  std::string token;      // empty = auth off
  std::chrono::nanoseconds snapshot_timeout = std::chrono::seconds(45);
  std::chrono::nanoseconds retention = std::chrono::hours(24);
  std::chrono::nanoseconds gc_interval = std::chrono::seconds(60);
  // Path-isolation settings the runner receives (decision D7): only those that are set.
  std::vector<std::pair<std::string, std::string>> isolation_env;
  // HTTP front bounds (guarantee G5): SHELLCTL_HTTP_MAX_CONNECTIONS (default: half the
  // descriptor limit, at most 1024) and SHELLCTL_HTTP_MAX_BUFFERED_BYTES (positive integers).
  std::size_t max_connections = 1024;
  std::size_t max_buffered_bytes = 256u << 20;
  // SHELLCTL_HTTP_HEAD_TIMEOUT: a request head must be complete this long after its first
  // byte, and a connection that has not shown the token may idle this long (G5).
  std::chrono::nanoseconds head_timeout = std::chrono::seconds(10);
  bool isolation = true;   // SHELLCTL_ENABLE_PATH_ISOLATION: unset or exactly "true"
  bool namespaces = true;  // SHELLCTL_JOB_NAMESPACES: "auto" (default) or "off"
  // Whole-tree containment (docs/jobs.md "Containment"): --cgroup-root or SHELLCTL_CGROUP_ROOT
  // ("" = detect, "none" = off; io/sandbox/cgroups.hpp), and the optional per-job limits
  // SHELLCTL_JOB_MEMORY_MAX, SHELLCTL_JOB_PIDS_MAX, SHELLCTL_JOB_CPU_MAX (syntax checked
  // here; their controllers at startup).
  std::string cgroup_root;
  sandbox::cgroups::job_limits job_limits;
  // SHELLCTL_JOB_OOM_SCORE_ADJ: every job process's OOM score adjustment, -1000..1000
  // (io/proc/oom_score.hpp, default 800); the server's own is -800 where it may set it.
  int job_oom_score_adj = 800;
  // The native test supervisor (docs/native-scopes.md "The scope service"): a separate
  // instance, off by default. Its settings are refused without the mode; --native-check runs
  // the startup checks, prints them and changes nothing.
  struct native_settings {
    bool supervisor = false;  // --native-test-supervisor
    bool check_only = false;  // --native-check
    std::string base_root;    // --native-base-root / SHELLCTL_NATIVE_BASE_ROOT (required)
    std::string input_root;   // --native-input-root / SHELLCTL_NATIVE_INPUT_ROOT (required)
    std::string image_root = "/";  // --native-image-root / SHELLCTL_NATIVE_IMAGE_ROOT
    std::string unit_cgroup;  // SHELLCTL_NATIVE_CGROUP: "" = the parent of our own cgroup
    std::string mediator;     // --native-mediator / SHELLCTL_NATIVE_MEDIATOR: "IP:port" or ""
    std::size_t max_scopes = 16;                                  // SHELLCTL_NATIVE_MAX_SCOPES
    std::chrono::nanoseconds max_deadline = std::chrono::hours(24);  // _MAX_DEADLINE
  } native;
  // A native scope's worker (docs/native-scopes.md "The scope worker"): the ordinary job
  // server, set up by `shellctl native-worker` (never by flags), serving its scope's jobs on a
  // private control socket to its supervisor alone, with the scope's budgets and job sandbox.
  struct worker_settings {
    bool on = false;
    std::string control_socket;  // the Unix socket it listens on
    unsigned peer_uid = 0;       // the only uid that may connect (SO_PEERCRED)
    std::string scope_id;
    std::uint64_t generation = 0;
    std::string payload;           // the payload tmpfs (home/ workspace/ tmp/)
    // Each job's wall deadline: terminated after this long, or at the scope's
    // deadline if that comes first. 0 = none.
    std::chrono::seconds job_wall{0};
    std::int64_t deadline_epoch = 0;
    std::string image_root = "/";
    // The scope's network targets by index ("host", port), and the broker's socket: with
    // any, the worker's proxy listens on 127.0.0.1:3128 (actors/native/network/worker_proxy.hpp).
    std::vector<std::pair<std::string, std::uint16_t>> proxy_targets;
    std::string broker_socket;
    // The runner's scoped settings (SHELLCTL_NATIVE_JOB_*, io/proc/runner.hpp).
    std::vector<std::pair<std::string, std::string>> runner_env;
    // Called once: "" when the control socket listens, else why serving failed first.
    std::function<void(const std::string& error)> on_listening;
  } worker;
  // The environment the tmux server starts with (decision D10): ours minus TMUX* and
  // SHELLCTL_*.
  std::vector<std::string> tmux_env;
  // --log-format text|json (unset: text when stderr is a terminal, json otherwise) and
  // --log-level debug|info|warn|error: answered requests are logged at info.
  std::string log_format;  // "", "text" or "json"
  int log_level = 1;       // 0 debug, 1 info, 2 warn, 3 error
};

// exit_ok prints `message` on stderr (usage, as Go's flag package does); print_version on
// stdout.
enum class parse_result { run, exit_ok, print_version, exit_usage_error, exit_config_error };

// Parses argv and the environment. On anything but `run`, `message` holds what to print
// on stderr (usage or "shellctl: config: ...").
parse_result parse_serve(int argc, char** argv, char** envp, serve_config& out,
                         std::string& message);

}  // namespace shellctl::io::config
