#include "io/archive/home_reader.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "io/archive/utf8_names.hpp"
#include "io/fs/beneath.hpp"
#include "io/fs/files.hpp"

namespace shellctl::io::archive {
namespace {

using outcome = restore_result::outcome;

struct stop_error {
  outcome kind;
  std::string message;
};

[[noreturn]] void malformed(const std::string& detail) {
  throw stop_error{outcome::malformed, "archive malformed: " + detail};
}

// docs/snapshots.md "Restore": errors of the machine (space, quota, I/O, memory, descriptors,
// permissions) are restore_failed; every other OS error is the archive's doing.
bool environmental(int e) {
  switch (e) {
    case ENOSPC: case EDQUOT: case EROFS: case EIO: case ENOMEM: case EMFILE: case ENFILE:
    case EACCES: case EPERM:
      return true;
    default:
      return false;
  }
}

[[noreturn]] void os_error(const std::string& op, const std::string& name, int e) {
  std::string text = op + " " + name + ": " + std::strerror(e);
  if (environmental(e)) throw stop_error{outcome::failed, text};
  malformed(text);
}

// ---------------------------------------------------------------- names

// The entry name cleaned lexically (docs/snapshots.md "Confinement"); "" for the root itself.
std::string clean_name(const std::string& name) {
  if (name.empty()) malformed("empty entry name");
  if (name[0] == '/') malformed("absolute entry name \"" + name + "\"");
  std::vector<std::string_view> parts;
  std::string_view rest = name;
  while (!rest.empty()) {
    auto slash = rest.find('/');
    auto part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (parts.empty()) malformed("entry escapes root: \"" + name + "\"");
      parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (auto p : parts) {
    if (!out.empty()) out += '/';
    out += p;
  }
  return out;
}

// ---------------------------------------------------------------- the confined root

class root_dir {
 public:
  root_dir(const std::string& home, const restore_filter& off_limits) : off_limits_(off_limits) {
    fd_ = ::open(home.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) throw stop_error{outcome::failed, "open " + home + ": " + std::strerror(errno)};
  }
  ~root_dir() { ::close(fd_); }
  root_dir(const root_dir&) = delete;
  root_dir& operator=(const root_dir&) = delete;

  // openat2 beneath the root: symlinks are followed while they stay inside; one that leads
  // out (or is absolute) fails with EXDEV.
  int open(const std::string& rel, int flags, mode_t mode = 0) const {
    return io::fs::open_beneath(fd_, rel, flags, mode);
  }

  // The directory `rel` (created with its parents, 0700, where missing), as an O_PATH fd.
  int dir(const std::string& rel, const std::string& entry) const {
    if (rel.empty()) return ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
    int fd = open(rel, O_PATH | O_DIRECTORY);
    if (fd >= 0) return checked(fd, entry);
    if (errno != ENOENT) refuse("open directory", entry, errno);
    const auto slash = rel.rfind('/');
    const std::string parent = slash == std::string::npos ? "" : rel.substr(0, slash);
    const std::string last = slash == std::string::npos ? rel : rel.substr(slash + 1);
    int pfd = dir(parent, entry);
    if (::mkdirat(pfd, last.c_str(), 0700) != 0 && errno != EEXIST) {
      int e = errno;
      ::close(pfd);
      refuse("mkdir", entry, e);
    }
    ::close(pfd);
    fd = open(rel, O_PATH | O_DIRECTORY);
    if (fd < 0) refuse("open directory", entry, errno);
    return checked(fd, entry);
  }

  // `fd` (taken), unless what it is lies off limits (malformed: nothing is written there).
  int checked(int fd, const std::string& entry) const {
    if (!off_limits_) return fd;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || off_limits_(st)) {
      ::close(fd);
      malformed("\"" + entry + "\" leads into the server's state directory");
    }
    return fd;
  }

  [[noreturn]] static void refuse(const std::string& op, const std::string& entry, int e) {
    if (e == EXDEV) malformed("\"" + entry + "\" leads out of Home through a symlink");
    os_error(op, entry, e);
  }

 private:
  int fd_;
  const restore_filter& off_limits_;
};

struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

std::pair<std::string, std::string> split_last(const std::string& rel) {
  const auto slash = rel.rfind('/');
  if (slash == std::string::npos) return {"", rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

// ---------------------------------------------------------------- the zstd side

// libzstd's streaming decompression on a thread of its own, so that decompressing and
// extracting overlap as `zstd -d | tar -x` does with two processes: the extraction (the
// caller's thread) takes decompressed blocks from a bounded queue, at most `ahead` blocks
// of 128 KiB behind the decompression.
class zstd_in {
 public:
  explicit zstd_in(byte_source& src)
      : src_(src), dctx_(ZSTD_createDCtx()), in_(ZSTD_DStreamInSize()) {
    if (!dctx_) throw stop_error{outcome::failed, "out of memory"};
    // Frames asking for more than 64 MiB of window are refused (foreign --long archives).
    ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, 26);
    worker_ = std::thread([this] { produce(); });
  }
  ~zstd_in() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    room_.notify_all();
    src_.cancel();  // a read waiting for more of the body returns now
    worker_.join();
    ZSTD_freeDCtx(dctx_);
  }
  zstd_in(const zstd_in&) = delete;
  zstd_in& operator=(const zstd_in&) = delete;

  // Whether the stream decompresses to nothing at all (an empty body): an empty archive,
  // which libarchive would call unrecognized. The block read to tell is kept for next().
  bool empty() {
    held_ = take(&held_block_);
    holding_ = true;
    return held_ == 0;
  }

  // The next decompressed bytes for libarchive: their count (0 at a clean end), or -1 with
  // `error` set.
  la_ssize_t next(const void** block) {
    if (holding_) {
      holding_ = false;
      *block = held_block_;
      return held_;
    }
    return take(block);
  }

  std::optional<stop_error> error;

  // The decompressed bytes [offset, offset + len) into `out`, if they are still held: the
  // block libarchive reads now and about the last `retained` bytes before it.
  bool bytes_at(std::uint64_t offset, std::size_t len, std::string& out) const {
    out.clear();
    auto take_from = [&](std::uint64_t at, const std::string& b) {
      if (out.size() == len) return;
      const std::uint64_t want = offset + out.size();
      if (want < at || want >= at + b.size()) return;
      const std::size_t from = static_cast<std::size_t>(want - at);
      out.append(b, from, std::min(b.size() - from, len - out.size()));
    };
    for (const auto& [at, b] : seen_) take_from(at, b);
    take_from(current_offset_, current_);
    return out.size() == len;
  }

 private:
  static constexpr std::size_t ahead = 8;
  // Enough for any entry's extension headers (pax, GNU long names; at most 1 MiB of them,
  // as Go's archive/tar allows), wherever libarchive stands in the current block.
  static constexpr std::size_t retained = 2u << 20;

  la_ssize_t take(const void** block) {
    std::unique_lock<std::mutex> lk(mu_);
    ready_.wait(lk, [&] { return !queue_.empty() || done_; });
    if (!queue_.empty()) {
      // The block libarchive read last stays a while (header_bytes reads back into it).
      if (!current_.empty()) {
        seen_.emplace_back(current_offset_, std::move(current_));
        seen_bytes_ += seen_.back().second.size();
        current_offset_ += seen_.back().second.size();
      }
      while (!seen_.empty() && seen_bytes_ - seen_.front().second.size() >= retained) {
        seen_bytes_ -= seen_.front().second.size();
        if (spare_.size() < ahead) spare_.push_back(std::move(seen_.front().second));
        seen_.pop_front();
      }
      current_ = std::move(queue_.front());
      queue_.pop_front();
      room_.notify_one();
      *block = current_.data();
      return static_cast<la_ssize_t>(current_.size());
    }
    if (failure_) {
      error = failure_;
      return -1;
    }
    return 0;
  }

  void produce() {
    for (;;) {
      std::string block;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (!spare_.empty()) {  // a block libarchive is done with: no new zeroed buffer
          block = std::move(spare_.back());
          spare_.pop_back();
        }
      }
      block.resize(ZSTD_DStreamOutSize());
      std::optional<stop_error> err;
      const la_ssize_t n = fill(block.data(), block.size(), err);
      std::unique_lock<std::mutex> lk(mu_);
      if (n <= 0) {
        done_ = true;
        failure_ = std::move(err);
        ready_.notify_all();
        return;
      }
      block.resize(static_cast<std::size_t>(n));
      room_.wait(lk, [&] { return queue_.size() < ahead || stop_; });
      if (stop_) return;
      queue_.push_back(std::move(block));
      ready_.notify_one();
    }
  }

