#include "io/fs/file_roots.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "io/fs/beneath.hpp"
#include "io/fs/files.hpp"
#include "io/text/utf8_unit.hpp"

namespace shellctl::io::fs {
namespace {

constexpr std::size_t max_path = 4096;

// True when the directory `start` (a descriptor this call takes and closes), or one of its
// ancestors, is the directory (dev, ino). Each step up is one ".." of the kernel, never a
// name; the walk ends at "/" (its own parent) or after a generous depth.
bool ancestor_is(int start, dev_t dev, ino_t ino) {
  int cur = start;
  bool found = false;
  for (int depth = 0; cur >= 0 && depth < 4096; ++depth) {
    struct stat st {};
    if (::fstat(cur, &st) != 0) break;
    if (st.st_dev == dev && st.st_ino == ino) {
      found = true;
      break;
    }
    const int up = ::openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat ust {};
    if (up < 0 || ::fstat(up, &ust) != 0 || (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino)) {
      if (up >= 0) ::close(up);
      break;  // the root of the file system
    }
    ::close(cur);
    cur = up;
  }
  if (cur >= 0) ::close(cur);
  return found;
}

bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto u = text::utf8::classify(p + i, s.size() - i);
    if (!u.valid) return false;
    i += static_cast<std::size_t>(u.len);
  }
  return true;
}

// The components of an absolute path, "." and empty ones dropped; ".." kept (the kernel
// refuses it where it would leave a root).
std::vector<std::string_view> components(std::string_view abs) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < abs.size()) {
    std::size_t j = abs.find('/', i);
    if (j == std::string_view::npos) j = abs.size();
    const auto c = abs.substr(i, j - i);
    if (!c.empty() && c != ".") out.push_back(c);
    i = j + 1;
  }
  return out;
}

std::string join(const std::vector<std::string_view>& parts, std::size_t from) {
  std::string out;
  for (std::size_t i = from; i < parts.size(); ++i) {
    if (!out.empty()) out += '/';
    out += parts[i];
  }
  return out;
}

bool has_prefix(const std::vector<std::string_view>& path, const std::vector<std::string_view>& prefix) {
  if (prefix.size() > path.size()) return false;
  return std::equal(prefix.begin(), prefix.end(), path.begin());
}

}  // namespace

file_roots::file_roots(const std::string& home, const std::vector<std::string>& rw_paths,
                       const std::string& state_dir,
                       std::set<std::pair<std::uint64_t, std::uint64_t>> state_files)
    : home_(absolute_clean(home)), state_path_(absolute_clean(state_dir)),
      state_files_(std::move(state_files)) {
  std::vector<std::string> wanted{home_};
  for (const auto& p : rw_paths)
    if (!p.empty() && p[0] == '/') wanted.push_back(absolute_clean(p));
  for (const auto& p : wanted) {
    if (std::any_of(roots_.begin(), roots_.end(), [&](const root& r) { return r.path == p; })) continue;
    const int fd = ::open(p.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) roots_.push_back({p, fd});
  }
  struct stat st {};
  if (!state_path_.empty() && ::stat(state_path_.c_str(), &st) == 0) {
    have_state_ = true;
    state_dev_ = st.st_dev;
    state_ino_ = st.st_ino;
    state_real_ = canonical_or(state_path_);
  }
}

file_roots::~file_roots() {
  for (auto& r : roots_) ::close(r.fd);
}

file_roots::location file_roots::locate(std::string_view path) const {
  location at;
  if (path.empty()) {
    at.v = verdict::invalid_path;
    at.why = "the path is empty";
    return at;
  }
  if (path.size() > max_path) {
    at.v = verdict::invalid_path;
    at.why = "the path is longer than 4096 bytes";
    return at;
  }
  if (path.find('\0') != std::string_view::npos) {
    at.v = verdict::invalid_path;
    at.why = "the path holds a NUL byte";
    return at;
  }
  if (!valid_utf8(path)) {
    at.v = verdict::invalid_path;
    at.why = "the path is not UTF-8";
    return at;
  }
  const std::string abs = path[0] == '/' ? std::string(path) : home_ + "/" + std::string(path);
  const auto parts = components(abs);
  at.absolute = "/" + join(parts, 0);
  // The state dir, by name (its identity is checked again on whatever is opened).
  if (!state_path_.empty() && has_prefix(parts, components(state_path_))) {
    at.why = "the path is in the server's state directory";
    return at;
  }
  // The deepest root that holds the path by name; what lies below it the kernel resolves.
  const root* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& r : roots_) {
    const auto rp = components(r.path);
    if (has_prefix(parts, rp) && (best == nullptr || rp.size() >= best_len)) {
      best = &r;
      best_len = rp.size();
    }
  }
  if (best == nullptr) {
    at.why = "the path is outside every allowed root";
    return at;
  }
  at.v = verdict::ok;
  at.root_fd = best->fd;
  at.rel = join(parts, best_len);
  return at;
}

bool file_roots::in_state_dir(int fd) const {
  if (!have_state_) return false;
  struct stat self {};
  if (::fstat(fd, &self) != 0) return true;  // cannot tell: refuse
  if (!S_ISDIR(self.st_mode)) {
    if (is_state_file(self)) return true;
    // A file has no ".." to walk: its path as the kernel knows it (the object opened, not
    // the name asked for) must not lie under the state dir's real path.
    char buf[4096 + 64];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
    if (n <= 0) return true;
    const std::string real(buf, static_cast<std::size_t>(n));
    return real == state_real_ || real.rfind(state_real_ + "/", 0) == 0;
  }
  // Up through its parents: is one of them the state dir?
  return ancestor_is(::fcntl(fd, F_DUPFD_CLOEXEC, 0), state_dev_, state_ino_);
}

bool file_roots::is_state_dir(const struct stat& st) const {
  return have_state_ && S_ISDIR(st.st_mode) && st.st_dev == state_dev_ && st.st_ino == state_ino_;
}

bool file_roots::is_state_file(const struct stat& st) const {
  return !S_ISDIR(st.st_mode) &&
         state_files_.count({static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}) > 0;
}

bool file_roots::holds_state_dir(int dir_fd) const {
  if (!have_state_) return false;
  struct stat dir {};
  if (::fstat(dir_fd, &dir) != 0) return true;  // cannot tell: refuse
  if (!S_ISDIR(dir.st_mode)) return false;
  // Up from the state dir through its parents: is one of them this directory?
  const int state = ::open(state_real_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (state < 0) return false;  // the state dir is gone: nothing to protect
  return ancestor_is(state, dir.st_dev, dir.st_ino);
}

int file_roots::open(const location& at, int flags, mode_t mode) const {
  if (at.v != verdict::ok) {
    errno = EACCES;
    return -1;
  }
  const int fd = open_beneath(at.root_fd, at.rel, flags, mode);
  if (fd < 0) return -1;
  if (in_state_dir(fd)) {
    ::close(fd);
    errno = EACCES;
    return -1;
  }
  return fd;
}

}  // namespace shellctl::io::fs
