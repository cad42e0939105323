#pragma once
// Where a scope's processes live (docs/native-scopes.md "The scope service"): the scope's cgroup
// `<U>/<scope_id>.g<generation>/` carries its bounds, its worker is born into `worker/`
// below it (clone3 CLONE_INTO_CGROUP), and each job gets a leaf `job-<id>` beside it. The
// scope is destroyed by ending that whole tree (cgroup.kill, `populated 0`, rmdir:
// io/sandbox/cgroups.hpp).
//
// Production is `delegated_cgroups`: the unit cgroup's cpu, memory and pids controllers
// enforce every bound, or the supervisor never starts (its startup checks). The test
// backend `group_only`, which groups, kills and freezes but enforces no bound, exists only
// in tests/native/harness: no build of `shellctl` can run scopes without their bounds.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "io/native/scope/scope_fields.hpp"

namespace shellctl::io::native {

class scope_cgroups {
 public:
  explicit scope_cgroups(std::string unit_dir) : unit_dir_(std::move(unit_dir)) {}
  virtual ~scope_cgroups() = default;

  // The controllers that enforce a scope's bounds, sorted (the capability document's
  // cgroup_controllers).
  virtual std::vector<std::string> enforced() const = 0;
  // "" when scopes with `held` limits plus one with `wanted` fit the unit's cpu, memory
  // and pids, else why not.
  virtual std::string fits(const std::vector<scope_limits>& held, const scope_limits& wanted) const = 0;
  // Creates the scope's cgroup with its bounds, and `worker/` below it. False with err;
  // nothing is left behind then.
  bool create(const std::string& name, const scope_limits& l, std::string& err);
  // Ends every process of the scope and removes its cgroups (at most `bound`).
  bool destroy(const std::string& name, std::chrono::milliseconds bound, std::string& err);

  const std::string& unit_dir() const { return unit_dir_; }
  std::string dir(const std::string& name) const { return unit_dir_ + "/" + name; }
  std::string worker_dir(const std::string& name) const { return dir(name) + "/worker"; }

 protected:
  // Writes the bounds into the (new, empty) scope cgroup `dir`. False with err.
  virtual bool apply_bounds(const std::string& dir, const scope_limits& l, std::string& err) = 0;

 private:
  std::string unit_dir_;
};

// The production backend: cpu.max, memory.max, memory.swap.max, pids.max and
// cgroup.max.descendants (max_jobs + 1) on every scope, checked against the unit's own.
std::unique_ptr<scope_cgroups> delegated_cgroups(const std::string& unit_dir);

// The scope's cgroup name: <scope_id>.g<generation>.
std::string scope_cgroup_name(const std::string& scope_id, std::uint64_t generation);

}  // namespace shellctl::io::native
