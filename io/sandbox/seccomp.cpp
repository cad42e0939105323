#include "io/sandbox/seccomp.hpp"

#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

namespace shellctl::io::sandbox {

namespace {

// Refused with EPERM.
const char* const kDenied[] = {
    // the file-system view and the namespaces were built for the job: they stay
    "mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "setns",
    // kernel keyrings are shared by every process of a uid
    "keyctl", "add_key", "request_key",
    // privileged kernel interfaces
    "bpf", "perf_event_open", "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "create_module", "reboot", "swapon", "swapoff", "acct", "quotactl",
    "quotactl_fd", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
    "syslog", "lookup_dcookie", "nfsservctl", "uselib", "ustat", "sysfs", "_sysctl",
    "iopl", "ioperm", "vm86", "vm86old", "get_kernel_syms", "query_module",
    // open files by handle, bypassing path checks
    "name_to_handle_at", "open_by_handle_at",
    // exploit primitives with little legitimate use in a job
    "userfaultfd",
};

// Refused with ENOSYS, so that libraries fall back to what they would use without them:
// glibc uses clone() when clone3() is missing (and clone()'s flags can be inspected), and
// libuv and others go back to plain file I/O without io_uring.
const char* const kMissing[] = {"clone3", "io_uring_setup", "io_uring_enter",
                                "io_uring_register"};

const unsigned long kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,
                                         CLONE_NEWNET, CLONE_NEWUTS,  CLONE_NEWIPC,
                                         CLONE_NEWCGROUP, 0x00000080UL /* CLONE_NEWTIME */};

bool add(scmp_filter_ctx ctx, uint32_t action, const char* name, std::string& err,
         unsigned count = 0, scmp_arg_cmp cmp = {}) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return true;  // unknown to this libseccomp: nothing to filter
  const int rc = count == 0 ? seccomp_rule_add(ctx, action, nr, 0)
                            : seccomp_rule_add(ctx, action, nr, 1, cmp);
  // -EDOM/-EINVAL: the syscall does not exist on one of the architectures; fine.
  if (rc != 0 && rc != -EDOM && rc != -EINVAL && rc != -EEXIST) {
    err = std::string("seccomp rule for ") + name + ": " + std::strerror(-rc);
    return false;
  }
  return true;
}

}  // namespace

bool install_job_filter(std::string& err, job_filter kind) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) {
    err = "seccomp_init failed";
    return false;
  }
  bool ok = true;
  // 32-bit programs enter through other system-call tables: the rules cover them too.
  for (uint32_t arch : {SCMP_ARCH_X86, SCMP_ARCH_X32}) {
    if (seccomp_arch_native() != SCMP_ARCH_X86_64) break;
    const int rc = seccomp_arch_add(ctx, arch);
    if (rc != 0 && rc != -EEXIST) {
      err = std::string("seccomp arch: ") + std::strerror(-rc);
      ok = false;
    }
  }
  for (const char* name : kDenied) ok = ok && add(ctx, SCMP_ACT_ERRNO(EPERM), name, err);
  for (const char* name : kMissing) ok = ok && add(ctx, SCMP_ACT_ERRNO(ENOSYS), name, err);
  if (kind == job_filter::scoped) ok = ok && add(ctx, SCMP_ACT_ERRNO(EPERM), "capset", err);
  // clone() and unshare() stay usable for threads and processes; only new namespaces
  // are refused (one rule per flag: a masked comparison matches one bit pattern).
  for (unsigned long flag : kNamespaceFlags) {
    ok = ok && add(ctx, SCMP_ACT_ERRNO(EPERM), "clone", err, 1,
                   SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
    ok = ok && add(ctx, SCMP_ACT_ERRNO(EPERM), "unshare", err, 1,
                   SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
  }
  // Typing into a terminal's input queue (the job's own pane included) and the Linux
  // console's ioctls.
  for (unsigned long request : {static_cast<unsigned long>(TIOCSTI),
                                static_cast<unsigned long>(TIOCLINUX)})
    ok = ok && add(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", err, 1,
                   SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, request));
  if (ok) {
    const int rc = seccomp_load(ctx);
    if (rc != 0) {
      err = std::string("seccomp_load: ") + std::strerror(-rc);
      ok = false;
    }
  }
  seccomp_release(ctx);
  return ok;
}

}  // namespace shellctl::io::sandbox
