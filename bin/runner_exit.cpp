// shellctl-runner-exit: records a job's exit in SQLite from the PTY pipe finalizer
// (docs/layout.md "The binaries"; the helper's variant of the exit recording, which overwrites
// ended_at). Flags use Go's flag syntax.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <string_view>

#include "io/store/jobs_db.hpp"
#include "io/text/go_flags.hpp"

namespace {

constexpr const char* kProg = "shellctl-runner-exit";

void usage() {
  std::fprintf(stderr,
               "Usage of %s:\n"
               "  -ended-at string\n    \tRFC3339 UTC end time\n"
               "  -exit-code int\n    \tthe job's exit code\n"
               "  -job-id string\n    \tjob id\n"
               "  -sqlite-busy-timeout-ms int\n    \tSQLite busy timeout (default 5000)\n"
               "  -state-dir string\n    \tshellctl state directory\n"
               "  -version\n    \tprint the version\n"
               "\nRun by a PTY job's pipe finalizer: records the runner's exit in "
               "<state-dir>/shellctl.db.\nEnvironment: none.\n",
               kProg);
}

// strconv.ParseInt(s, 0, 64): optional sign, then a 0x/0o/0b or leading-0 (octal) prefix;
// an underscore must follow a digit or the prefix and be followed by a digit.
bool parse_go_int(std::string_view s, std::int64_t& out) {
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  unsigned base = 10;
  bool after_digit = false;  // the previous character was a digit or the prefix
  if (s[0] == '0' && s.size() >= 2) {
    const char p = static_cast<char>(s[1] | 0x20);
    const bool letter = s.size() >= 3 && (p == 'x' || p == 'o' || p == 'b');
    base = !letter ? 8 : p == 'x' ? 16 : p == 'o' ? 8 : 2;
    s.remove_prefix(letter ? 2 : 1);
    after_digit = true;
  }
  const std::uint64_t limit = neg ? std::uint64_t{1} << 63 : static_cast<std::uint64_t>(INT64_MAX);
  std::uint64_t v = 0;
  bool trailing_underscore = false;
  for (const char c : s) {
    if (c == '_') {
      if (!after_digit) return false;
      after_digit = false;
      trailing_underscore = true;
      continue;
    }
    unsigned d;
    const char lower = static_cast<char>(c | 0x20);
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if (lower >= 'a' && lower <= 'z') {
      d = static_cast<unsigned>(lower - 'a' + 10);
    } else {
      return false;
    }
    if (d >= base) return false;
    if (v > (limit - d) / base) return false;
    v = v * base + d;
    after_digit = true;
    trailing_underscore = false;
  }
  if (trailing_underscore) return false;
  out = neg ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string state_dir, job_id, ended_at;
  std::int64_t exit_code = 0;
  std::int64_t busy_ms = 5000;

  shellctl::io::text::go_flag_reader flags(argc, argv, 1);
  shellctl::io::text::go_flag_reader::flag f;
  for (;;) {
    const auto step = flags.next(f);
    if (step == shellctl::io::text::go_flag_reader::step::end) break;
    if (step == shellctl::io::text::go_flag_reader::step::bad_syntax) {
      std::fprintf(stderr, "bad flag syntax: %s\n", f.raw.c_str());
      usage();
      return 2;
    }
    const std::string& name = f.name;
    if (name == "h" || name == "help") {
      usage();
      return 0;
    }
    if (name == "version") {
      std::printf("%s %s\n", kProg, SHELLCTL_VERSION);
      return 0;
    }
    const bool known = name == "state-dir" || name == "job-id" || name == "ended-at" ||
                       name == "exit-code" || name == "sqlite-busy-timeout-ms";
    if (!known) {
      std::fprintf(stderr, "flag provided but not defined: -%s\n", name.c_str());
      usage();
      return 2;
    }
    if (!flags.take_value(f)) {
      std::fprintf(stderr, "flag needs an argument: -%s\n", name.c_str());
      usage();
      return 2;
    }
    const std::string& value = *f.value;
    if (name == "state-dir") {
      state_dir = value;
    } else if (name == "job-id") {
      job_id = value;
    } else if (name == "ended-at") {
      ended_at = value;
    } else {
      std::int64_t n = 0;
      if (!parse_go_int(value, n)) {
        std::fprintf(stderr, "invalid value \"%s\" for flag -%s: parse error\n", value.c_str(),
                     name.c_str());
        usage();
        return 2;
      }
      (name == "exit-code" ? exit_code : busy_ms) = n;
    }
  }

  if (state_dir.empty() || job_id.empty() || ended_at.empty()) {
    std::fprintf(stderr, "%s: --state-dir, --job-id, and --ended-at are required\n", kProg);
    return 1;
  }
  if (busy_ms < 0) busy_ms = 0;
  if (busy_ms > std::numeric_limits<int>::max()) busy_ms = std::numeric_limits<int>::max();

  using shellctl::io::store::jobs_db;
  using shellctl::io::store::record_result;
  try {
    const std::string path = state_dir + (state_dir.back() == '/' ? "" : "/") + "shellctl.db";
    jobs_db db(path, static_cast<int>(busy_ms), jobs_db::open_mode::existing);
    if (db.record_exit_helper(job_id, exit_code, ended_at) == record_result::not_found) {
      std::fprintf(stderr, "%s: unknown job id: %s\n", kProg, job_id.c_str());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProg, e.what());
    return 1;
  }
  return 0;
}
