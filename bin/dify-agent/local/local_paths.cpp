#include "bin/dify-agent/local/local_paths.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bin/dify-agent/command_tree.hpp"
#include "bin/dify-agent/client/http_transfer.hpp"
#include "io/text/base64url.hpp"

namespace shellctl::dify_agent {


std::string clean_path(const std::string& p) {
  if (p.empty()) return ".";
  const bool rooted = p[0] == '/';
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i <= p.size()) {
    std::size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    std::string seg = p.substr(i, j - i);
    if (seg.empty() || seg == ".") {
    } else if (seg == "..") {
      if (!parts.empty() && parts.back() != "..")
        parts.pop_back();
      else if (!rooted)
        parts.push_back("..");
    } else {
      parts.push_back(seg);
    }
    i = j + 1;
  }
  std::string out = rooted ? "/" : "";
  for (std::size_t k = 0; k < parts.size(); ++k) out += (k ? "/" : "") + parts[k];
  return out.empty() ? "." : out;
}

std::string current_dir() {
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) == nullptr) return ".";
  return buf;
}

std::string absolute_path(const std::string& p) {
  if (!p.empty() && p[0] == '/') return clean_path(p);
  return clean_path(current_dir() + "/" + p);
}

std::string base_name(const std::string& p) {
  if (p.empty()) return ".";
  std::string s = p;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  if (s == "/") return "/";
  const auto slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

std::string dir_name(const std::string& p) {
  const auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return clean_path(p.substr(0, slash + 1));
}

std::string join_path(const std::string& a, const std::string& b) {
  if (a.empty()) return clean_path(b);
  if (b.empty()) return clean_path(a);
  return clean_path(a + "/" + b);
}

std::string extension(const std::string& p) {
  for (std::size_t i = p.size(); i > 0; --i) {
    if (p[i - 1] == '/') break;
    if (p[i - 1] == '.') return p.substr(i - 1);
  }
  return "";
}

bool make_dirs(const std::string& p, unsigned mode) {
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    errno = ENOTDIR;
    return false;
  }
  const std::string parent = dir_name(p);
  if (parent != p && parent != "." && parent != "/" && !make_dirs(parent, mode)) return false;
  if (::mkdir(p.c_str(), mode) == 0 || errno == EEXIST) return true;
  return false;
}

std::string read_input(const std::string& path_or_dash) {
  std::string data;
  char buf[65536];
  if (path_or_dash == "-") {
    for (;;) {
      const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
      if (n > 0) {
        data.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR && !cancelled()) continue;
      if (n < 0) throw cli_error{"read file: read /dev/stdin: " + go_errno_text(errno)};
      return data;
    }
  }
  const std::string abs = absolute_path(path_or_dash);
  const int fd = ::open(abs.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw cli_error{"read file: open " + abs + ": " + go_errno_text(errno)};
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      data.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int e = errno;
    ::close(fd);
    if (n < 0) throw cli_error{"read file: read " + abs + ": " + go_errno_text(e)};
    return data;
  }
}

void write_file(const std::string& path, const std::string& data, unsigned mode, const std::string& context) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw cli_error{context + ": open " + path + ": " + go_errno_text(errno)};
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw cli_error{context + ": write " + path + ": " + go_errno_text(e)};
    }
    off += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

bool decode_base64_url(const std::string& in, std::string& out) {
  // Padded to a multiple of four, '=' only at the end (at most two).
  if (in.size() % 4 != 0) return false;
  const auto body = in.substr(0, in.find_last_not_of('=') + 1);
  if (in.size() - body.size() > 2) return false;
  auto decoded = io::text::unbase64url(body, /*canonical=*/false);
  if (!decoded) return false;
  out = std::move(*decoded);
  return true;
}

temp_dir::temp_dir(const std::string& tag) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + tag + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw cli_error{"create temporary directory: mkdir " + tmpl + ": " + go_errno_text(errno)};
  path = tmpl;
}

temp_dir::~temp_dir() {
  // Flat: only files are put here.
  if (DIR* d = ::opendir(path.c_str())) {
    while (auto* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") ::unlink((path + "/" + n).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(path.c_str());
}

staged_file::staged_file(const std::string& dir, const std::string& name) {
  std::random_device rd;
  temp_ = join_path(dir, "." + name + "." + std::to_string(rd()) + ".part");
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw cli_error{"write file: open " + temp_ + ": " + go_errno_text(errno)};
  ::fchmod(fd_, 0644);  // whatever the umask: the original writes 0644
}

staged_file::~staged_file() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

bool staged_file::write(const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

std::string staged_file::commit_unique(const std::string& wanted) {
  ::close(fd_);
  fd_ = -1;
  const std::string ext = extension(wanted);
  const std::string base = base_name(wanted);
  const std::string stem = base.substr(0, base.size() - ext.size());
  const std::string dir = dir_name(wanted);
  std::string candidate = wanted;
  for (int counter = 1;; ++counter) {
    // link() never replaces: a name taken meanwhile moves on to the next number.
    if (::link(temp_.c_str(), candidate.c_str()) == 0) break;
    if (errno != EEXIST)
      throw cli_error{"write file: open " + candidate + ": " + go_errno_text(errno)};
    candidate = join_path(dir, stem + " (" + std::to_string(counter) + ")" + ext);
  }
  ::unlink(temp_.c_str());
  committed_ = true;
  return candidate;
}

void staged_file::commit_replace(const std::string& path) {
  ::close(fd_);
  fd_ = -1;
  if (::rename(temp_.c_str(), path.c_str()) != 0)
    throw cli_error{"write file: open " + path + ": " + go_errno_text(errno)};
  committed_ = true;
}

}  // namespace shellctl::dify_agent
