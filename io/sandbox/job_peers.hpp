#pragma once
// Whether a TCP connection to the API comes from a job (no job may call the control API):
// the cgroup of its peer socket (io/sandbox/sock_diag.hpp) lies in the job root's subtree
// (docs/jobs.md "Containment": every job's processes, and every cgroup a job made, are there).
//
// A cgroup id is classified once and remembered (ids are never reused while the machine
// runs): as root, the id is opened by handle (open_by_handle_at on the cgroup file system)
// and its ancestors compared with the job root; without CAP_DAC_READ_SEARCH, the job root's
// subtree is walked for the id (bounded). Used on the HTTP front's loop thread: a lookup is
// one netlink round trip, and at most one handle open or one walk for an id not seen before.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>

namespace shellctl::io::sandbox {

class job_peers {
 public:
  explicit job_peers(std::string job_root);
  ~job_peers();
  job_peers(const job_peers&) = delete;
  job_peers& operator=(const job_peers&) = delete;

  enum class verdict {
    job,      // the peer socket was made by a process of a job
    other,    // another process of this host, or another host
    unknown,  // the kernel cannot tell (no sock_diag cgroup ids): `why()` says so
  };
  verdict of_connection(int fd);
  // Whether the cgroup with this id is the job root or lies below it.
  bool in_job_root(std::uint64_t cgroup_id);
  const std::string& why() const { return why_; }

 private:
  bool walk_for(std::uint64_t id);
  std::string root_;
  int root_fd_ = -1;
  dev_t root_dev_ = 0;
  ino_t root_ino_ = 0;
  bool by_handle_ = true;  // until the kernel says we may not
  std::unordered_map<std::uint64_t, bool> known_;
  std::string why_;
};

}  // namespace shellctl::io::sandbox
