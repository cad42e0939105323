#include "io/fs/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace shellctl::io::fs {
namespace {
[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}
}  // namespace

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

void write_file(const std::string& path, std::string_view data, unsigned mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) fail("open " + path);
  // open() applies the umask; the layout's modes are exact.
  if (::fchmod(fd, mode) < 0) {
    int e = errno;
    ::close(fd);
    errno = e;
    fail("chmod " + path);
  }
  if (!write_all(fd, data.data(), data.size())) {
    int e = errno;
    ::close(fd);
    errno = e;
    fail("write " + path);
  }
  if (::close(fd) < 0) fail("close " + path);
}

bool write_file_atomic(const std::string& path, std::string_view data, unsigned mode,
                       std::string& err) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  auto failed = [&](const char* op) {
    err = std::string(op) + " " + tmp + ": " + std::strerror(errno);
    return false;
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return failed("open");
  bool ok = ::fchmod(fd, mode) == 0 || failed("chmod");
  ok = ok && (write_all(fd, data.data(), data.size()) || failed("write"));
  if (::close(fd) != 0 && ok) ok = failed("close");
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) ok = failed("rename");
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

bool make_dir(const std::string& path, unsigned mode) {
  if (::mkdir(path.c_str(), mode) == 0) {
    ::chmod(path.c_str(), mode);
    return true;
  }
  if (errno == EEXIST) return false;
  fail("mkdir " + path);
}

bool make_dirs(const std::string& path, unsigned mode, std::string& err) {
  if (is_dir(path)) return true;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      err = "mkdir " + prefix + ": " + std::strerror(errno);
      return false;
    }
  }
  if (!is_dir(path)) {
    err = "mkdir " + path + ": " + std::strerror(ENOTDIR);
    errno = ENOTDIR;
    return false;
  }
  return true;
}

void make_dirs(const std::string& path, unsigned mode) {
  std::string err;
  // err already names the error: a system_error would append it a second time.
  if (!make_dirs(path, mode, err)) throw std::runtime_error(err);
}

bool sorted_entry_names(const std::string& dir, std::vector<std::string>& names) {
  names.clear();
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
    errno = 0;
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) {
    errno = err;
    return false;
  }
  std::sort(names.begin(), names.end());
  return true;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

read_result read_small_file_checked(const std::string& path, std::string& out,
                                    std::size_t limit) {
  out.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ENOTDIR ? read_result::missing : read_result::error;
  char buf[65536];
  read_result result = read_result::ok;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) result = read_result::error;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > limit) break;
  }
  ::close(fd);
  return result;
}

std::string read_small_file(const std::string& path) {
  std::string out;
  read_small_file_checked(path, out);
  return out;
}

bool non_empty_file(const std::string& path) {
  for (char c : read_small_file(path))
    if (c != ' ' && c != '\n' && c != '\t' && c != '\r') return true;
  return false;
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string move_aside(const std::string& path, const std::string& trash_dir) {
  static std::atomic<unsigned> counter{0};
  const auto slash = path.rfind('/');
  const std::string tomb = trash_dir + "/" + path.substr(slash + 1) + "-" +
                           std::to_string(::getpid()) + "-" + std::to_string(++counter);
  ::mkdir(trash_dir.c_str(), 0700);  // EEXIST is the usual case
  if (::rename(path.c_str(), tomb.c_str()) == 0) return tomb;
  // ENOENT is either side: the directory is gone already, or the trash is (being removed).
  struct stat st;
  return ::lstat(path.c_str(), &st) != 0 && errno == ENOENT ? std::string() : path;
}

std::string absolute_clean(const std::string& path) {
  std::string p = path;
  if (p.empty() || p[0] != '/') {
    std::error_code ec;
    p = std::filesystem::current_path(ec).string() + "/" + p;
  }
  // Lexical cleaning, like Go's filepath.Clean.
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    std::string seg = p.substr(i, j - i);
    if (seg == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!seg.empty() && seg != ".") {
      parts.push_back(seg);
    }
    i = j + 1;
  }
  std::string out;
  for (auto& s : parts) out += "/" + s;
  return out.empty() ? "/" : out;
}

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string canonical_or(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

}  // namespace shellctl::io::fs
