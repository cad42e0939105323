#include "io/sandbox/landlock.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

// Debian 12's headers stop at Landlock ABI 2; the uapi values are stable, so they are
// spelled out here and the ABI is detected at run time.
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

namespace shellctl::io::sandbox {

namespace {

constexpr std::uint32_t kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;

constexpr std::uint64_t kExecute = 1ULL << 0;
constexpr std::uint64_t kWriteFile = 1ULL << 1;
constexpr std::uint64_t kReadFile = 1ULL << 2;
constexpr std::uint64_t kReadDir = 1ULL << 3;
constexpr std::uint64_t kAbi1All = (1ULL << 13) - 1;  // EXECUTE .. MAKE_SYM
constexpr std::uint64_t kRefer = 1ULL << 13;          // ABI 2
constexpr std::uint64_t kTruncate = 1ULL << 14;       // ABI 3
constexpr std::uint64_t kIoctlDev = 1ULL << 15;       // ABI 5

// The kernel accepts a struct as long as the ABI it knows: 8 bytes before ABI 4, 16 with
// network rights (not restricted here: jobs keep their network), 24 with scopes (ABI 6).
struct ruleset_attr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};

// ABI 6: signals and abstract Unix sockets may not cross the domain's boundary, so a job
// can neither signal nor connect to anything that is not of its own domain.
constexpr std::uint64_t kScopeAbstractUnixSocket = 1ULL << 0;
constexpr std::uint64_t kScopeSignal = 1ULL << 1;

struct __attribute__((packed)) path_beneath_attr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

std::string errno_text(int e) { return std::strerror(e); }

class ruleset {
 public:
  ruleset(int fd, std::uint64_t handled) : fd_(fd), handled_(handled) {}
  ~ruleset() { ::close(fd_); }
  ruleset(const ruleset&) = delete;
  ruleset& operator=(const ruleset&) = delete;

  // Adds a path-beneath rule. A missing path is skipped when `optional`.
  bool add(const std::string& path, std::uint64_t access, bool optional, std::string& err) {
    if (path.empty()) {
      err = "empty path in policy";
      return false;
    }
    const int pfd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (pfd < 0) {
      if (optional && (errno == ENOENT || errno == ENOTDIR)) return true;
      err = "open " + path + ": " + errno_text(errno);
      return false;
    }
    path_beneath_attr attr{access & handled_, pfd};
    const long rc = ::syscall(SYS_landlock_add_rule, fd_, kRulePathBeneath, &attr, 0U);
    const int saved = errno;
    ::close(pfd);
    if (rc != 0) {
      err = "add rule for " + path + ": " + errno_text(saved);
      return false;
    }
    return true;
  }

  bool restrict_self(std::string& err) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
      err = "set no_new_privs: " + errno_text(errno);
      return false;
    }
    if (::syscall(SYS_landlock_restrict_self, fd_, 0U) != 0) {
      err = "restrict self: " + errno_text(errno);
      return false;
    }
    return true;
  }

 private:
  int fd_;
  std::uint64_t handled_;
};

}  // namespace

int landlock_abi() {
  const long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  if (v < 0) return -errno;
  return static_cast<int>(v);
}

bool apply_landlock(const policy::path_policy& policy, const std::string& home, const std::string& cwd,
                    const std::string& job_dir, std::string& err) {
  const int abi = landlock_abi();
  if (abi < 0) {
    err = "not supported by this kernel: " + errno_text(-abi);
    return false;
  }
  std::uint64_t handled = kAbi1All;
  if (abi >= 2) handled |= kRefer;
  if (abi >= 3) handled |= kTruncate;
  if (abi >= 5) handled |= kIoctlDev;

  ruleset_attr attr{handled, 0, 0};
  std::size_t attr_size = sizeof attr.handled_access_fs;
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    attr_size = sizeof attr;
  }
  const long fd = ::syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0U);
  if (fd < 0) {
    err = "create ruleset: " + errno_text(errno);
    return false;
  }
  ruleset rs(static_cast<int>(fd), handled);

  const std::uint64_t rw_dir = handled;
  const std::uint64_t ro_dir = kExecute | kReadFile | kReadDir;
  const std::uint64_t rw_file = kReadFile | kWriteFile | kTruncate | kIoctlDev;

  if (home.empty()) {
    err = "HOME is empty";
    return false;
  }
  if (!rs.add(home, rw_dir, false, err)) return false;
  if (!cwd.empty() && cwd != home && !rs.add(cwd, rw_dir, false, err)) return false;
  for (const auto& p : policy.rw_dirs)
    if (!rs.add(p, rw_dir, true, err)) return false;
  for (const auto& p : policy.ro_dirs)
    if (!rs.add(p, ro_dir, true, err)) return false;
  // Read-only, so the script itself can be read and executed but not rewritten. A Home
  // operation (io/home/confine.hpp) has no job dir.
  if (!job_dir.empty() && !rs.add(job_dir, ro_dir, false, err)) return false;
  for (const auto& p : policy.rw_files)
    if (!rs.add(p, rw_file, true, err)) return false;
  return rs.restrict_self(err);
}

}  // namespace shellctl::io::sandbox