  // Decompresses into `out`: the count, 0 at a clean end, -1 with `err`.
  la_ssize_t fill(char* out_data, std::size_t out_size, std::optional<stop_error>& err) {
    for (;;) {
      if (in_pos_ == in_len_ && !eof_) {
        auto n = src_.read(in_.data(), in_.size());
        if (n < 0) {
          err = stop_error{outcome::failed, src_.failure()};
          return -1;
        }
        if (n == 0) {
          eof_ = true;
        } else {
          in_len_ = static_cast<std::size_t>(n);
          in_pos_ = 0;
        }
      }
      if (in_pos_ == in_len_ && eof_) {
        if (mid_frame_) {
          err = stop_error{outcome::malformed, "archive malformed: zstd: unexpected EOF"};
          return -1;
        }
        return 0;
      }
      ZSTD_inBuffer in{in_.data(), in_len_, in_pos_};
      ZSTD_outBuffer out{out_data, out_size, 0};
      const std::size_t r = ZSTD_decompressStream(dctx_, &out, &in);
      in_pos_ = in.pos;
      if (ZSTD_isError(r)) {
        err = stop_error{outcome::malformed, std::string("archive malformed: zstd: ") + ZSTD_getErrorName(r)};
        return -1;
      }
      mid_frame_ = r != 0;
      if (out.pos > 0) return static_cast<la_ssize_t>(out.pos);
    }
  }

