#include "bin/dify-agent/formats/agent_home.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "io/fs/beneath.hpp"
#include "io/fs/files.hpp"
#include "io/text/go_quote.hpp"

namespace shellctl::dify_agent {

using io::fs::dirs_beneath;
using io::fs::open_beneath;

using io::text::go_quote;

namespace {



// ---- the writer: tar headers (USTAR, PAX where needed) into a zstd stream --------------------

// libarchive always writes directory names with a trailing slash; the original's archives
// have none, so the 512-byte headers are formed here (the format is fixed and small).
class tar_zstd_out {
 public:
  explicit tar_zstd_out(const std::function<bool(std::string_view)>& sink) : sink_(sink) {
    cctx_ = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
    out_.resize(ZSTD_CStreamOutSize());
  }
  ~tar_zstd_out() { ZSTD_freeCCtx(cctx_); }

  bool write(const char* p, std::size_t n) { return push(p, n, ZSTD_e_continue); }
  bool finish() {
    static const char zeros[1024] = {};
    return write(zeros, sizeof zeros) && push(nullptr, 0, ZSTD_e_end);
  }

  bool header(const std::string& name, char type, mode_t mode, std::uint64_t size, long long mtime,
              const std::string& link) {
    std::string pax;
    auto record = [&](const std::string& k, const std::string& v) {
      const std::string body = " " + k + "=" + v + "\n";
      std::size_t len = body.size() + 1;
      while (std::to_string(len).size() + body.size() != len) ++len;
      pax += std::to_string(len) + body;
    };
    auto ascii = [](const std::string& s) {
      return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80 && c != 0; });
    };
    if (name.size() > 100 || !ascii(name)) record("path", name);
    if (link.size() > 100 || !ascii(link)) record("linkpath", link);
    if (size > 077777777777ULL) record("size", std::to_string(size));
    if (!pax.empty()) {
      const std::string pax_name = "PaxHeaders.0/" + name.substr(0, std::min<std::size_t>(name.size(), 80));
      if (!block(pax_name, 'x', 0, pax.size(), mtime, "") || !write(pax.data(), pax.size()) || !pad(pax.size()))
        return false;
    }
    return block(name, type, mode, size, mtime, link);
  }

  bool pad(std::uint64_t size) {
    static const char zeros[512] = {};
    const std::size_t rest = static_cast<std::size_t>((512 - size % 512) % 512);
    return rest == 0 || write(zeros, rest);
  }

 private:
  // Zero-padded octal in width-1 digits and a NUL, as Go's tar writer fills the field.
  static void octal(char* field, std::size_t width, std::uint64_t v) {
    for (std::size_t i = width - 1; i > 0; --i) {
      field[i - 1] = static_cast<char>('0' + (v & 7));
      v >>= 3;
    }
    field[width - 1] = '\0';
  }

  bool block(const std::string& name, char type, mode_t mode, std::uint64_t size, long long mtime,
             const std::string& link) {
    char h[512] = {};
    std::memcpy(h, name.data(), std::min<std::size_t>(name.size(), 100));
    octal(h + 100, 8, mode & 07777);
    octal(h + 108, 8, 0);
    octal(h + 116, 8, 0);
    octal(h + 124, 12, size > 077777777777ULL ? 0 : size);
    octal(h + 136, 12, mtime < 0 ? 0 : static_cast<std::uint64_t>(mtime));
    h[156] = type;
    std::memcpy(h + 157, link.data(), std::min<std::size_t>(link.size(), 100));
    std::memcpy(h + 257, "ustar\0" "00", 8);
    octal(h + 329, 8, 0);
    octal(h + 337, 8, 0);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    octal(h + 148, 7, sum);  // six digits and a NUL, then the space Go leaves
    h[155] = ' ';
    return write(h, sizeof h);
  }

  bool push(const char* p, std::size_t n, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{p, n, 0};
    for (;;) {
      ZSTD_outBuffer out{out_.data(), out_.size(), 0};
      const std::size_t left = ZSTD_compressStream2(cctx_, &out, &in, mode);
      if (ZSTD_isError(left)) return false;
      if (out.pos > 0 && !sink_(std::string_view(out_.data(), out.pos))) return false;
      if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size) return true;
    }
  }

  const std::function<bool(std::string_view)>& sink_;
  ZSTD_CCtx* cctx_ = nullptr;
  std::vector<char> out_;
};

bool excluded(const std::string& rel, const std::set<std::string>& ex) {
  for (const auto& e : ex)
    if (rel == e || rel.compare(0, e.size() + 1, e + "/") == 0) return true;
  return false;
}

