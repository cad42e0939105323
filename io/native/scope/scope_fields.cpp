#include "io/native/scope/scope_fields.hpp"

namespace shellctl::io::native {

bool valid_scope_id(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(i > 0 && c == '-')) return false;
  }
  return true;
}

std::optional<std::uint64_t> parse_generation(std::string_view s) {
  if (s.empty() || s.size() > 16 || s[0] == '0') return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > kMaxGeneration) return std::nullopt;
  return v;
}

bool valid_binding_ref(std::string_view s) {
  if (s.empty() || s.size() > 256) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

bool valid_ref(std::string_view s) {
  if (s.empty() || s.size() > 4096) return false;
  std::size_t start = 0;
  for (;;) {
    const auto slash = s.find('/', start);
    const auto seg = s.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    for (char c : seg) {
      const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
      if (!ok) return false;
    }
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

std::string limits_problem(const scope_limits& l, bool has_network_targets) {
  const std::pair<const char*, std::uint64_t> positive[] = {
      {"cpu_millicores", l.cpu_millicores}, {"memory_bytes", l.memory_bytes}, {"pids", l.pids},
      {"disk_bytes", l.disk_bytes},         {"input_bytes", l.input_bytes},   {"output_bytes", l.output_bytes},
      {"max_jobs", l.max_jobs},             {"job_wall_seconds", l.job_wall_seconds},
      {"open_files", l.open_files},         {"file_bytes", l.file_bytes}};
  for (const auto& [name, v] : positive)
    if (v == 0) return std::string("limits.") + name + " must be greater than 0";
  if (l.max_jobs > kMaxJobsPerScope)
    return "limits.max_jobs must be at most " + std::to_string(kMaxJobsPerScope);
  for (const auto& [name, v] : {std::pair<const char*, std::uint64_t>{"network_bytes", l.network_bytes},
                                {"network_connections", l.network_connections}}) {
    if (has_network_targets && v == 0)
      return std::string("limits.") + name + " must be greater than 0 with network targets";
    if (!has_network_targets && v != 0)
      return std::string("limits.") + name + " must be 0 without network targets";
  }
  // In 128-bit-free arithmetic: each term is checked against overflow first.
  constexpr std::uint64_t kSlack = 34ull << 20;
  const std::uint64_t terms[] = {l.disk_bytes, l.input_bytes, l.input_bytes, l.output_bytes, kSlack};
  std::uint64_t need = 0;
  bool overflow = false;
  for (auto t : terms) {
    if (need > UINT64_MAX - t) overflow = true;
    need += overflow ? 0 : t;
  }
  if (overflow || l.memory_bytes <= need)
    return "limits.memory_bytes must exceed disk_bytes + 2*input_bytes + output_bytes + 34 MiB" +
           (overflow ? std::string() : " (" + std::to_string(need) + ")");
  return "";
}

}  // namespace shellctl::io::native