  byte_source& src_;
  // The consumer's side.
  bool holding_ = false;
  la_ssize_t held_ = 0;
  const void* held_block_ = nullptr;
  std::string current_;  // the block libarchive reads now
  std::uint64_t current_offset_ = 0;  // its place in the decompressed stream
  std::deque<std::pair<std::uint64_t, std::string>> seen_;  // blocks read before it
  std::size_t seen_bytes_ = 0;
  // The decompressor's side (its thread only).
  ZSTD_DCtx* dctx_;
  std::vector<char> in_;
  std::size_t in_len_ = 0, in_pos_ = 0;
  bool eof_ = false;
  bool mid_frame_ = false;
  // Between the two.
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<std::string> queue_;
  std::vector<std::string> spare_;  // blocks to fill again
  bool done_ = false;
  bool stop_ = false;
  std::optional<stop_error> failure_;
  std::thread worker_;
};

la_ssize_t on_read(struct archive*, void* client, const void** block) {
  return static_cast<zstd_in*>(client)->next(block);
}

struct reader_deleter {
  void operator()(struct archive* a) const { archive_read_free(a); }
};

// A tar header's size field: octal digits (spaces and NULs around them), or base-256 when
// its first byte has the high bit (GNU and star, for sizes of 8 GiB and more).
std::uint64_t header_size(const std::string& block) {
  const auto* f = reinterpret_cast<const unsigned char*>(block.data()) + 124;
  std::uint64_t v = 0;
  if (f[0] & 0x80) {
    for (int i = 1; i < 12; ++i) v = (v << 8) | f[i];
    return v;
  }
  for (int i = 0; i < 12; ++i) {
    if (f[i] >= '0' && f[i] <= '7') v = v * 8 + (f[i] - '0');
    else if (v != 0 && (f[i] == ' ' || f[i] == 0)) break;
  }
  return v;
}

// Whether pax records ("<length> <key>=<value>\n" each) hold a GNU.sparse.* key.
bool has_gnu_sparse_record(std::string_view records) {
  while (!records.empty()) {
    const auto space = records.find(' ');
    if (space == std::string_view::npos) return false;
    std::uint64_t len = 0;
    for (std::size_t i = 0; i < space; ++i) {
      if (records[i] < '0' || records[i] > '9' || len > records.size()) return false;
      len = len * 10 + static_cast<std::uint64_t>(records[i] - '0');
    }
    if (len <= space + 1 || len > records.size()) return false;
    const auto record = records.substr(space + 1, static_cast<std::size_t>(len) - space - 1);
    if (record.rfind("GNU.sparse.", 0) == 0) return true;
    records.remove_prefix(static_cast<std::size_t>(len));
  }
  return false;
}

// The tar typeflag of an entry libarchive decoded, for the "unsupported" message.
int typeflag_of(mode_t type) {
  switch (type) {
    case AE_IFCHR: return '3';
    case AE_IFBLK: return '4';
    case AE_IFIFO: return '6';
    default: return '?';
  }
}

class extractor {
 public:
  extractor(const std::string& home, struct archive* a, const std::function<bool()>& stop,
            const restore_filter& off_limits)
      : root_(home, off_limits), a_(a), stop_(stop) {}

