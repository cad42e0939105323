#include "io/text/output_window.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <string>
#include <system_error>

#include "io/text/utf8_unit.hpp"

// Paging of output.log (docs/api.md "Long-polls", decision D6).
//
// The file is read as a sequence of "units": a complete, well-formed UTF-8 character, or a
// single invalid byte (shown as U+FFFD). Every window is a run of whole units, so the
// concatenation of all windows is the whole file decoded unit by unit, and since every unit
// is at least one byte, paging always advances.
namespace shellctl::io::text {
namespace {

constexpr std::uint64_t k_max_char = 4;   // longest UTF-8 character
constexpr std::uint64_t k_look_back = 3;  // bytes before a cursor that can share its character

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b
             ? std::numeric_limits<std::uint64_t>::max()
             : a + b;
}

[[noreturn]] void throw_errno(const char* what, const std::string& path) {
  throw std::system_error(errno, std::generic_category(), std::string(what) + " " + path);
}

// An O_RDONLY fd closed on scope exit; fd < 0 when the file does not exist.
struct file {
  int fd = -1;
  explicit file(const std::string& path) {
    do fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0 && errno != ENOENT) throw_errno("open", path);
  }
  ~file() {
    if (fd >= 0) ::close(fd);
  }
  file(const file&) = delete;
  file& operator=(const file&) = delete;

  std::uint64_t size(const std::string& path) const {
    if (fd < 0) return 0;
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw_errno("fstat", path);
    return static_cast<std::uint64_t>(st.st_size);
  }

  // Reads [pos, pos+len) into a string; shorter if the file ends (or shrank) before that.
  std::string read(std::uint64_t pos, std::uint64_t len, const std::string& path) const {
    std::string buf(static_cast<std::size_t>(len), '\0');
    std::size_t got = 0;
    while (got < buf.size()) {
      const ssize_t n =
          ::pread(fd, buf.data() + got, buf.size() - got, static_cast<off_t>(pos + got));
      if (n < 0) {
        if (errno == EINTR) continue;
        throw_errno("pread", path);
      }
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    buf.resize(got);
    return buf;
  }
};

// The window's first step: when the cursor (buf[cur]) points into the middle of a well-formed
// character that started before it, returns how many bytes remain of that character (the skip).
// Returns 0 when the cursor is at a unit boundary, including a stray continuation byte that
// belongs to no valid character (that byte is then its own invalid unit). `pending` is set when
// the character is incomplete at the end of the file and could still be completed.
std::size_t mid_char_skip(const unsigned char* buf, std::size_t cur, std::size_t n,
                          bool eof_is_final, bool& pending) {
  pending = false;
  if (cur >= n || !utf8::is_continuation(buf[cur])) return 0;
  for (std::size_t k = 1; k <= cur && k <= k_look_back; ++k) {
    const unsigned char c = buf[cur - k];
    if (utf8::is_continuation(c)) continue;
    const utf8::unit u = utf8::classify(buf + cur - k, n - (cur - k));
    if (static_cast<std::size_t>(u.len) <= k) return 0;  // that unit ends before the cursor
    if (u.valid) return static_cast<std::size_t>(u.len) - k;
    if (u.incomplete && !eof_is_final) pending = true;
    return 0;
  }
  return 0;  // only continuation bytes before the cursor: none of them is inside a character
}

struct decoded {
  std::size_t consumed = 0;
  bool held_back = false;  // stopped before an incomplete character at the end of the file
};

// Appends whole units of buf[pos, n) to `out` while they fit in `budget` bytes. When nothing
// fits, takes exactly one unit anyway (as the original does) so that a tiny limit still
// progresses. `at_eof`: buf ends where the file ends. `eof_is_final`: the file will not grow
// any more, so an incomplete character there is invalid bytes rather than a character still
// being written.
decoded decode_units(const unsigned char* buf, std::size_t pos, std::size_t n, std::uint64_t budget,
                     bool at_eof, bool eof_is_final, std::string& out) {
  decoded r;
  std::size_t i = pos;
  std::size_t run = i;  // start of the pending run of bytes to copy verbatim
  auto flush = [&] { out.append(reinterpret_cast<const char*>(buf) + run, i - run); };
  while (i < n) {
    const unsigned char c = buf[i];
    std::size_t len = 1;
    bool valid = true;
    if (c >= 0x80) {
      const utf8::unit u = utf8::classify(buf + i, n - i);
      if (u.incomplete && (!at_eof || !eof_is_final)) {
        // Not at EOF: the read ends before the character does, so it lies beyond the budget
        // anyway (we read budget + 4 bytes). At EOF: wait for the rest of it. Either way
        // nothing after it is available yet, whatever the budget says.
        r.held_back = at_eof;
        break;
      }
      valid = u.valid;
      len = valid ? static_cast<std::size_t>(u.len) : 1;
    }
    const std::size_t used = i - pos;
    if (used + len > budget && used > 0) break;  // the prefix that fits (one unit if used == 0)
    if (!valid) {
      flush();
      out.append(utf8::replacement, 3);
      run = i + 1;
    }
    i += len;
    if (used + len > budget) break;  // the one unit taken beyond an empty budget
  }
  flush();
  r.consumed = i - pos;
  return r;
}

}  // namespace

