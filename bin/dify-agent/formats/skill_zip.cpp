#include "bin/dify-agent/formats/skill_zip.hpp"

#include "io/fs/beneath.hpp"
#include "io/fs/files.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace shellctl::dify_agent {

using io::fs::dirs_beneath;
using io::fs::open_beneath;

namespace {

struct writer_deleter {
  void operator()(struct archive* a) const { archive_write_free(a); }
};
struct reader_deleter {
  void operator()(struct archive* a) const { archive_read_free(a); }
};

std::string add_tree(struct archive* a, const std::string& root, const std::string& rel) {
  const std::string abs = rel.empty() ? root : root + "/" + rel;
  std::vector<std::string> names;
  if (!io::fs::sorted_entry_names(abs, names)) return "open " + abs + ": " + std::strerror(errno);
  for (const auto& n : names) {
    const std::string r = rel.empty() ? n : rel + "/" + n;
    const std::string p = root + "/" + r;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return "stat " + p + ": " + std::strerror(errno);
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(), archive_entry_free);
    archive_entry_copy_stat(e.get(), &st);
    archive_entry_set_uid(e.get(), 0);
    archive_entry_set_gid(e.get(), 0);
    if (S_ISDIR(st.st_mode)) {
      archive_entry_set_pathname(e.get(), (r + "/").c_str());
      archive_entry_set_size(e.get(), 0);
      if (archive_write_header(a, e.get()) != ARCHIVE_OK) return archive_error_string(a);
      if (auto err = add_tree(a, root, r); !err.empty()) return err;
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t n = ::readlink(p.c_str(), target, sizeof target - 1);
      if (n < 0) return "readlink " + p + ": " + std::strerror(errno);
      target[n] = '\0';
      archive_entry_set_pathname(e.get(), r.c_str());
      archive_entry_set_symlink(e.get(), target);
      archive_entry_set_size(e.get(), 0);
      if (archive_write_header(a, e.get()) != ARCHIVE_OK) return archive_error_string(a);
    } else if (S_ISREG(st.st_mode)) {
      const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (fd < 0) return "open " + p + ": " + std::strerror(errno);
      archive_entry_set_pathname(e.get(), r.c_str());
      if (archive_write_header(a, e.get()) != ARCHIVE_OK) {
        ::close(fd);
        return archive_error_string(a);
      }
      char buf[65536];
      for (;;) {
        const ssize_t got = ::read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
          const int err = errno;
          ::close(fd);
          return "read " + p + ": " + std::strerror(err);
        }
        if (got == 0) break;
        if (archive_write_data(a, buf, static_cast<size_t>(got)) < 0) {
          ::close(fd);
          return archive_error_string(a);
        }
      }
      ::close(fd);
    }
    // Sockets, fifos and devices have no place in a skill: skipped.
  }
  return "";
}

bool safe_name(const std::string& n) {
  if (n.empty() || n[0] == '/' || n.find('\\') != std::string::npos) return false;
  std::size_t start = 0;
  while (start <= n.size()) {
    std::size_t slash = n.find('/', start);
    if (slash == std::string::npos) slash = n.size();
    if (n.compare(start, slash - start, "..") == 0 && slash - start == 2) return false;
    start = slash + 1;
  }
  return true;
}

}  // namespace

std::string zip_directory(const std::string& dir, const std::string& zip_path) {
  std::unique_ptr<struct archive, writer_deleter> a(archive_write_new());
  archive_write_set_format_zip(a.get());
  if (archive_write_open_filename(a.get(), zip_path.c_str()) != ARCHIVE_OK)
    return "create archive: " + std::string(archive_error_string(a.get()));
  std::string err = add_tree(a.get(), dir, "");
  if (archive_write_close(a.get()) != ARCHIVE_OK && err.empty())
    err = archive_error_string(a.get());
  return err.empty() ? "" : "create skill archive: " + err;
}

std::string extract_zip(const std::string& zip_path, const std::string& target) {
  std::unique_ptr<struct archive, reader_deleter> a(archive_read_new());
  archive_read_support_format_zip(a.get());
  if (archive_read_open_filename(a.get(), zip_path.c_str(), 65536) != ARCHIVE_OK)
    return archive_error_string(a.get());
  const int root = ::open(target.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return "open " + target + ": " + std::strerror(errno);
  std::string err;
  archive_entry* e = nullptr;
  for (;;) {
    const int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      err = archive_error_string(a.get());
      break;
    }
    std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
    const bool is_dir = archive_entry_filetype(e) == AE_IFDIR || (!name.empty() && name.back() == '/');
    while (!name.empty() && name.back() == '/') name.pop_back();
    if (name.empty()) continue;
    if (!safe_name(name)) {
      err = "invalid archive entry path \"" + name + "\"";
      break;
    }
    const auto slash = name.rfind('/');
    const std::string parent = slash == std::string::npos ? "" : name.substr(0, slash);
    const std::string leaf = slash == std::string::npos ? name : name.substr(slash + 1);
    if (is_dir) {
      const int d = dirs_beneath(root, name, 0755);
      if (d < 0) {
        err = "create " + name + ": " + std::strerror(errno);
        break;
      }
      ::close(d);
      continue;
    }
    if (archive_entry_filetype(e) != AE_IFREG) continue;  // links and devices: not created
    const int pd = dirs_beneath(root, parent, 0755);
    if (pd < 0) {
      err = "create " + parent + ": " + std::strerror(errno);
      break;
    }
    const mode_t mode = (archive_entry_perm(e) & 0777) ? (archive_entry_perm(e) & 0777) : 0644;
    const int fd = open_beneath(pd, leaf, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode);
    ::close(pd);
    if (fd < 0) {
      err = "create " + name + ": " + std::strerror(errno);
      break;
    }
    const void* block = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    int rr;
    while ((rr = archive_read_data_block(a.get(), &block, &size, &offset)) == ARCHIVE_OK) {
      if (::pwrite(fd, block, size, offset) != static_cast<ssize_t>(size)) {
        err = "write " + name + ": " + std::strerror(errno);
        break;
      }
    }
    ::close(fd);
    if (err.empty() && rr != ARCHIVE_EOF) err = archive_error_string(a.get());
    if (!err.empty()) break;
  }
  ::close(root);
  return err;
}

}  // namespace shellctl::dify_agent
