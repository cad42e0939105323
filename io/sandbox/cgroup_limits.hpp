#pragma once
// The per-job limits in the kernel's cgroup syntax (memory.max, pids.max, cpu.max): the
// server's (SHELLCTL_JOB_*_MAX), a run's own ("limits"), and the checks between them. Pure
// text rules, no file is touched: the API codec and the HTTP fuzzer use them without the
// sandbox (io/sandbox/cgroups.hpp writes them into a job's cgroup).
#include <cstdint>
#include <optional>
#include <string>

namespace shellctl::io::sandbox::cgroups {

// Server-wide per-job limits in cgroup syntax ("" = not asked for): memory.max,
// pids.max, cpu.max (SHELLCTL_JOB_MEMORY_MAX, _PIDS_MAX, _CPU_MAX).
struct job_limits {
  std::string memory_max;
  std::string pids_max;
  std::string cpu_max;
  bool any() const { return !memory_max.empty() || !pids_max.empty() || !cpu_max.empty(); }
};

// A run's own limits (POST /v1/jobs/run "limits"; docs/api.md "Limits per job"): nullopt =
// not asked for, the server's value (if any) applies.
struct run_limits {
  std::optional<std::uint64_t> memory_bytes;  // memory.max
  std::optional<std::uint64_t> pids;          // pids.max
  std::optional<double> cpu;                  // CPUs: cpu.max is cpu * 100000 per 100000 us
  bool any() const { return memory_bytes || pids || cpu; }
};

// The controllers that job cgroups have (the root's cgroup.subtree_control), among those
// a run's limits need.
struct job_controllers {
  bool memory = false, pids = false, cpu = false;
};

// Whether a run's limits can be given: each needs its controller, holds the kernel's
// bounds, and stays within the server's limit (the ceiling). "" when they hold, else the
// reason, naming the field (the 422's message).
std::string check_run_limits(const run_limits& asked, const job_controllers& have,
                             const job_limits& ceilings);

// The job cgroup's values: the run's own where it asked, the server's elsewhere.
job_limits narrowed(const job_limits& server, const run_limits& asked);

// The server's limits as a run would write them (for /v1/info); nullopt for none / "max".
std::optional<std::uint64_t> memory_bytes_of(const std::string& memory_max);
std::optional<std::uint64_t> pids_of(const std::string& pids_max);
std::optional<double> cpus_of(const std::string& cpu_max);

// Syntax checks for the limit values (the kernel's own rules, so that a typo stops
// startup instead of failing every job): "max" or bytes with an optional K/M/G/T suffix;
// "max" or a positive count; "max|quota [period]" in microseconds.
bool valid_memory_max(const std::string& v);
bool valid_pids_max(const std::string& v);
bool valid_cpu_max(const std::string& v);

}  // namespace shellctl::io::sandbox::cgroups