offset_beyond_end::offset_beyond_end(std::uint64_t o, std::uint64_t s)
    : std::runtime_error("offset " + std::to_string(o) + " exceeds current file size " +
                         std::to_string(s)),
      offset(o),
      size(s) {}

std::uint64_t file_size_or_zero(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return 0;
    throw_errno("stat", path);
  }
  return static_cast<std::uint64_t>(st.st_size);
}

double seconds_since_modified(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);  // mtime is wall-clock time
  const double age = static_cast<double>(now.tv_sec - st.st_mtim.tv_sec) +
                     static_cast<double>(now.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
  return age > 0 ? age : 0;
}

output_window read_output_window(const std::string& path, std::uint64_t offset, std::uint64_t limit,
                                 bool job_done) {
  const file f(path);
  const std::uint64_t size = f.size(path);
  if (offset > size) throw offset_beyond_end(offset, size);
  if (offset == size) return {std::string(), offset, false};

  // Look-back bytes decide whether the cursor is inside a character. After the cursor we need
  // budget + 3 bytes to judge the last unit that may fit, and 4 bytes past a skip of up to 3
  // for the one unit an empty budget still takes: max(limit, 3) + 4 covers both.
  const std::uint64_t back = offset < k_look_back ? offset : k_look_back;
  const std::uint64_t want = sat_add(limit < 3 ? 3 : limit, k_max_char);
  const std::uint64_t ahead = want < size - offset ? want : size - offset;
  const std::string raw = f.read(offset - back, back + ahead, path);
  const auto* buf = reinterpret_cast<const unsigned char*>(raw.data());
  const std::size_t n = raw.size();
  const std::size_t cur = static_cast<std::size_t>(back);
  if (n <= cur) return {std::string(), offset, false};  // the file shrank under us
  const bool at_eof = offset - back + n >= size;

  bool pending = false;
  const std::size_t skip = mid_char_skip(buf, cur, n, at_eof && job_done, pending);
  output_window w{std::string(), offset, false};
  if (pending) return w;  // the cursor is inside a character still being written

  const std::uint64_t budget = limit > skip ? limit - skip : 0;
  w.text.reserve(static_cast<std::size_t>(n - cur));
  const decoded d = decode_units(buf, cur + skip, n, budget, at_eof, job_done, w.text);
  w.offset = offset + skip + d.consumed;
  // Held back = everything available was returned; reporting `truncated` would make the
  // long-poll return at once, again and again, while the character is being written.
  w.truncated = w.offset < size && !d.held_back;
  return w;
}

output_window read_output_tail(const std::string& path, std::uint64_t limit) {
  const file f(path);
  const std::uint64_t size = f.size(path);
  if (size == 0) return {std::string(), 0, false};

  const std::uint64_t start = limit < size ? size - limit : 0;
  const std::uint64_t back = start < k_look_back ? start : k_look_back;
  const std::string raw = f.read(start - back, back + (size - start), path);
  const auto* buf = reinterpret_cast<const unsigned char*>(raw.data());
  const std::size_t n = raw.size();
  const std::size_t cur = static_cast<std::size_t>(back);
  if (n <= cur) return {std::string(), start, false};

  // The tail has no notion of "job done": an incomplete character at the end is dropped
  // (as the original's tail does), so `offset` stays before it.
  bool pending = false;
  const std::size_t skip = mid_char_skip(buf, cur, n, false, pending);
  output_window w{std::string(), start, false};
  if (pending) return w;
  w.text.reserve(n - cur);
  const decoded d = decode_units(buf, cur + skip, n, std::numeric_limits<std::uint64_t>::max(),
                                 true, false, w.text);
  w.offset = start + skip + d.consumed;
  return w;
}

}  // namespace shellctl::io::text
