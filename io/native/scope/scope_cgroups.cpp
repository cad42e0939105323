#include "io/native/scope/scope_cgroups.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "io/sandbox/cgroups.hpp"

namespace shellctl::io::native {

namespace cg = io::sandbox::cgroups;

bool scope_cgroups::create(const std::string& name, const scope_limits& l, std::string& err) {
  const std::string d = dir(name);
  if (::mkdir(d.c_str(), 0755) != 0) {
    err = "mkdir " + d + ": " + std::strerror(errno);
    return false;
  }
  bool ok = apply_bounds(d, l, err);
  if (ok && ::mkdir(worker_dir(name).c_str(), 0755) != 0) {
    err = "mkdir " + worker_dir(name) + ": " + std::strerror(errno);
    ok = false;
  }
  if (ok) return true;
  std::string ignored;
  cg::end(d, std::chrono::milliseconds(1000), ignored);
  return false;
}

bool scope_cgroups::destroy(const std::string& name, std::chrono::milliseconds bound, std::string& err) {
  return cg::end(dir(name), bound, err);
}

std::string scope_cgroup_name(const std::string& scope_id, std::uint64_t generation) {
  return scope_id + ".g" + std::to_string(generation);
}

namespace {

// The first word of <dir>/<file>; "" when unreadable.
std::string first_word(const std::string& path) {
  std::ifstream in(path);
  std::string w;
  in >> w;
  return w;
}

class delegated final : public scope_cgroups {
 public:
  using scope_cgroups::scope_cgroups;
  std::vector<std::string> enforced() const override { return {"cpu", "memory", "pids"}; }

  std::string fits(const std::vector<scope_limits>& held, const scope_limits& wanted) const override {
    std::uint64_t mem = wanted.memory_bytes + wanted.swap_bytes, pids = wanted.pids,
                  cpu = wanted.cpu_millicores;
    for (const auto& h : held) {
      mem += h.memory_bytes + h.swap_bytes;
      pids += h.pids;
      cpu += h.cpu_millicores;
    }
    const std::string mem_max = first_word(unit_dir() + "/memory.max");
    const std::string pids_max = first_word(unit_dir() + "/pids.max");
    std::string quota, period;
    {
      std::ifstream in(unit_dir() + "/cpu.max");
      in >> quota >> period;
    }
    // An unreadable or unparsable bound is not a fit (never a guess that it is).
    auto over = [](const std::string& limit, std::uint64_t want) {
      if (limit == "max") return false;
      if (limit.empty() || limit.find_first_not_of("0123456789") != std::string::npos) return true;
      return want > std::stoull(limit);
    };
    if (over(mem_max, mem)) return "memory: the unit's memory.max is " + mem_max;
    if (over(pids_max, pids)) return "pids: the unit's pids.max is " + pids_max;
    if (quota != "max" && (quota.empty() || period.empty() ||
                           quota.find_first_not_of("0123456789") != std::string::npos ||
                           period.find_first_not_of("0123456789") != std::string::npos))
      return "cpu: the unit's cpu.max cannot be read";
    if (quota != "max") {
      const std::uint64_t unit_millicores = std::stoull(quota) * 1000 / std::max<std::uint64_t>(1, std::stoull(period));
      if (cpu > unit_millicores) return "cpu: the unit's cpu.max allows " + std::to_string(unit_millicores) + " millicores";
    }
    return "";
  }

 protected:
  bool apply_bounds(const std::string& d, const scope_limits& l, std::string& err) override {
    // cpu.max "<quota> <period>": millicores of one CPU over a 100 ms period.
    // The kernel takes no quota under 1 ms.
    const std::uint64_t period = 100000;
    const std::uint64_t quota = std::max<std::uint64_t>(1000, l.cpu_millicores * period / 1000);
    return cg::set(d, "cpu.max", std::to_string(quota) + " " + std::to_string(period), err) &&
           cg::set(d, "memory.max", std::to_string(l.memory_bytes), err) &&
           cg::set(d, "memory.swap.max", std::to_string(l.swap_bytes), err) &&
           cg::set(d, "pids.max", std::to_string(l.pids), err) &&
           cg::set(d, "cgroup.max.descendants", std::to_string(l.max_jobs + 1), err) &&
           cg::set(d, "cgroup.subtree_control", "+cpu +memory +pids", err);
  }
};

}  // namespace

std::unique_ptr<scope_cgroups> delegated_cgroups(const std::string& unit_dir) {
  return std::make_unique<delegated>(unit_dir);
}

}  // namespace shellctl::io::native
