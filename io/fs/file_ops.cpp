#include "io/fs/file_ops.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "io/fs/beneath.hpp"
#include "io/fs/files.hpp"

namespace shellctl::io::fs {
namespace {

// Deeper trees than this are refused by a recursive delete (each level holds a descriptor).
constexpr int max_tree_depth = 256;

[[noreturn]] void fail(file_errc c, const std::string& msg) { throw file_failure(c, msg); }

// What a failed lookup beneath a root means for the API.
file_errc lookup_errc(int e) {
  switch (e) {
    case EXDEV:  // RESOLVE_BENEATH: `..` or an absolute symlink would leave the root
    case ELOOP:  // RESOLVE_NO_MAGICLINKS, or a symlink loop
      return file_errc::denied;
    case ENOENT: return file_errc::not_found;
    case ENOTDIR: return file_errc::not_a_directory;
    case EISDIR: return file_errc::is_a_directory;
    case ENAMETOOLONG: return file_errc::invalid_path;
    case EEXIST: return file_errc::exists;
    case ENOTEMPTY: return file_errc::not_empty;
    default: return file_errc::io;
  }
}

[[noreturn]] void fail_errno(int e, const std::string& what, const std::string& path) {
  const file_errc c = lookup_errc(e);
  if (c == file_errc::denied)
    fail(c, path + ": the path leaves its root (through '..' or a symlink)");
  fail(c, what + " " + path + ": " + std::strerror(e));
}

struct unique_fd {
  int fd = -1;
  unique_fd() = default;
  explicit unique_fd(int f) : fd(f) {}
  unique_fd(unique_fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
  ~unique_fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  int release() {
    const int f = fd;
    fd = -1;
    return f;
  }
};

file_roots::location locate_or_fail(const file_roots& roots, std::string_view path) {
  auto at = roots.locate(path);
  if (at.v == file_roots::verdict::invalid_path) fail(file_errc::invalid_path, at.why);
  if (at.v == file_roots::verdict::denied) fail(file_errc::denied, at.absolute + ": " + at.why);
  return at;
}

// rel beneath the root, or -1 with `err`; what lies in the state dir is refused (thrown).
int try_open(const file_roots& roots, const file_roots::location& at, const std::string& rel,
             int flags, int& err, mode_t mode = 0) {
  const int fd = open_beneath(at.root_fd, rel, flags, mode);
  if (fd < 0) {
    err = errno;
    return -1;
  }
  if (roots.in_state_dir(fd)) {
    ::close(fd);
    fail(file_errc::denied, at.absolute + ": the path is in the server's state directory");
  }
  return fd;
}

// Whether a lookup of `rel` that failed went into the state dir: the deepest ancestor that
// opens is looked at. (The confined worker's world shows the state dir as an empty
// read-only mask: a path through it is a refusal, never a missing file.)
bool failed_in_state_dir(const file_roots& roots, const file_roots::location& at, std::string rel) {
  while (!rel.empty()) {
    const auto slash = rel.rfind('/');
    rel = slash == std::string::npos ? std::string() : rel.substr(0, slash);
    const int fd = open_beneath(at.root_fd, rel, O_PATH);
    if (fd < 0) continue;
    const bool in = roots.in_state_dir(fd);
    ::close(fd);
    return in;
  }
  return false;
}

unique_fd open_or_fail(const file_roots& roots, const file_roots::location& at,
                       const std::string& rel, int flags, const char* what) {
  int err = 0;
  const int fd = try_open(roots, at, rel, flags, err);
  if (fd < 0) {
    if (failed_in_state_dir(roots, at, rel))
      fail(file_errc::denied, at.absolute + ": the path is in the server's state directory");
    fail_errno(err, what, at.absolute);
  }
  return unique_fd(fd);
}

// The located path as (its parent relative to the root, its last component).
struct split_path {
  std::string parent;
  std::string name;
};
split_path split(const file_roots::location& at) {
  const auto slash = at.rel.rfind('/');
  split_path s;
  if (slash == std::string::npos) {
    s.name = at.rel;
  } else {
    s.parent = at.rel.substr(0, slash);
    s.name = at.rel.substr(slash + 1);
  }
  if (s.name == "..") fail(file_errc::invalid_path, at.absolute + ": the path must name an entry, not '..'");
  return s;
}

entry_type type_of(mode_t m) {
  if (S_ISREG(m)) return entry_type::file;
  if (S_ISDIR(m)) return entry_type::dir;
  if (S_ISLNK(m)) return entry_type::symlink;
  return entry_type::other;
}

entry_meta meta_of(const struct stat& st, std::string name) {
  entry_meta m;
  m.name = std::move(name);
  m.type = type_of(st.st_mode);
  m.size = static_cast<std::uint64_t>(st.st_size);
  m.mode = static_cast<unsigned>(st.st_mode & 07777);
  m.mtime = static_cast<std::int64_t>(st.st_mtim.tv_sec);
  return m;
}

std::string link_text(int dir_fd, const std::string& name) {
  std::string buf(4096, '\0');
  const ssize_t n = ::readlinkat(dir_fd, name.empty() ? "" : name.c_str(), buf.data(), buf.size());
  if (n < 0) return {};
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

// mkdir of one component with exactly `mode`: created 0700 (nobody else can use it before
// its mode is set), then fchmod, so the umask does not narrow it.
int make_one(int parent, const std::string& name, unsigned mode) {
  if (::mkdirat(parent, name.c_str(), 0700) != 0) return errno;
  const int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno;
  const int rc = ::fchmod(fd, mode) == 0 ? 0 : errno;
  ::close(fd);
  return rc;
}

// mkdir -p of `rel` beneath the root; directories created get `mode` (the last) or 0755.
void make_parents(const file_roots& roots, const file_roots::location& at, const std::string& rel,
                  unsigned mode) {
  std::string prefix;
  unique_fd prev = open_or_fail(roots, at, "", O_PATH | O_DIRECTORY, "open");
  std::size_t i = 0;
  while (i <= rel.size() && !rel.empty()) {
    std::size_t j = rel.find('/', i);
    if (j == std::string::npos) j = rel.size();
    const std::string comp = rel.substr(i, j - i);
    const bool last = j == rel.size();
    prefix = prefix.empty() ? comp : prefix + "/" + comp;
    int err = 0;
    int fd = try_open(roots, at, prefix, O_PATH | O_DIRECTORY, err);
    if (fd < 0 && err == ENOENT && comp != "..") {
      const int rc = make_one(prev.fd, comp, last ? mode : 0755);
      if (rc != 0 && rc != EEXIST) fail_errno(rc, "mkdir", at.absolute);
      fd = try_open(roots, at, prefix, O_PATH | O_DIRECTORY, err);
    }
    if (fd < 0) {
      if (err == ENOTDIR && last) fail(file_errc::exists, at.absolute + ": exists and is not a directory");
      fail_errno(err, "mkdir", at.absolute);
    }
    prev = unique_fd(fd);
    i = j + 1;
  }
}

// Removes the directory `name` in `parent` and everything in it, walking by descriptors:
// each level is opened with O_NOFOLLOW from the one above, so a symlink (even one swapped
// in meanwhile) is removed as a link and never entered.
void remove_tree_at(const file_roots& roots, int parent, const std::string& name, int depth,
                    const std::string& shown) {
  if (depth > max_tree_depth)
    fail(file_errc::io, "delete " + shown + ": the tree is deeper than " + std::to_string(max_tree_depth) + " levels");
  const int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOTDIR || errno == ELOOP) {  // replaced by a file or a link meanwhile
      if (::unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT)
        fail(file_errc::io, "delete " + shown + ": " + std::strerror(errno));
      return;
    }
    if (errno == ENOENT) return;
    fail(file_errc::io, "delete " + shown + ": " + std::strerror(errno));
  }
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    fail(file_errc::io, "delete " + shown + ": " + std::strerror(errno));
  }
  struct closer {
    DIR* d;
    ~closer() { ::closedir(d); }
  } guard{dir};
  struct stat self {};
  if (::fstat(fd, &self) != 0 || roots.is_state_dir(self))
    fail(file_errc::denied, shown + ": the tree holds the server's state directory");
  // Two passes at most: entries a job adds while the first runs are met by the second.
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::pair<std::string, bool>> names;
    ::rewinddir(dir);
    errno = 0;
    while (struct dirent* e = ::readdir(dir)) {
      const std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st {};
        is_dir = ::fstatat(fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
      }
      names.emplace_back(n, is_dir);
    }
    if (names.empty()) break;
    for (const auto& [n, is_dir] : names) {
      if (is_dir) {
        remove_tree_at(roots, fd, n, depth + 1, shown);
      } else if (::unlinkat(fd, n.c_str(), 0) != 0) {
        if (errno == EISDIR || errno == EPERM) {  // became a directory meanwhile
          remove_tree_at(roots, fd, n, depth + 1, shown);
        } else if (errno != ENOENT) {
          fail(file_errc::io, "delete " + shown + ": " + std::strerror(errno));
        }
      }
    }
  }
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    if (errno == ENOTEMPTY || errno == EEXIST)
      fail(file_errc::not_empty, "delete " + shown + ": entries were added while it was deleted");
    fail(file_errc::io, "delete " + shown + ": " + std::strerror(errno));
  }
}

