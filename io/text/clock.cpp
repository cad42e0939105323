#include "io/text/clock.hpp"

#include <cstdio>
#include <ctime>

namespace shellctl::io::text {

std::string format_utc(std::chrono::system_clock::time_point tp) {
  std::time_t t = std::chrono::system_clock::to_time_t(tp);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];  // room for any int, so -Wformat-truncation has nothing to say
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string utc_now() { return format_utc(std::chrono::system_clock::now()); }

std::optional<std::chrono::system_clock::time_point> parse_utc(std::string_view s) {
  // Exactly "YYYY-MM-DDTHH:MM:SSZ" (20 bytes).
  if (s.size() != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':' || s[19] != 'Z')
    return std::nullopt;
  auto num = [&](size_t pos, size_t len, int& out) {
    out = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      out = out * 10 + (s[i] - '0');
    }
    return true;
  };
  std::tm tm{};
  int year, mon, day, hour, min, sec;
  if (!num(0, 4, year) || !num(5, 2, mon) || !num(8, 2, day) || !num(11, 2, hour) ||
      !num(14, 2, min) || !num(17, 2, sec))
    return std::nullopt;
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
    return std::nullopt;
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace shellctl::io::text
