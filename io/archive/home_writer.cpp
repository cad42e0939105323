#include "io/archive/home_writer.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "io/archive/utf8_names.hpp"

namespace shellctl::io::archive {
namespace {

struct failure {
  std::string what;
};

[[noreturn]] void fail_errno(const std::string& op, const std::string& path) {
  throw failure{op + " " + path + ": " + std::strerror(errno)};
}

// The compressed side: libarchive's tar bytes in, one zstd frame out to the sink, its size
// counted on the way. (The digest of the bytes is the server's: it hashes what it sends.)
class zstd_out {
 public:
  explicit zstd_out(const std::function<bool(std::string_view)>& sink)
      : sink_(sink), cctx_(ZSTD_createCCtx()), buf_(ZSTD_CStreamOutSize()) {
    if (!cctx_) throw failure{"out of memory"};
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
    // Level 3's own window (2 MiB for a stream of unknown size): within the original's 8 MiB.
    // Compression on libzstd's worker threads overlaps the walk and the reads; the output
    // is still one frame. Small jobs keep the memory held by the workers to a few MiB.
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_nbWorkers, 1);
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_jobSize, 1 << 20);
  }
  ~zstd_out() { ZSTD_freeCCtx(cctx_); }
  zstd_out(const zstd_out&) = delete;
  zstd_out& operator=(const zstd_out&) = delete;

  // False when the sink refused (the save ends); throws on a compression error.
  bool write(const void* data, std::size_t size) { return pump(data, size, ZSTD_e_continue); }
  bool finish() { return pump(nullptr, 0, ZSTD_e_end); }

  std::uint64_t bytes() const { return bytes_; }
  bool refused() const { return refused_; }

 private:
  bool pump(const void* data, std::size_t size, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{data, size, 0};
    for (;;) {
      ZSTD_outBuffer out{buf_.data(), buf_.size(), 0};
      const std::size_t left = ZSTD_compressStream2(cctx_, &out, &in, mode);
      if (ZSTD_isError(left)) throw failure{std::string("zstd: ") + ZSTD_getErrorName(left)};
      if (out.pos > 0) {
        bytes_ += out.pos;
        if (!sink_(std::string_view(buf_.data(), out.pos))) {
          refused_ = true;
          return false;
        }
      }
      const bool done = mode == ZSTD_e_end ? left == 0 : in.pos == in.size;
      if (done) return true;
    }
  }

  const std::function<bool(std::string_view)>& sink_;
  ZSTD_CCtx* cctx_;
  std::vector<char> buf_;
  std::uint64_t bytes_ = 0;
  bool refused_ = false;
};

la_ssize_t on_tar_bytes(struct archive*, void* client, const void* data, size_t size) {
  auto* z = static_cast<zstd_out*>(client);
  try {
    if (!z->write(data, size)) return -1;
  } catch (const failure&) {
    return -1;
  }
  return static_cast<la_ssize_t>(size);
}

struct archive_deleter {
  void operator()(struct archive* a) const { archive_write_free(a); }
};
struct entry_deleter {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

class walker {
 public:
  walker(struct archive* a, const snapshot_excludes& ex, const std::function<bool()>& stop,
         const save_filter& leave_out)
      : a_(a), ex_(ex), stop_(stop), leave_out_(leave_out), buf_(256 * 1024) {}

  // The entries of the directory `fd` (relative path `rel`, "" for Home), in byte order.
  void walk_dir(int fd, const std::string& rel) {
    DIR* d = ::fdopendir(fd);
    if (!d) {
      ::close(fd);
      fail_errno("open directory", rel.empty() ? "." : rel);
    }
    std::unique_ptr<DIR, int (*)(DIR*)> dir(d, ::closedir);
    std::vector<std::string> names;
    errno = 0;
    while (dirent* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n != "." && n != "..") names.emplace_back(n);
      errno = 0;
    }
    if (errno != 0) fail_errno("read directory", rel.empty() ? "." : rel);
    std::sort(names.begin(), names.end());
    for (const auto& name : names) one_entry(::dirfd(d), name, rel.empty() ? name : rel + "/" + name);
  }

  std::uint64_t entries = 0;