std::string clean(const std::string& p) {
  const bool rooted = !p.empty() && p[0] == '/';
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i <= p.size()) {
    std::size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    const std::string seg = p.substr(i, j - i);
    if (seg == "..") {
      if (!parts.empty() && parts.back() != "..")
        parts.pop_back();
      else if (!rooted)
        parts.push_back("..");
    } else if (!seg.empty() && seg != ".") {
      parts.push_back(seg);
    }
    i = j + 1;
  }
  std::string out = rooted ? "/" : "";
  for (std::size_t k = 0; k < parts.size(); ++k) out += (k ? "/" : "") + parts[k];
  return out.empty() ? "." : out;
}

// filepath.Rel for two clean absolute paths.
std::string relative(const std::string& base, const std::string& target) {
  auto split = [](const std::string& s) {
    std::vector<std::string> v;
    std::size_t i = 1;
    while (i < s.size()) {
      std::size_t j = s.find('/', i);
      if (j == std::string::npos) j = s.size();
      v.push_back(s.substr(i, j - i));
      i = j + 1;
    }
    return v;
  };
  const auto b = split(base), t = split(target);
  std::size_t k = 0;
  while (k < b.size() && k < t.size() && b[k] == t[k]) ++k;
  std::string out;
  for (std::size_t i = k; i < b.size(); ++i) out += out.empty() ? ".." : "/..";
  for (std::size_t i = k; i < t.size(); ++i) out += (out.empty() ? "" : "/") + t[i];
  return out.empty() ? "." : out;
}

// The original's relocatableSymlinkTarget: absolute targets inside Home (not excluded)
// become relative to the link's directory, so the archive restores into any Home.
std::string relocate(const std::string& home, const std::string& link_rel, const std::string& target,
                     const std::set<std::string>& ex) {
  if (target.empty() || target[0] != '/') return target;
  const std::string t = clean(target);
  const std::string rel = relative(home, t);
  if (rel == ".." || rel.rfind("../", 0) == 0) return target;
  if (excluded(rel, ex)) return target;
  const std::string link_abs = home + "/" + link_rel;
  return relative(clean(link_abs.substr(0, link_abs.rfind('/'))), t);
}

struct walk_error {
  std::string message;
};

void walk(tar_zstd_out& out, const std::string& home, const std::string& rel,
          const std::set<std::string>& ex, std::vector<char>& buf) {
  const std::string dir = rel.empty() ? home : home + "/" + rel;
  std::vector<std::string> names;
  if (!io::fs::sorted_entry_names(dir, names)) throw walk_error{"open " + dir + ": " + io::text::go_errno_text(errno)};
  for (const auto& n : names) {
    const std::string r = rel.empty() ? n : rel + "/" + n;
    if (excluded(r, ex)) continue;
    const std::string p = home + "/" + r;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) throw walk_error{"lstat " + p + ": " + io::text::go_errno_text(errno)};
    // Go rounds the modification time to the nearest second for a USTAR header.
    const long long mtime = static_cast<long long>(st.st_mtim.tv_sec) + (st.st_mtim.tv_nsec >= 500000000 ? 1 : 0);
    if (S_ISDIR(st.st_mode)) {
      if (!out.header(r, '5', st.st_mode, 0, mtime, "")) throw walk_error{"stopped"};
      walk(out, home, r, ex, buf);
    } else if (S_ISLNK(st.st_mode)) {
      std::vector<char> t(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 255) + 1);
      const ssize_t len = ::readlink(p.c_str(), t.data(), t.size());
      if (len < 0) throw walk_error{"readlink " + p + ": " + io::text::go_errno_text(errno)};
      const std::string target = relocate(home, r, std::string(t.data(), static_cast<std::size_t>(len)), ex);
      if (!out.header(r, '2', 0777, 0, mtime, target)) throw walk_error{"stopped"};
    } else if (S_ISREG(st.st_mode)) {
      const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (fd < 0) throw walk_error{"open " + p + ": " + io::text::go_errno_text(errno)};
      const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
      if (!out.header(r, '0', st.st_mode, size, mtime, "")) {
        ::close(fd);
        throw walk_error{"stopped"};
      }
      std::uint64_t done = 0;
      while (done < size) {
        const ssize_t n = ::read(fd, buf.data(), static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), size - done)));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          const int e = errno;
          ::close(fd);
          // A file that shrank while being read cannot fill its header's size.
          throw walk_error{n < 0 ? "read " + p + ": " + io::text::go_errno_text(e) : "archive/tar: missed writing " +
                                                                      std::to_string(size - done) + " bytes"};
        }
        if (!out.write(buf.data(), static_cast<std::size_t>(n))) {
          ::close(fd);
          throw walk_error{"stopped"};
        }
        done += static_cast<std::uint64_t>(n);
      }
      ::close(fd);
      if (!out.pad(size)) throw walk_error{"stopped"};
    }
    // Sockets, fifos and devices are skipped, as the original does.
  }
}