  void entry(archive_entry* e) {
    if (stop_()) throw stop_error{outcome::failed, "restore stopped: deadline reached or client gone"};
    const char* raw = archive_entry_pathname(e);
    const std::string name = raw ? raw : "";
    if (archive_entry_sparse_count(e) > 0) malformed("sparse entry \"" + name + "\"");
    const std::string rel = clean_name(name);
    const mode_t mode = archive_entry_perm(e) & 0777;  // setuid, setgid, sticky: stripped
    if (const char* target = archive_entry_hardlink(e)) {
      if (rel.empty()) return;
      hardlink(rel, target, name);
      ++entries;
      return;
    }
    const mode_t type = archive_entry_filetype(e);
    if (rel.empty() && (type == AE_IFDIR || type == AE_IFREG)) return;  // the root itself
    switch (type) {
      case AE_IFDIR: {
        fd_guard d{root_.dir(rel, name)};
        dir_modes_.emplace_back(rel, mode);
        break;
      }
      case AE_IFREG:
        file(rel, mode, name);
        break;
      case AE_IFLNK: {
        if (rel.empty()) malformed("symlink at the root \"" + name + "\"");
        const char* target = archive_entry_symlink(e);
        symlink(rel, target ? target : "", name);
        break;
      }
      default:
        malformed("unsupported entry type " + std::to_string(typeflag_of(type)) + " for \"" +
                  name + "\"");
    }
    ++entries;
  }

  // An entry is sparse when its own header says 'S' (GNU) or any of its
  // pax records is a GNU.sparse.* key. libarchive reports only sparse maps it built, so
  // the entry's header blocks are read again here, from where libarchive says they begin:
  // the extension headers ('x', 'g' pax records; 'L', 'K' GNU long names), then the
  // entry's own. At most 1 MiB of extension headers per entry, as Go's archive/tar.
  void refuse_sparse_headers(std::int64_t position, const std::string& name) {
    if (position < 0 || !source) return;
    auto at = static_cast<std::uint64_t>(position);
    std::uint64_t extension_bytes = 0;
    std::string block, data;
    for (;;) {
      if (!source->bytes_at(at, 512, block))
        malformed("the headers of \"" + name + "\" are longer than 1 MiB");
      const char type = block[156];
      if (type != 'x' && type != 'g' && type != 'L' && type != 'K') {
        if (type == 'S') malformed("sparse entry \"" + name + "\"");
        return;
      }
      const std::uint64_t size = header_size(block);
      extension_bytes += 512 + size;
      if (size > (1u << 20) || extension_bytes > (1u << 20))
        malformed("the headers of \"" + name + "\" are longer than 1 MiB");
      if (type == 'x' || type == 'g') {
        if (!source->bytes_at(at + 512, static_cast<std::size_t>(size), data))
          malformed("the headers of \"" + name + "\" are longer than 1 MiB");
        if (has_gnu_sparse_record(data)) malformed("sparse entry \"" + name + "\" (GNU.sparse pax record)");
      }
      at += 512 + (size + 511) / 512 * 512;
    }
  }

