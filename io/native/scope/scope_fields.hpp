#pragma once
// The field rules of a native test scope (docs/native-scopes.md "The scope service"): what a
// client may send as a scope id, a generation (body field and X-Scope-Generation header), a
// binding ref, a base snapshot or input file ref, and the limits. Pure functions: the edge
// turns a refusal into 400/422 with its documented error code.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shellctl::io::native {

constexpr std::uint64_t kMaxGeneration = (std::uint64_t{1} << 53) - 1;
constexpr std::uint64_t kMaxJobsPerScope = 64;

// ^[a-z0-9][a-z0-9-]{0,62}$
bool valid_scope_id(std::string_view s);
// A decimal 1 ... 2^53-1 with no sign, no leading zero and nothing else; nullopt otherwise.
std::optional<std::uint64_t> parse_generation(std::string_view s);
// Opaque: 1-256 bytes of printable ASCII.
bool valid_binding_ref(std::string_view s);
// A relative path of [A-Za-z0-9._-]+ segments, none of them "." or "..", no empty one.
bool valid_ref(std::string_view s);

// `limits` of a create request, every key required.
struct scope_limits {
  std::uint64_t cpu_millicores = 0, memory_bytes = 0, swap_bytes = 0, pids = 0;
  std::uint64_t disk_bytes = 0, input_bytes = 0, output_bytes = 0;
  std::uint64_t max_jobs = 0, job_wall_seconds = 0;
  std::uint64_t open_files = 0, file_bytes = 0;
  std::uint64_t network_bytes = 0, network_connections = 0;
};

// "" when the limits hold together, else what is wrong (for a 422 validation_error):
// every value > 0 (swap_bytes may be 0; the network pair is 0 exactly without targets),
// max_jobs <= 64, and memory_bytes > disk + 2*input + output + 34 MiB (payload, spool
// and script tmpfs all count against memory.max: a full disk must be ENOSPC, not an OOM).
std::string limits_problem(const scope_limits& l, bool has_network_targets);

}  // namespace shellctl::io::native