// ---- the reader: zstd → libarchive's tar reader, confined extraction ------------------------

class zstd_source {
 public:
  explicit zstd_source(const std::function<std::ptrdiff_t(char*, std::size_t)>& src) : src_(src) {
    dctx_ = ZSTD_createDCtx();
    ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, 27);  // 128 MiB: a level-1 frame needs far less
    in_.resize(ZSTD_DStreamInSize());
    out_.resize(ZSTD_DStreamOutSize());
  }
  ~zstd_source() { ZSTD_freeDCtx(dctx_); }

  // Next decompressed block; 0 at the end of the compressed stream, -1 on error.
  la_ssize_t next(const void** block) {
    for (;;) {
      if (pos_ < len_ || pending_) {
        ZSTD_inBuffer in{in_.data(), len_, pos_};
        ZSTD_outBuffer out{out_.data(), out_.size(), 0};
        const std::size_t r = ZSTD_decompressStream(dctx_, &out, &in);
        pos_ = in.pos;
        if (ZSTD_isError(r)) {
          error_ = std::string("zstd: ") + ZSTD_getErrorName(r);
          return -1;
        }
        frame_done_ = r == 0;
        pending_ = out.pos == out.size;  // the decoder may hold more output
        if (out.pos > 0) {
          *block = out_.data();
          return static_cast<la_ssize_t>(out.pos);
        }
        if (pos_ < len_) continue;
      }
      if (eof_) {
        if (!frame_done_ && started_) {
          error_ = "unexpected EOF";
          return -1;
        }
        return 0;
      }
      const std::ptrdiff_t n = src_(in_.data(), in_.size());
      if (n < 0) {
        error_ = "read archive stream failed";
        return -1;
      }
      if (n == 0) {
        eof_ = true;
        len_ = pos_ = 0;
        continue;
      }
      started_ = true;
      len_ = static_cast<std::size_t>(n);
      pos_ = 0;
    }
  }

  // After the tar end: the rest of the stream must decode cleanly to its end.
  bool drain() {
    const void* b = nullptr;
    la_ssize_t n;
    while ((n = next(&b)) > 0) {
    }
    return n == 0;
  }
  const std::string& error() const { return error_; }

 private:
  const std::function<std::ptrdiff_t(char*, std::size_t)>& src_;
  ZSTD_DCtx* dctx_ = nullptr;
  std::vector<char> in_, out_;
  std::size_t len_ = 0, pos_ = 0;
  bool eof_ = false, frame_done_ = false, pending_ = false, started_ = false;
  std::string error_;
};

la_ssize_t on_read(struct archive*, void* client, const void** block) {
  return static_cast<zstd_source*>(client)->next(block);
}

struct reader_deleter {
  void operator()(struct archive* a) const { archive_read_free(a); }
};

std::string normalized_entry(const std::string& raw, bool is_dir) {
  std::string name = raw;
  if (is_dir && !name.empty() && name.back() == '/') name.pop_back();
  if (name.empty() || name.find('\\') != std::string::npos || name[0] == '/')
    throw walk_error{"invalid Home Snapshot entry path " + go_quote(raw)};
  const std::string c = clean(name);
  if (c == "." || c == ".." || c.rfind("../", 0) == 0 || c != name)
    throw walk_error{"invalid Home Snapshot entry path " + go_quote(raw)};
  return c;
}

}  // namespace

std::string write_agent_home(const std::string& home, const std::set<std::string>& excludes,
                             const std::function<bool(std::string_view)>& sink) {
  tar_zstd_out out(sink);
  std::vector<char> buf(1 << 20);
  try {
    walk(out, home, "", excludes, buf);
  } catch (const walk_error& e) {
    return "pack HOME: " + e.message;
  }
  if (!out.finish()) return "pack HOME: stopped";
  return "";
}

