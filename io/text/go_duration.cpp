#include "io/text/go_duration.hpp"

#include <cstdint>
#include <string_view>

// A line-by-line port of Go's time.ParseDuration (src/time/format.go, Go 1.26), including
// its overflow checks and its float64 arithmetic for fractions, so that every setting the
// original accepted (or rejected) is accepted (or rejected) here with the same value.
namespace shellctl::io::text {
namespace {

constexpr std::uint64_t k_limit = std::uint64_t{1} << 63;  // |min int64|

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Go's leadingInt: consumes [0-9]*; false on overflow past 1<<63.
bool leading_int(std::string_view& s, std::uint64_t& x) {
  x = 0;
  std::size_t i = 0;
  for (; i < s.size() && is_digit(s[i]); ++i) {
    if (x > k_limit / 10) return false;
    x = x * 10 + static_cast<std::uint64_t>(s[i] - '0');
    if (x > k_limit) return false;
  }
  s.remove_prefix(i);
  return true;
}

// Go's leadingFraction: consumes [0-9]*; stops accumulating precision on overflow.
void leading_fraction(std::string_view& s, std::uint64_t& x, double& scale) {
  x = 0;
  scale = 1;
  bool overflow = false;
  std::size_t i = 0;
  for (; i < s.size() && is_digit(s[i]); ++i) {
    if (overflow) continue;
    if (x > (k_limit - 1) / 10) {
      overflow = true;
      continue;
    }
    const std::uint64_t y = x * 10 + static_cast<std::uint64_t>(s[i] - '0');
    if (y > k_limit) {
      overflow = true;
      continue;
    }
    x = y;
    scale *= 10;
  }
  s.remove_prefix(i);
}

std::uint64_t unit_ns(std::string_view u) {
  if (u == "ns") return 1;
  // "µs" is U+00B5 (micro sign), "μs" is U+03BC (Greek mu); Go accepts both.
  if (u == "us" || u == "\xC2\xB5s" || u == "\xCE\xBCs") return 1000;
  if (u == "ms") return 1000 * 1000;
  if (u == "s") return 1000 * 1000 * 1000;
  if (u == "m") return 60ull * 1000 * 1000 * 1000;
  if (u == "h") return 3600ull * 1000 * 1000 * 1000;
  return 0;
}

}  // namespace

std::optional<std::chrono::nanoseconds> parse_go_duration(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);

  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds{0};
  if (s.empty()) return std::nullopt;

  std::uint64_t d = 0;
  while (!s.empty()) {
    if (!(s[0] == '.' || is_digit(s[0]))) return std::nullopt;
    std::uint64_t v = 0, f = 0;
    double scale = 1;
    const std::size_t before_int = s.size();
    if (!leading_int(s, v)) return std::nullopt;
    const bool pre = before_int != s.size();
    bool post = false;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      const std::size_t before_frac = s.size();
      leading_fraction(s, f, scale);
      post = before_frac != s.size();
    }
    if (!pre && !post) return std::nullopt;  // ".s", "-."

    std::size_t i = 0;
    while (i < s.size() && !(s[i] == '.' || is_digit(s[i]))) ++i;
    if (i == 0) return std::nullopt;  // missing unit
    const std::uint64_t unit = unit_ns(s.substr(0, i));
    s.remove_prefix(i);
    if (unit == 0) return std::nullopt;  // unknown unit

    if (v > k_limit / unit) return std::nullopt;
    v *= unit;
    if (f > 0) {
      // Same float64 expression as Go, so fractions of hours round identically.
      v += static_cast<std::uint64_t>(static_cast<double>(f) * (static_cast<double>(unit) / scale));
      if (v > k_limit) return std::nullopt;
    }
    d += v;
    if (d > k_limit) return std::nullopt;
  }
  if (neg) {
    // d <= 1<<63 here; unsigned negation then the two's-complement cast yields -d, including
    // the min int64 case that has no positive counterpart.
    return std::chrono::nanoseconds{static_cast<std::int64_t>(std::uint64_t{0} - d)};
  }
  if (d > k_limit - 1) return std::nullopt;
  return std::chrono::nanoseconds{static_cast<std::int64_t>(d)};
}

}  // namespace shellctl::io::text