std::string random_suffix() {
  static thread_local std::mt19937_64 gen{std::random_device{}()};
  static const char hex[] = "0123456789abcdef";
  std::string s;
  auto v = gen();
  for (int i = 0; i < 16; ++i, v >>= 4) s += hex[v & 0xF];
  return s;
}

// A copy of `name` in `from` as `to_name` in `to` (which must not exist), never following a
// symlink: what a move across mounts does (the confined worker sees Home and each granted
// tree as mounts of their own, as a job does; rename(2) refuses to cross them). Regular
// files keep their mode (less set-id bits) and mtime, directories are copied whole, symlinks
// as links; FIFOs, sockets and devices are refused. Returns 0 or the errno of the failure.
int copy_entry(int from, const std::string& name, int to, const std::string& to_name, int depth) {
  if (depth > max_tree_depth) return ELOOP;
  struct stat st {};
  if (::fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno;
  const timespec times[2] = {st.st_atim, st.st_mtim};
  if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
    const ssize_t n = ::readlinkat(from, name.c_str(), target.data(), target.size());
    if (n < 0) return errno;
    target.resize(static_cast<std::size_t>(n));
    return ::symlinkat(target.c_str(), to, to_name.c_str()) == 0 ? 0 : errno;
  }
  if (S_ISREG(st.st_mode)) {
    unique_fd in(::openat(from, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (in.fd < 0) return errno;
    struct stat now {};
    if (::fstat(in.fd, &now) != 0) return errno;
    if (!S_ISREG(now.st_mode)) return EINVAL;
    unique_fd out(::openat(to, to_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (out.fd < 0) return errno;
    for (;;) {
      const ssize_t n = ::copy_file_range(in.fd, nullptr, out.fd, nullptr, 1u << 30, 0);
      if (n == 0) break;
      if (n > 0) continue;
      if (errno == EINTR) continue;
      if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return errno;
      char buf[1 << 16];  // no kernel copy between these file systems: by hand
      for (;;) {
        const ssize_t r = ::read(in.fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return errno;
        if (r == 0) break;
        if (!write_all(out.fd, buf, static_cast<std::size_t>(r))) return errno;
      }
      break;
    }
    if (::fchmod(out.fd, now.st_mode & 01777) != 0) return errno;
    ::futimens(out.fd, times);
    return 0;
  }
  if (!S_ISDIR(st.st_mode)) return EINVAL;  // a FIFO, socket or device does not move by copy
  if (::mkdirat(to, to_name.c_str(), 0700) != 0) return errno;
  unique_fd src(::openat(from, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  unique_fd dst(::openat(to, to_name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (src.fd < 0 || dst.fd < 0) return errno;
  DIR* dir = ::fdopendir(::fcntl(src.fd, F_DUPFD_CLOEXEC, 0));
  if (dir == nullptr) return errno;
  struct closer {
    DIR* d;
    ~closer() { ::closedir(d); }
  } guard{dir};
  errno = 0;
  while (struct dirent* e = ::readdir(dir)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (const int rc = copy_entry(src.fd, n, dst.fd, n, depth + 1); rc != 0) return rc;
    errno = 0;
  }
  if (errno != 0) return errno;
  if (::fchmod(dst.fd, st.st_mode & 01777) != 0) return errno;
  ::futimens(dst.fd, times);
  return 0;
}

}  // namespace

const char* type_name(entry_type t) {
  switch (t) {
    case entry_type::file: return "file";
    case entry_type::dir: return "dir";
    case entry_type::symlink: return "symlink";
    case entry_type::other: break;
  }
  return "other";
}

stat_result stat_path(const file_roots& roots, std::string_view path) {
  auto at = locate_or_fail(roots, path);
  stat_result r;
  r.path = at.absolute;
  struct stat st {};
  if (at.rel.empty()) {
    auto fd = open_or_fail(roots, at, "", O_PATH | O_DIRECTORY, "stat");
    if (::fstat(fd.fd, &st) != 0) fail_errno(errno, "stat", at.absolute);
    r.meta = meta_of(st, "");
    return r;
  }
  const auto sp = split(at);
  auto parent = open_or_fail(roots, at, sp.parent, O_PATH | O_DIRECTORY, "stat");
  if (::fstatat(parent.fd, sp.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    fail_errno(errno, "stat", at.absolute);
  if (roots.is_state_dir(st)) fail(file_errc::denied, at.absolute + ": the path is the server's state directory");
  if (roots.is_state_file(st)) fail(file_errc::denied, at.absolute + ": the path is a file of the server's state directory");
  r.meta = meta_of(st, sp.name);
  if (S_ISLNK(st.st_mode)) r.meta.target = link_text(parent.fd, sp.name);
  return r;
}

listing list_dir(const file_roots& roots, std::string_view path, std::size_t limit) {
  auto at = locate_or_fail(roots, path);
  auto fd = open_or_fail(roots, at, at.rel, O_RDONLY | O_DIRECTORY, "list");
  DIR* dir = ::fdopendir(fd.fd);
  if (dir == nullptr) fail_errno(errno, "list", at.absolute);
  const int dfd = fd.release();
  struct closer {
    DIR* d;
    ~closer() { ::closedir(d); }
  } guard{dir};
  // The `limit` smallest names, kept bounded however large the directory is: whenever twice
  // the limit is held, the larger half is dropped.
  std::vector<std::string> names;
  std::size_t total = 0;
  const std::size_t keep = std::max<std::size_t>(limit, 1);
  errno = 0;
  while (struct dirent* e = ::readdir(dir)) {
    const std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    ++total;
    names.emplace_back(n);
    if (names.size() >= 2 * keep) {
      std::nth_element(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(keep), names.end());
      names.resize(keep);
    }
  }
  if (errno != 0) fail_errno(errno, "list", at.absolute);
  std::sort(names.begin(), names.end());
  if (names.size() > limit) names.resize(limit);
  listing out;
  out.path = at.absolute;
  out.truncated = total > limit;
  out.entries.reserve(names.size());
  for (auto& n : names) {
    struct stat st {};
    if (::fstatat(dfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    out.entries.push_back(meta_of(st, std::move(n)));
  }
  return out;
}

std::string make_directory(const file_roots& roots, std::string_view path, bool parents, unsigned mode) {
  auto at = locate_or_fail(roots, path);
  if (at.rel.empty()) {
    if (parents) return at.absolute;
    fail(file_errc::exists, at.absolute + ": the directory exists");
  }
  if (parents) {
    make_parents(roots, at, at.rel, mode);
    return at.absolute;
  }
  const auto sp = split(at);
  auto parent = open_or_fail(roots, at, sp.parent, O_PATH | O_DIRECTORY, "mkdir");
  const int rc = make_one(parent.fd, sp.name, mode);
  if (rc != 0) fail_errno(rc, "mkdir", at.absolute);
  return at.absolute;
}

std::string remove_path(const file_roots& roots, std::string_view path, bool recursive) {
  auto at = locate_or_fail(roots, path);
  if (at.rel.empty()) fail(file_errc::denied, at.absolute + ": an allowed root cannot be deleted");
  const auto sp = split(at);
  auto parent = open_or_fail(roots, at, sp.parent, O_PATH | O_DIRECTORY, "delete");
  struct stat st {};
  if (::fstatat(parent.fd, sp.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    fail_errno(errno, "delete", at.absolute);
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(parent.fd, sp.name.c_str(), 0) != 0) fail_errno(errno, "delete", at.absolute);
    return at.absolute;
  }
  {
    const int fd = ::openat(parent.fd, sp.name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) fail_errno(errno, "delete", at.absolute);
    const bool holds = roots.holds_state_dir(fd);
    ::close(fd);
    if (holds) fail(file_errc::denied, at.absolute + ": the tree holds the server's state directory");
  }
  if (!recursive) {
    if (::unlinkat(parent.fd, sp.name.c_str(), AT_REMOVEDIR) != 0) {
      if (errno == ENOTEMPTY || errno == EEXIST)
        fail(file_errc::not_empty, at.absolute + ": the directory is not empty (recursive=true deletes it all)");
      fail_errno(errno, "delete", at.absolute);
    }
    return at.absolute;
  }
  remove_tree_at(roots, parent.fd, sp.name, 0, at.absolute);
  return at.absolute;
}

std::string move_path(const file_roots& roots, std::string_view from, std::string_view to, bool overwrite) {
  auto a = locate_or_fail(roots, from);
  auto b = locate_or_fail(roots, to);
  if (a.rel.empty() || b.rel.empty()) fail(file_errc::denied, "an allowed root cannot be moved or replaced");
  const auto sa = split(a);
  const auto sb = split(b);
  auto pa = open_or_fail(roots, a, sa.parent, O_PATH | O_DIRECTORY, "move");
  auto pb = open_or_fail(roots, b, sb.parent, O_PATH | O_DIRECTORY, "move");
  struct stat st {};
  if (::fstatat(pa.fd, sa.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) fail_errno(errno, "move", a.absolute);
  if (S_ISDIR(st.st_mode)) {
    const int fd = ::openat(pa.fd, sa.name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const bool holds = fd < 0 || roots.holds_state_dir(fd);
    if (fd >= 0) ::close(fd);
    if (holds) fail(file_errc::denied, a.absolute + ": the tree holds the server's state directory");
  }
  struct stat dst {};
  if (::fstatat(pb.fd, sb.name.c_str(), &dst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(dst.st_mode) &&
      roots.is_state_dir(dst))
    fail(file_errc::denied, b.absolute + ": the path is the server's state directory");
  const unsigned flags = overwrite ? 0 : RENAME_NOREPLACE;
  auto refuse = [&](int e) {
    if (e == EEXIST) fail(file_errc::exists, b.absolute + ": exists (overwrite=true replaces it)");
    if (e == EINVAL) fail(file_errc::io, "move " + a.absolute + " to " + b.absolute + ": " + std::strerror(e) +
                                            " (a directory cannot move into itself)");
    fail_errno(e, "move", a.absolute);
  };
  if (::renameat2(pa.fd, sa.name.c_str(), pb.fd, sb.name.c_str(), flags) == 0) return b.absolute;
  if (errno != EXDEV) refuse(errno);
  // Across mounts (Home and a granted tree, or two file systems): a copy beside the target,
  // renamed over it with rename's own rules (so NOREPLACE and directory-over-directory
  // behave alike), then the source removed, as mv(1) does.
  const std::string temp = ".shellctl-move-" + random_suffix();
  if (const int rc = copy_entry(pa.fd, sa.name, pb.fd, temp, 0); rc != 0) {
    remove_tree_at(roots, pb.fd, temp, 0, b.absolute);
    ::unlinkat(pb.fd, temp.c_str(), 0);
    fail(file_errc::io, "move " + a.absolute + " to " + b.absolute + " (by copying across mounts): " +
                            std::strerror(rc));
  }
  if (::renameat2(pb.fd, temp.c_str(), pb.fd, sb.name.c_str(), flags) != 0) {
    const int e = errno;
    remove_tree_at(roots, pb.fd, temp, 0, b.absolute);
    ::unlinkat(pb.fd, temp.c_str(), 0);
    refuse(e);
  }
  if (S_ISDIR(st.st_mode)) remove_tree_at(roots, pa.fd, sa.name, 0, a.absolute);
  else if (::unlinkat(pa.fd, sa.name.c_str(), 0) != 0 && errno != ENOENT)
    fail(file_errc::io, "move " + a.absolute + ": copied to " + b.absolute + ", but the source stays: " +
                            std::strerror(errno));
  return b.absolute;
}

// ---------------------------------------------------------------- file_reader

file_reader::file_reader(const file_roots& roots, std::string_view path) {
  auto at = locate_or_fail(roots, path);
  path_ = at.absolute;
  // Looked at before it is opened for reading: opening a FIFO would block, and a device
  // may act on open. The second open is checked to be the same file; an upload renamed
  // over it in between (the old file or the new one, each whole, is what a reader may get)
  // makes it look again, at the new file. Only a path that keeps changing is refused.
  constexpr int attempts = 16;
  for (int attempt = 1;; ++attempt) {
    struct stat st {};
    {
      auto probe = open_or_fail(roots, at, at.rel, O_PATH, "open");
      if (::fstat(probe.fd, &st) != 0) fail_errno(errno, "open", path_);
    }
    if (S_ISDIR(st.st_mode)) fail(file_errc::is_a_directory, path_ + ": is a directory");
    if (!S_ISREG(st.st_mode)) fail(file_errc::denied, path_ + ": not a regular file (only regular files are read)");
    auto fd = open_or_fail(roots, at, at.rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, "open");
    struct stat again {};
    if (::fstat(fd.fd, &again) != 0) fail_errno(errno, "open", path_);
    if (again.st_dev == st.st_dev && again.st_ino == st.st_ino && S_ISREG(again.st_mode)) {
      const auto slash = path_.rfind('/');
      meta_ = meta_of(again, path_.substr(slash + 1));
      fd_ = fd.release();
      return;
    }
    if (attempt == attempts)
      fail(file_errc::io, path_ + ": the file was replaced while it was opened, again and again; try again");
  }
}

file_reader::~file_reader() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t file_reader::read_at(std::uint64_t offset, char* buf, std::size_t cap) {
  for (;;) {
    const ssize_t n = ::pread(fd_, buf, cap, static_cast<off_t>(offset));
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    fail(file_errc::io, "read " + path_ + ": " + std::strerror(errno));
  }
}

// ---------------------------------------------------------------- file_upload

file_upload::file_upload(const file_roots& roots, std::string_view path, std::optional<unsigned> mode,
                         bool parents) {
  auto at = locate_or_fail(roots, path);
  path_ = at.absolute;
  if (at.rel.empty()) fail(file_errc::is_a_directory, path_ + ": is a directory");
  const auto sp = split(at);
  name_ = sp.name;
  if (parents && !sp.parent.empty()) make_parents(roots, at, sp.parent, 0755);
  {
    int err = 0;
    const int fd = try_open(roots, at, sp.parent, O_RDONLY | O_DIRECTORY, err);
    if (fd < 0) {
      if (failed_in_state_dir(roots, at, sp.parent + "/x"))
        fail(file_errc::denied, path_ + ": the path is in the server's state directory");
      if (err == ENOENT) fail(file_errc::not_found, path_ + ": the parent directory does not exist (parents=true creates it)");
      fail_errno(err, "upload", path_);
    }
    dir_fd_ = fd;
  }
  struct stat st {};
  if (::fstatat(dir_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) fail(file_errc::is_a_directory, path_ + ": is a directory");
    // A replaced file keeps its mode, but never a set-id bit: the bytes are the caller's.
    if (S_ISREG(st.st_mode)) mode_ = st.st_mode & 01777;
  }
  if (mode) mode_ = *mode & 01777;
  // Unnamed first: nothing of it is visible, nor left by a crash, until it is complete.
  fd_ = ::openat(dir_fd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    for (int tries = 0; tries < 16 && fd_ < 0; ++tries) {
      temp_name_ = ".shellctl-upload-" + random_suffix();
      fd_ = ::openat(dir_fd_, temp_name_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd_ < 0 && errno != EEXIST) break;
    }
    if (fd_ < 0) {
      temp_name_.clear();
      fail(file_errc::io, "upload " + path_ + ": " + std::strerror(errno));
    }
  }
}

file_upload::~file_upload() { discard(); }

void file_upload::discard() {
  if (!done_ && dir_fd_ >= 0 && !temp_name_.empty()) ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
  temp_name_.clear();
  if (fd_ >= 0) ::close(fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
  fd_ = dir_fd_ = -1;
}

void file_upload::write(std::string_view data) {
  if (!write_all(fd_, data.data(), data.size()))
    fail(file_errc::io, "upload " + path_ + ": " + std::strerror(errno));
}

std::uint64_t file_upload::commit() {
  auto io_fail = [&](const char* step) {
    const int e = errno;
    fail(file_errc::io, std::string(step) + " " + path_ + ": " + std::strerror(e));
  };
  if (::fchmod(fd_, mode_) != 0) io_fail("chmod");
  if (::fsync(fd_) != 0) io_fail("fsync");
  struct stat st {};
  if (::fstat(fd_, &st) != 0) io_fail("stat");
  if (temp_name_.empty()) {
    // The unnamed file gets a temporary name, then the rename makes it the target.
    const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
    for (int tries = 0; tries < 16; ++tries) {
      const std::string name = ".shellctl-upload-" + random_suffix();
      if (::linkat(fd_, "", dir_fd_, name.c_str(), AT_EMPTY_PATH) == 0 ||
          ::linkat(AT_FDCWD, proc.c_str(), dir_fd_, name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
        temp_name_ = name;
        break;
      }
      if (errno != EEXIST) io_fail("link");
    }
    if (temp_name_.empty()) io_fail("link");
  }
  if (::renameat(dir_fd_, temp_name_.c_str(), dir_fd_, name_.c_str()) != 0) {
    const int e = errno;
    if (e == EISDIR) fail(file_errc::is_a_directory, path_ + ": is a directory");
    fail(file_errc::io, "rename " + path_ + ": " + std::strerror(e));
  }
  done_ = true;
  // The rename itself is durable once the directory is.
  ::fsync(dir_fd_);
  temp_name_.clear();
  discard();
  return static_cast<std::uint64_t>(st.st_size);
}

}  // namespace shellctl::io::fs