std::string extract_agent_home(const std::string& home,
                               const std::function<std::ptrdiff_t(char*, std::size_t)>& source) {
  zstd_source z(source);
  std::unique_ptr<struct archive, reader_deleter> a(archive_read_new());
  archive_read_support_format_tar(a.get());
  if (archive_read_open(a.get(), &z, nullptr, on_read, nullptr) != ARCHIVE_OK)
    return z.error().empty() ? std::string("read tar archive: ") + archive_error_string(a.get())
                             : "read tar archive: " + z.error();
  const int root = ::open(home.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return "open " + home + ": " + io::text::go_errno_text(errno);
  struct dir_mode {
    std::string rel;
    mode_t mode;
  };
  std::vector<dir_mode> dirs;
  std::set<std::string> seen;
  std::string err;
  try {
    archive_entry* e = nullptr;
    for (;;) {
      const int r = archive_read_next_header(a.get(), &e);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN)
        throw walk_error{"read tar archive: " +
                         (z.error().empty() ? std::string(archive_error_string(a.get())) : z.error())};
      const std::string raw = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
      const mode_t type = archive_entry_filetype(e);
      const bool hardlink = archive_entry_hardlink(e) != nullptr;
      const std::string rel = normalized_entry(raw, type == AE_IFDIR);
      if (!seen.insert(rel).second) throw walk_error{"duplicate Home Snapshot entry " + go_quote(raw)};
      const mode_t perm = archive_entry_perm(e) & 0777;
      const auto slash = rel.rfind('/');
      const std::string parent = slash == std::string::npos ? "" : rel.substr(0, slash);
      const std::string leaf = slash == std::string::npos ? rel : rel.substr(slash + 1);
      if (hardlink) throw walk_error{"Home Snapshot hardlink entry is not allowed: " + go_quote(raw)};
      if (type == AE_IFDIR) {
        const int d = dirs_beneath(root, rel, 0700);
        if (d < 0) throw walk_error{"mkdir " + home + "/" + rel + ": " + io::text::go_errno_text(errno)};
        ::close(d);
        dirs.push_back({rel, perm});
      } else if (type == AE_IFREG) {
        const int pd = dirs_beneath(root, parent, 0700);
        if (pd < 0) throw walk_error{"mkdir " + home + "/" + parent + ": " + io::text::go_errno_text(errno)};
        const int fd = open_beneath(pd, leaf, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
        const int oe = errno;
        ::close(pd);
        if (fd < 0) throw walk_error{"open " + home + "/" + rel + ": " + io::text::go_errno_text(oe)};
        const void* block = nullptr;
        size_t size = 0;
        la_int64_t offset = 0;
        int rr;
        while ((rr = archive_read_data_block(a.get(), &block, &size, &offset)) == ARCHIVE_OK) {
          if (::pwrite(fd, block, size, offset) != static_cast<ssize_t>(size)) {
            const int we = errno;
            ::close(fd);
            throw walk_error{"write " + home + "/" + rel + ": " + io::text::go_errno_text(we)};
          }
        }
        if (rr != ARCHIVE_EOF) {
          ::close(fd);
          throw walk_error{"read tar archive: " +
                           (z.error().empty() ? std::string(archive_error_string(a.get())) : z.error())};
        }
        // A sparse tail leaves no block: the size is set explicitly.
        (void)!::ftruncate(fd, archive_entry_size(e));
        ::fchmod(fd, perm);
        ::close(fd);
      } else if (type == AE_IFLNK) {
        const int pd = dirs_beneath(root, parent, 0700);
        if (pd < 0) throw walk_error{"mkdir " + home + "/" + parent + ": " + io::text::go_errno_text(errno)};
        const char* target = archive_entry_symlink(e);
        const int rc = ::symlinkat(target ? target : "", pd, leaf.c_str());
        const int se = errno;
        ::close(pd);
        if (rc != 0) throw walk_error{"symlink " + std::string(target ? target : "") + " " + home + "/" + rel + ": " + io::text::go_errno_text(se)};
      } else {
        throw walk_error{"Home Snapshot special entry is not allowed: " + go_quote(raw)};
      }
    }
    if (!z.drain()) throw walk_error{"finish zstd archive: " + z.error()};
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
      const int d = open_beneath(root, it->rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      if (d < 0) throw walk_error{"chmod " + home + "/" + it->rel + ": " + io::text::go_errno_text(errno)};
      const int rc = ::fchmod(d, it->mode);
      const int ce = errno;
      ::close(d);
      if (rc != 0) throw walk_error{"chmod " + home + "/" + it->rel + ": " + io::text::go_errno_text(ce)};
    }
  } catch (const walk_error& w) {
    err = w.message;
  }
  ::close(root);
  return err;
}

}  // namespace shellctl::dify_agent