 private:
  void one_entry(int dirfd, const std::string& name, const std::string& rel) {
    if (stop_()) throw failure{"snapshot stopped: deadline reached or client gone"};
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) fail_errno("lstat", rel);
    const bool is_dir = S_ISDIR(st.st_mode);
    if (!is_dir && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) return;  // fifo, socket, device
    if (ex_.excluded(rel, is_dir)) return;  // an excluded directory is not descended into
    if (leave_out_ && leave_out_(st)) return;
    if (S_ISREG(st.st_mode)) {
      // Opened without following and without waiting (a FIFO swapped in after the lstat
      // would block an open for reading), then checked to be what was listed.
      int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
      if (fd < 0) fail_errno("open", rel);
      std::unique_ptr<int, void (*)(int*)> guard(&fd, [](int* f) { ::close(*f); });
      struct stat now {};
      if (::fstat(fd, &now) != 0) fail_errno("stat", rel);
      if (!S_ISREG(now.st_mode) || now.st_dev != st.st_dev || now.st_ino != st.st_ino ||
          (leave_out_ && leave_out_(now)))
        throw failure{"open " + rel + ": changed while being saved"};
      header(rel, now, nullptr);
      copy_content(fd, rel, static_cast<std::uint64_t>(now.st_size));
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<std::size_t>(std::max<off_t>(st.st_size, 0)) + 1, '\0');
      for (;;) {
        ssize_t n = ::readlinkat(dirfd, name.c_str(), target.data(), target.size());
        if (n < 0) fail_errno("readlink", rel);
        if (static_cast<std::size_t>(n) < target.size()) {
          target.resize(static_cast<std::size_t>(n));
          break;
        }
        target.resize(target.size() * 2);
      }
      header(rel, st, &target);
    } else {
      header(rel + "/", st, nullptr);
      int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) fail_errno("open directory", rel);
      struct stat now {};
      if (::fstat(fd, &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
        ::close(fd);
        throw failure{"open directory " + rel + ": changed while being saved"};
      }
      walk_dir(fd, rel);
    }
  }

  void header(const std::string& name, const struct stat& st, const std::string* link) {
    std::unique_ptr<archive_entry, entry_deleter> e(archive_entry_new());
    archive_entry_copy_pathname(e.get(), name.c_str());
    // Permission bits with setuid/setgid/sticky; ownership never recorded.
    archive_entry_set_perm(e.get(), st.st_mode & 07777);
    archive_entry_set_uid(e.get(), 0);
    archive_entry_set_gid(e.get(), 0);
    // The nearest whole second, and no nanoseconds: PAX only where the original needs it.
    const time_t secs = st.st_mtim.tv_sec + (st.st_mtim.tv_nsec >= 500000000 ? 1 : 0);
    archive_entry_set_mtime(e.get(), secs, 0);
    if (link) {
      archive_entry_set_filetype(e.get(), AE_IFLNK);
      archive_entry_copy_symlink(e.get(), link->c_str());
      archive_entry_set_size(e.get(), 0);
    } else if (S_ISDIR(st.st_mode)) {
      archive_entry_set_filetype(e.get(), AE_IFDIR);
      archive_entry_set_size(e.get(), 0);
    } else {
      archive_entry_set_filetype(e.get(), AE_IFREG);
      archive_entry_set_size(e.get(), st.st_size);
    }
    if (archive_write_header(a_, e.get()) < ARCHIVE_WARN) throw failure{archive_error(name)};
    ++entries;
  }

  // Exactly the size the header announced: a file that grew or shrank meanwhile fails.
  void copy_content(int fd, const std::string& rel, std::uint64_t size) {
    std::uint64_t done = 0;
    for (;;) {
      ssize_t n = ::read(fd, buf_.data(), buf_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail_errno("read", rel);
      if (n == 0) break;
      if (done + static_cast<std::uint64_t>(n) > size)
        throw failure{"archive/tar: write too long: " + rel + " grew while being saved"};
      if (archive_write_data(a_, buf_.data(), static_cast<std::size_t>(n)) != n)
        throw failure{archive_error(rel)};
      done += static_cast<std::uint64_t>(n);
    }
    if (done != size)
      throw failure{"archive/tar: missed writing " + std::to_string(size - done) + " bytes: " +
                    rel + " shrank while being saved"};
  }

  std::string archive_error(const std::string& what) {
    const char* e = archive_error_string(a_);
    return "tar " + what + ": " + (e ? e : "write failed");
  }

  struct archive* a_;
  const snapshot_excludes& ex_;
  const std::function<bool()>& stop_;
  const save_filter& leave_out_;
  std::vector<char> buf_;
};

}  // namespace

save_result write_home_archive(const std::string& home, const snapshot_excludes& excludes,
                               const std::function<bool(std::string_view)>& sink,
                               const std::function<bool()>& stop, const save_filter& leave_out) {
  save_result result;
  utf8_names names_as_utf8;
  try {
    zstd_out z(sink);
    std::unique_ptr<struct archive, archive_deleter> a(archive_write_new());
    if (!a) throw failure{"out of memory"};
    archive_write_set_format_pax_restricted(a.get());
    // Two zero blocks end the archive, with no padding to a 10 KiB record.
    archive_write_set_bytes_in_last_block(a.get(), 1);
    if (archive_write_open(a.get(), &z, nullptr, on_tar_bytes, nullptr) != ARCHIVE_OK)
      throw failure{std::string("tar: ") + archive_error_string(a.get())};
    int fd = ::open(home.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail_errno("open", home);
    walker w(a.get(), excludes, stop, leave_out);
    try {
      w.walk_dir(fd, "");
    } catch (const failure&) {
      if (z.refused()) throw failure{"the client stopped reading"};
      throw;
    }
    if (archive_write_close(a.get()) != ARCHIVE_OK) {
      if (z.refused()) throw failure{"the client stopped reading"};
      throw failure{std::string("tar: ") + archive_error_string(a.get())};
    }
    if (!z.finish()) throw failure{"the client stopped reading"};
    result.ok = true;
    result.bytes = z.bytes();
    result.entries = w.entries;
  } catch (const failure& f) {
    result.error = f.what;
  }
  return result;
}

}  // namespace shellctl::io::archive
