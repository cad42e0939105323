#include "io/home/state_identity.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace shellctl::io::home {
namespace {

constexpr int max_depth = 64;

void walk(int dir_fd, dev_t dev, int depth, std::vector<std::pair<std::uint64_t, std::uint64_t>>& out) {
  DIR* d = ::fdopendir(dir_fd);
  if (d == nullptr) {
    ::close(dir_fd);
    return;
  }
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev != dev || depth >= max_depth) continue;
      const int sub = ::openat(::dirfd(d), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) walk(sub, dev, depth + 1, out);
      continue;
    }
    if (st.st_nlink > 1) out.emplace_back(static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino));
  }
  ::closedir(d);
}

}  // namespace

std::vector<std::pair<std::uint64_t, std::uint64_t>> linked_state_files(const std::string& state_dir) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  const int fd = ::open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return out;
  }
  walk(fd, st.st_dev, 0, out);
  return out;
}

}  // namespace shellctl::io::home