  // Directory modes last, children before parents, so a read-only directory could still be
  // filled while its entries came.
  void finish() {
    for (auto it = dir_modes_.rbegin(); it != dir_modes_.rend(); ++it) {
      int fd = root_.open(it->first, O_PATH | O_DIRECTORY);
      if (fd < 0) root_dir::refuse("open directory", it->first, errno);
      fd_guard g{root_.checked(fd, it->first)};
      const std::string via = "/proc/self/fd/" + std::to_string(fd);
      if (::chmod(via.c_str(), it->second) != 0) os_error("chmod", it->first, errno);
    }
  }

  std::int64_t entries = 0;
  std::int64_t bytes_written = 0;

 private:
  void file(const std::string& rel, mode_t mode, const std::string& name) {
    auto [parent, last] = split_last(rel);
    fd_guard p{root_.dir(parent, name)};
    // Looked at before it is opened for writing, and opened without waiting and without
    // truncating until it is known to be a regular file: a FIFO a job left at the name
    // would block the open (no reader), take the bytes (a reader), or at least wake its
    // reader. What was looked at must be what is opened.
    struct stat seen {};
    bool existed = false;
    {
      const int probe = root_.open(rel, O_PATH);
      if (probe >= 0) {
        fd_guard g{root_.checked(probe, name)};
        if (::fstat(g.fd, &seen) != 0) os_error("stat", name, errno);
        existed = true;
      } else if (errno != ENOENT) {
        root_dir::refuse("open", name, errno);
      }
    }
    if (existed && !S_ISREG(seen.st_mode)) not_a_file(seen, name);
    int fd = root_.open(rel, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY, mode);
    if (fd < 0) root_dir::refuse("open", name, errno);
    fd_guard f{root_.checked(fd, name)};
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) os_error("stat", name, errno);
    if (!S_ISREG(st.st_mode)) not_a_file(st, name);
    if (existed && (st.st_dev != seen.st_dev || st.st_ino != seen.st_ino))
      malformed("\"" + name + "\" changed while it was restored");
    if (::ftruncate(f.fd, 0) != 0) os_error("truncate", name, errno);
    if (::fcntl(f.fd, F_SETFL, 0) != 0) os_error("open", name, errno);  // blocking writes
    written_.emplace(st.st_dev, st.st_ino);
    // Blocks straight from libarchive's buffer (the decompressor's output): no copy here.
    // Offsets are contiguous: sparse entries were refused before.
    for (;;) {
      const void* block = nullptr;
      std::size_t size = 0;
      la_int64_t offset = 0;
      const int r = archive_read_data_block(a_, &block, &size, &offset);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) archive_failure();
      if (!fs::write_all(fd, static_cast<const char*>(block), size)) os_error("write", name, errno);
      bytes_written += static_cast<std::int64_t>(size);
    }
    if (::fchmod(fd, mode) != 0) os_error("chmod", name, errno);  // the umask cannot interfere
  }

  void symlink(const std::string& rel, const std::string& target, const std::string& name) {
    auto [parent, last] = split_last(rel);
    fd_guard p{root_.dir(parent, name)};
    // Whatever is at the name goes: a file, a symlink or an empty directory.
    if (::unlinkat(p.fd, last.c_str(), 0) != 0) {
      if (errno == EISDIR) {
        if (::unlinkat(p.fd, last.c_str(), AT_REMOVEDIR) != 0) os_error("remove", name, errno);
      } else if (errno != ENOENT) {
        os_error("remove", name, errno);
      }
    }
    // The target is link text: not validated, not followed here.
    if (::symlinkat(target.c_str(), p.fd, last.c_str()) != 0) os_error("symlink", name, errno);
  }

  void hardlink(const std::string& rel, const std::string& raw_target, const std::string& name) {
    const std::string target = clean_name(raw_target);
    if (target.empty()) malformed("hard link \"" + name + "\" to the root");
    // The very file this restore wrote at the target name, held open (O_PATH, the last
    // component not followed) and linked by its descriptor, so that nothing swapped in at
    // the name meanwhile, and no file Home held before, ever gets a second name.
    int tfd = root_.open(target, O_PATH | O_NOFOLLOW);
    if (tfd < 0) root_dir::refuse("link", name, errno);
    fd_guard t{tfd};
    struct stat st {};
    if (::fstat(t.fd, &st) != 0) os_error("link", name, errno);
    if (!S_ISREG(st.st_mode) || written_.count({st.st_dev, st.st_ino}) == 0)
      malformed("hard link \"" + name + "\" to \"" + raw_target +
                "\": its target is not a file this archive wrote");
    auto [parent, last] = split_last(rel);
    fd_guard p{root_.dir(parent, name)};
    const std::string via = "/proc/self/fd/" + std::to_string(t.fd);
    if (::linkat(AT_FDCWD, via.c_str(), p.fd, last.c_str(), AT_SYMLINK_FOLLOW) != 0)
      os_error("link", name, errno);
  }

  [[noreturn]] void archive_failure();

  [[noreturn]] static void not_a_file(const struct stat& st, const std::string& name) {
    if (S_ISDIR(st.st_mode)) os_error("open", name, EISDIR);
    malformed("\"" + name + "\" is not a regular file in Home (a FIFO, socket or device)");
  }

  root_dir root_;
  struct archive* a_;
  const std::function<bool()>& stop_;
  std::vector<std::pair<std::string, mode_t>> dir_modes_;
  std::set<std::pair<dev_t, ino_t>> written_;  // the regular files this restore wrote

 public:
  zstd_in* source = nullptr;
};

