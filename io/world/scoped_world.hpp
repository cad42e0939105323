#pragma once
// The file-system view of a native scope's job (docs/native-scopes.md "The scoped job sandbox";
// S12–S14), built by the job's PID-1 init inside its own mount namespace, in the worker's.
// Unlike an ordinary job's world (job_world.hpp), nothing of the host is granted by path: the
// root is a small private tmpfs holding exactly
//   /usr /bin /sbin /lib /lib64 /etc   read-only binds of the image root (symlinks stay
//                                      symlinks), nosuid, nodev;
//   /home/dify /workspace /tmp         the scope's payload (Home is the worker's overlay of
//                                      the base snapshot), read-write;
//   /inputs                            the scope's input files, read-only;
//   /run/job                           a tmpfs of at most script_bytes holding the script,
//                                      then remounted read-only;
//   /proc                              a procfs of the job's own PID namespace (hardened);
//   /dev                               null zero random urandom tty, the fd links and a
//                                      private devpts.
// The spool (the runner's job dir, the worker's database, tmux's socket), the worker's
// host directory (control and broker sockets) and the supervisor's state are not in it.
#include <cstdint>
#include <string>

namespace shellctl::io::world {

// Where things are inside the job's root.
inline constexpr const char* kScopedHome = "/home/dify";
inline constexpr const char* kScopedWorkspace = "/workspace";
inline constexpr const char* kScopedTmp = "/tmp";
inline constexpr const char* kScopedInputs = "/inputs";
inline constexpr const char* kScopedScriptDir = "/run/job";
inline constexpr const char* kScopedScript = "/run/job/script";
// The image trees bound read-only (those the image root has).
inline constexpr const char* kScopedImageTrees[] = {"usr", "bin", "sbin", "lib", "lib64", "etc"};
// The device files of /dev.
inline constexpr const char* kScopedDevices[] = {"null", "zero", "random", "urandom", "tty"};

struct scoped_world_spec {
  std::string image_root = "/";  // absolute
  std::string payload;           // holds home/, workspace/, tmp/ (created when missing)
  std::string inputs;            // a directory whose entries appear at /inputs; "" = none
  std::string script;            // the job's script (in the spool), copied to /run/job/script
  std::uint64_t script_bytes = 0;  // the size of /run/job (input_bytes + 4 KiB)
  std::string mount_point;       // an existing directory the new root is mounted on
};

// Builds the view and makes it the root (pivot_root; the old root is detached), then
// changes to "/". The caller must be PID 1 of the job's new PID namespace, in a new mount
// namespace. False with `err`: the job then does not run (125).
bool build_scoped_world(const scoped_world_spec& w, std::string& err);

}  // namespace shellctl::io::world
