#include "io/sandbox/job_peers.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "io/sandbox/sock_diag.hpp"

namespace shellctl::io::sandbox {
namespace {

// A cgroup file system's handle for a cgroup: its 64-bit id (kernfs's FILEID_KERNFS).
constexpr int kernfs_handle_type = 0xfe;
constexpr std::size_t max_known = 1u << 16;
constexpr std::size_t max_walk = 100000;

}  // namespace

job_peers::job_peers(std::string job_root) : root_(std::move(job_root)) {
  root_fd_ = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st {};
  if (root_fd_ >= 0 && ::fstat(root_fd_, &st) == 0) {
    root_dev_ = st.st_dev;
    root_ino_ = st.st_ino;
  }
}

job_peers::~job_peers() {
  if (root_fd_ >= 0) ::close(root_fd_);
}

job_peers::verdict job_peers::of_connection(int fd) {
  const auto a = tcp_peer_cgroup(fd);
  switch (a.result) {
    case peer_lookup::found:
      return in_job_root(a.cgroup_id) ? verdict::job : verdict::other;
    case peer_lookup::not_local:
      return verdict::other;
    case peer_lookup::unsupported:
    case peer_lookup::failed:
      break;
  }
  why_ = a.err;
  return verdict::unknown;
}

bool job_peers::in_job_root(std::uint64_t id) {
  if (root_fd_ < 0) return false;
  if (auto it = known_.find(id); it != known_.end()) return it->second;
  if (known_.size() >= max_known) known_.clear();
  bool inside = false;
  bool decided = false;
  if (by_handle_) {
    struct {
      file_handle h;
      unsigned char id[8];
    } handle{};
    handle.h.handle_bytes = 8;
    handle.h.handle_type = kernfs_handle_type;
    std::memcpy(handle.h.f_handle, &id, 8);
    int cur = ::open_by_handle_at(root_fd_, &handle.h, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0 && (errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS)) {
      by_handle_ = false;  // not root: walk instead, from now on
    } else {
      decided = true;
      // Up through its ancestors: is one of them the job root?
      for (int depth = 0; cur >= 0 && depth < 256 && !inside; ++depth) {
        struct stat st {};
        if (::fstat(cur, &st) != 0 || st.st_dev != root_dev_) break;
        if (st.st_ino == root_ino_) {
          inside = true;
          break;
        }
        const int up = ::openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ::close(cur);
        cur = up;
        struct stat ust {};
        if (cur >= 0 && ::fstat(cur, &ust) == 0 && ust.st_ino == st.st_ino) break;  // the top
      }
      if (cur >= 0) ::close(cur);
    }
  }
  if (!decided) inside = walk_for(id);
  known_[id] = inside;
  return inside;
}

// The job root's subtree, looked through for a cgroup of this id (its directory's inode).
bool job_peers::walk_for(std::uint64_t id) {
  if (id == static_cast<std::uint64_t>(root_ino_)) return true;
  std::vector<int> todo{::fcntl(root_fd_, F_DUPFD_CLOEXEC, 0)};
  std::size_t seen = 0;
  bool found = false;
  while (!todo.empty() && !found) {
    const int fd = todo.back();
    todo.pop_back();
    DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
    if (d == nullptr) {
      if (fd >= 0) ::close(fd);
      continue;
    }
    while (dirent* e = ::readdir(d)) {
      if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
      if (++seen > max_walk) break;
      struct stat st {};
      if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (static_cast<std::uint64_t>(st.st_ino) == id) {
        found = true;
        break;
      }
      todo.push_back(::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    }
    ::closedir(d);
  }
  for (int fd : todo)
    if (fd >= 0) ::close(fd);
  return found;
}

}  // namespace shellctl::io::sandbox