void extractor::archive_failure() {
  if (source && source->error) throw *source->error;
  const char* e = archive_error_string(a_);
  malformed(std::string("tar: ") + (e ? e : "unreadable archive"));
}

}  // namespace

restore_result restore_home(const std::string& home, byte_source& body,
                            const std::function<bool()>& stop, const restore_filter& off_limits) {
  restore_result result;
  utf8_names names_as_utf8;
  try {
    zstd_in z(body);
    std::unique_ptr<struct archive, reader_deleter> a(archive_read_new());
    if (!a) throw stop_error{outcome::failed, "out of memory"};
    archive_read_support_format_tar(a.get());  // tar only: no other formats, no filters
    extractor x(home, a.get(), stop, off_limits);
    x.source = &z;
    if (z.empty()) {
      if (z.error) throw *z.error;
      result.result = outcome::ok;
      return result;
    }
    if (archive_read_open(a.get(), &z, nullptr, on_read, nullptr) != ARCHIVE_OK) {
      if (z.error) throw *z.error;
      // Nothing at all (an empty body) is an empty archive.
      const char* e = archive_error_string(a.get());
      malformed(std::string("tar: ") + (e ? e : "unreadable archive"));
    }
    for (;;) {
      archive_entry* e = nullptr;
      int r = archive_read_next_header(a.get(), &e);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) {
        if (z.error) throw *z.error;
        const char* text = archive_error_string(a.get());
        malformed(std::string("tar: ") + (text ? text : "unreadable header"));
      }
      x.refuse_sparse_headers(archive_read_header_position(a.get()),
                              archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
      x.entry(e);
    }
    x.finish();
    result.result = outcome::ok;
    result.entries = x.entries;
    result.bytes_written = x.bytes_written;
  } catch (const stop_error& s) {
    result.result = s.kind;
    result.message = s.message;
  }
  return result;
}

}  // namespace shellctl::io::archive
