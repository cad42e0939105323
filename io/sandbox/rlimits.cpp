#include "io/sandbox/rlimits.hpp"

#include <cerrno>
#include <cstring>

namespace shellctl::io::sandbox {

bool lower_limit(int resource, std::uint64_t value, std::string& err) {
  rlimit current{};
  if (::getrlimit(resource, &current) != 0) {
    err = "getrlimit " + std::to_string(resource) + ": " + std::strerror(errno);
    return false;
  }
  rlim_t to = static_cast<rlim_t>(value);
  if (current.rlim_max != RLIM_INFINITY && current.rlim_max < to) to = current.rlim_max;
  const rlimit lowered{to, to};
  if (::setrlimit(resource, &lowered) != 0) {
    err = "setrlimit " + std::to_string(resource) + " to " + std::to_string(value) + ": " +
          std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace shellctl::io::sandbox
