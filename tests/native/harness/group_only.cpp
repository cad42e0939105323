#include "tests/native/harness/group_only.hpp"

#include "io/sandbox/cgroups.hpp"

namespace shellctl::tests::native {
namespace {

class group_only final : public io::native::scope_cgroups {
 public:
  using scope_cgroups::scope_cgroups;
  std::vector<std::string> enforced() const override { return {}; }
  std::string fits(const std::vector<io::native::scope_limits>&, const io::native::scope_limits&) const override {
    return "";  // nothing is bounded here; the scope cap still holds
  }

 protected:
  bool apply_bounds(const std::string& dir, const io::native::scope_limits& l, std::string& err) override {
    return io::sandbox::cgroups::set(dir, "cgroup.max.descendants", std::to_string(l.max_jobs + 1), err);
  }
};

}  // namespace

std::unique_ptr<io::native::scope_cgroups> group_only_cgroups(const std::string& unit_dir) {
  return std::make_unique<group_only>(unit_dir);
}

}  // namespace shellctl::tests::native
