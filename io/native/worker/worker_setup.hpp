#pragma once
// What a scope's worker is told when it starts (docs/native-scopes.md "The scope worker"): one
// message on the setup socket (a SOCK_SEQPACKET socketpair, fd 3 in the worker), never argv or
// env: JSON parameters with the control token, and the descriptors it needs (SCM_RIGHTS) — the
// base snapshot's directory, the scope's host directory (control socket, 0700) and each input
// file, all opened by the supervisor beneath its roots. The worker answers on the same socket
// once it serves ({"ok":true}) or why it cannot ({"ok":false,"error":...}).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/native/net/proxy_request.hpp"

namespace shellctl::io::native {

struct worker_limits {
  std::uint64_t input_bytes = 0, output_bytes = 0, max_jobs = 0, disk_bytes = 0;
  std::uint64_t open_files = 0, file_bytes = 0;
  // A job's wall deadline: min(job_wall_seconds, the scope's deadline), 0 = none.
  std::uint64_t job_wall_seconds = 0;
  std::uint64_t deadline_epoch = 0;  // the scope's deadline, seconds since the epoch
};

struct worker_setup {
  std::string scope_id;
  std::uint64_t generation = 0;
  std::string created_at;
  std::string control_token;
  std::string cgroup;      // the scope's cgroup: jobs in <cgroup>/job-<id>; "" = none
  std::string image_root = "/";
  worker_limits limits;
  std::vector<std::string> input_refs;  // in the order of their descriptors
  // The network targets, by index: the worker's proxy serves them when there are any,
  // dialling through broker.sock in the host directory.
  std::vector<proxy_target> targets;
  // The paths the host directory and the inputs were opened at. A descriptor's mount
  // belongs to the supervisor's mount namespace, which the kernel does not let the worker
  // bind from: the worker opens these paths in its own copy of that namespace and binds
  // them only if they are the very files the descriptors name (device and inode).
  std::string host_dir;
  std::vector<std::string> input_paths;
  // Descriptors (received: the worker's own; sent: the supervisor's, not closed by send).
  int base_fd = -1;
  int host_dir_fd = -1;
  std::vector<int> input_fds;
};

// The supervisor's side. False with `err`.
bool send_setup(int sock, const worker_setup& s, std::string& err);
// The worker's side: one message, its JSON checked (every field present and of its type,
// as many input descriptors as refs). nullopt with `err`.
std::optional<worker_setup> receive_setup(int sock, std::string& err);

// The answer: "" = ready, else why not.
bool send_answer(int sock, const std::string& error);
// The supervisor waits for it (a closed socket: the worker died). nullopt = ready.
std::optional<std::string> receive_answer(int sock);

}  // namespace shellctl::io::native
