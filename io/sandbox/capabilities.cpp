#include "io/sandbox/capabilities.hpp"

#include <linux/securebits.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace shellctl::io::sandbox {

namespace {

// Docker's default set (moby's oci/caps/defaults.go) minus CAP_MKNOD.
const cap_value_t kKept[] = {CAP_CHOWN,  CAP_DAC_OVERRIDE, CAP_FSETID,           CAP_FOWNER,
                             CAP_NET_RAW, CAP_SETGID,      CAP_SETUID,           CAP_SETFCAP,
                             CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT,  CAP_KILL,
                             CAP_AUDIT_WRITE};
const char* const kKeptNames[] = {"cap_chown",       "cap_dac_override", "cap_fsetid",
                                  "cap_fowner",      "cap_net_raw",      "cap_setgid",
                                  "cap_setuid",      "cap_setfcap",      "cap_setpcap",
                                  "cap_net_bind_service", "cap_sys_chroot", "cap_kill",
                                  "cap_audit_write", nullptr};

bool kept(cap_value_t c, bool root) {
  if (!root) return false;
  for (cap_value_t k : kKept)
    if (k == c) return true;
  return false;
}

}  // namespace

const char* const* kept_capability_names() { return kKeptNames; }

bool cut_capabilities(std::string& err) {
  // uid 0 inside a user namespace of a non-root server is not "root" here: such a job
  // runs as the server's own uid and keeps nothing.
  const bool root = ::geteuid() == 0;
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    err = std::string("clear ambient capabilities: ") + std::strerror(errno);
    return false;
  }
  const cap_value_t last = cap_max_bits();
  for (cap_value_t c = 0; c < last; ++c) {
    if (kept(c, root)) continue;
    if (cap_drop_bound(c) != 0 && errno != EINVAL) {
      err = "drop capability " + std::to_string(c) + " from the bounding set: " +
            std::strerror(errno);
      return false;
    }
  }
  cap_t caps = cap_get_proc();
  if (caps == nullptr) {
    err = std::string("read capabilities: ") + std::strerror(errno);
    return false;
  }
  std::vector<cap_value_t> keep;
  for (cap_value_t c : kKept) {
    cap_flag_value_t has = CAP_CLEAR;
    if (root && cap_get_flag(caps, c, CAP_PERMITTED, &has) == 0 && has == CAP_SET)
      keep.push_back(c);
  }
  bool ok = cap_clear(caps) == 0;
  for (cap_flag_t set : {CAP_EFFECTIVE, CAP_PERMITTED, CAP_INHERITABLE})
    if (ok && !keep.empty())
      ok = cap_set_flag(caps, set, static_cast<int>(keep.size()), keep.data(), CAP_SET) == 0;
  if (ok) ok = cap_set_proc(caps) == 0;
  const int e = errno;
  cap_free(caps);
  if (!ok) {
    err = std::string("set capabilities: ") + std::strerror(e);
    return false;
  }
  return true;
}

bool drop_all_capabilities(std::string& err) {
  // Securebits first: setting them needs CAP_SETPCAP, which the next steps take away.
  // NOROOT: exec as uid 0 grants nothing; NO_SETUID_FIXUP: no capability follows a uid
  // change; KEEP_CAPS off; NO_CAP_AMBIENT_RAISE: no ambient set can be built again.
  const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                             SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                             SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (::prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0) {
    err = std::string("lock securebits: ") + std::strerror(errno);
    return false;
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    err = std::string("clear ambient capabilities: ") + std::strerror(errno);
    return false;
  }
  const cap_value_t last = cap_max_bits();
  for (cap_value_t c = 0; c < last; ++c)
    if (cap_drop_bound(c) != 0 && errno != EINVAL) {
      err = "drop capability " + std::to_string(c) + " from the bounding set: " +
            std::strerror(errno);
      return false;
    }
  cap_t caps = cap_init();  // all three sets empty
  const bool ok = caps != nullptr && cap_set_proc(caps) == 0;
  const int e = errno;
  if (caps != nullptr) cap_free(caps);
  if (!ok) {
    err = std::string("clear capabilities: ") + std::strerror(e);
    return false;
  }
  return true;
}

}  // namespace shellctl::io::sandbox
