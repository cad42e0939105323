#include "io/sandbox/cgroup_limits.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace shellctl::io::sandbox::cgroups {
namespace {

bool all_digits(const std::string& s, std::size_t from = 0, std::size_t to = std::string::npos) {
  if (to == std::string::npos) to = s.size();
  if (from >= to) return false;
  for (std::size_t i = from; i < to; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

}  // namespace

bool valid_memory_max(const std::string& v) {
  if (v == "max") return true;
  if (v.empty()) return false;
  std::size_t end = v.size();
  const char last = v.back();
  if (last == 'K' || last == 'M' || last == 'G' || last == 'T' || last == 'k' || last == 'm' ||
      last == 'g' || last == 't')
    --end;
  return all_digits(v, 0, end);
}

bool valid_pids_max(const std::string& v) {
  if (v == "max") return true;
  return all_digits(v) && v.find_first_not_of('0') != std::string::npos;
}

bool valid_cpu_max(const std::string& v) {
  const auto space = v.find(' ');
  const std::string quota = v.substr(0, space);
  if (quota != "max" && !(all_digits(quota) && quota.find_first_not_of('0') != std::string::npos))
    return false;
  if (space == std::string::npos) return true;
  const std::string period = v.substr(space + 1);
  return all_digits(period) && period.find_first_not_of('0') != std::string::npos;
}

namespace {
constexpr std::uint64_t kCpuPeriodUs = 100000;
constexpr std::uint64_t kMinCpuQuotaUs = 1000;            // the kernel's smallest cpu.max quota
constexpr std::uint64_t kMinMemoryBytes = 1024 * 1024;    // below this a job cannot even exec
constexpr double kMaxCpus = 4096;

std::uint64_t cpu_quota_us(double cpus) {
  return static_cast<std::uint64_t>(std::llround(cpus * static_cast<double>(kCpuPeriodUs)));
}

std::string number_text(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}
}  // namespace

std::optional<std::uint64_t> memory_bytes_of(const std::string& memory_max) {
  if (memory_max.empty() || memory_max == "max" || !valid_memory_max(memory_max)) return std::nullopt;
  std::uint64_t scale = 1;
  std::string digits = memory_max;
  switch (std::tolower(static_cast<unsigned char>(memory_max.back()))) {
    case 'k': scale = 1ULL << 10; break;
    case 'm': scale = 1ULL << 20; break;
    case 'g': scale = 1ULL << 30; break;
    case 't': scale = 1ULL << 40; break;
    default: break;
  }
  if (scale != 1) digits.pop_back();
  return std::strtoull(digits.c_str(), nullptr, 10) * scale;
}

std::optional<std::uint64_t> pids_of(const std::string& pids_max) {
  if (pids_max.empty() || pids_max == "max" || !valid_pids_max(pids_max)) return std::nullopt;
  return std::strtoull(pids_max.c_str(), nullptr, 10);
}

std::optional<double> cpus_of(const std::string& cpu_max) {
  if (cpu_max.empty() || !valid_cpu_max(cpu_max)) return std::nullopt;
  const auto space = cpu_max.find(' ');
  const std::string quota = cpu_max.substr(0, space);
  if (quota == "max") return std::nullopt;
  const double period = space == std::string::npos ? static_cast<double>(kCpuPeriodUs)
                                                   : std::strtod(cpu_max.c_str() + space + 1, nullptr);
  return std::strtod(quota.c_str(), nullptr) / period;
}

std::string check_run_limits(const run_limits& asked, const job_controllers& have,
                             const job_limits& ceilings) {
  std::string missing;
  auto need = [&](bool wanted, bool present, const char* controller) {
    if (wanted && !present) missing += std::string(missing.empty() ? "" : ", ") + controller;
  };
  need(asked.memory_bytes.has_value(), have.memory, "memory");
  need(asked.pids.has_value(), have.pids, "pids");
  need(asked.cpu.has_value(), have.cpu, "cpu");
  if (!missing.empty())
    return "limits need the cgroup v2 controller(s) " + missing +
           ", which this server's job cgroups do not have (GET /v1/info: job_limits.available)";
  if (asked.memory_bytes) {
    if (*asked.memory_bytes < kMinMemoryBytes)
      return "limits.memory_bytes must be at least 1048576 (1 MiB)";
    if (auto ceiling = memory_bytes_of(ceilings.memory_max); ceiling && *asked.memory_bytes > *ceiling)
      return "limits.memory_bytes " + std::to_string(*asked.memory_bytes) +
             " is above the server's limit (SHELLCTL_JOB_MEMORY_MAX " + ceilings.memory_max + ")";
  }
  if (asked.pids) {
    if (*asked.pids < 1) return "limits.pids must be at least 1";
    if (auto ceiling = pids_of(ceilings.pids_max); ceiling && *asked.pids > *ceiling)
      return "limits.pids " + std::to_string(*asked.pids) +
             " is above the server's limit (SHELLCTL_JOB_PIDS_MAX " + ceilings.pids_max + ")";
  }
  if (asked.cpu) {
    if (!(*asked.cpu > 0) || *asked.cpu > kMaxCpus || cpu_quota_us(*asked.cpu) < kMinCpuQuotaUs)
      return "limits.cpu must be between 0.01 and 4096 (CPUs)";
    if (auto ceiling = cpus_of(ceilings.cpu_max); ceiling && *asked.cpu > *ceiling + 1e-9)
      return "limits.cpu " + number_text(*asked.cpu) + " is above the server's limit (SHELLCTL_JOB_CPU_MAX " +
             ceilings.cpu_max + ", " + number_text(*ceiling) + " CPUs)";
  }
  return "";
}

job_limits narrowed(const job_limits& server, const run_limits& asked) {
  job_limits out = server;
  if (asked.memory_bytes) out.memory_max = std::to_string(*asked.memory_bytes);
  if (asked.pids) out.pids_max = std::to_string(*asked.pids);
  if (asked.cpu) out.cpu_max = std::to_string(cpu_quota_us(*asked.cpu)) + " " + std::to_string(kCpuPeriodUs);
  return out;
}

}  // namespace shellctl::io::sandbox::cgroups
