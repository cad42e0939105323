#pragma once
// The system-call filter every sandboxed job runs under (libseccomp). Everything is allowed
// except what could change the job's world or reach the kernel's privileged corners, in the
// spirit of Docker's default profile: mounts and new namespaces (the sandbox must stay as
// built), kernel keyrings, BPF, perf, module and kexec loading, reboot, clock changes,
// handle-based opens, userfaultfd, io_uring, and terminal input injection (TIOCSTI).
// ptrace stays allowed: the PID namespace and Landlock confine it to the job's own
// processes, and debuggers inside a job keep working.
#include <string>

namespace shellctl::io::sandbox {

// Which jobs the filter is for. A native scope's job
// (docs/native-scopes.md "The scoped job sandbox", S17) also gets EPERM for capset: it holds no
// capability, and none may be asked for.
enum class job_filter { ordinary, scoped };

// Loads the filter into the calling process (needs no_new_privs first). False with `err`.
bool install_job_filter(std::string& err, job_filter kind = job_filter::ordinary);

}  // namespace shellctl::io::sandbox
