// parse_go_duration against the table of Go's own src/time/time_test.go
// (parseDurationTests / parseDurationErrorTests), plus the whitespace trimming we add.
#include "io/text/go_duration.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>

using shellctl::io::text::parse_go_duration;

namespace {

constexpr std::int64_t ns = 1;
constexpr std::int64_t us = 1000 * ns;
constexpr std::int64_t ms = 1000 * us;
constexpr std::int64_t sec = 1000 * ms;
constexpr std::int64_t min = 60 * sec;
constexpr std::int64_t hour = 60 * min;

struct good {
  const char* in;
  std::int64_t want;
};

}  // namespace

TEST_CASE("go duration: Go's valid cases") {
  const good cases[] = {
      // simple
      {"0", 0},
      {"5s", 5 * sec},
      {"30s", 30 * sec},
      {"1478s", 1478 * sec},
      // sign
      {"-5s", -5 * sec},
      {"+5s", 5 * sec},
      {"-0", 0},
      {"+0", 0},
      // decimal
      {"5.0s", 5 * sec},
      {"5.6s", 5 * sec + 600 * ms},
      {"5.s", 5 * sec},
      {".5s", 500 * ms},
      {"1.0s", 1 * sec},
      {"1.00s", 1 * sec},
      {"1.004s", 1 * sec + 4 * ms},
      {"1.0040s", 1 * sec + 4 * ms},
      {"100.00100s", 100 * sec + 1 * ms},
      // different units
      {"10ns", 10 * ns},
      {"11us", 11 * us},
      {"12\u00b5s", 12 * us},  // U+00B5 micro sign
      {"12\u03bcs", 12 * us},  // U+03BC Greek mu
      {"13ms", 13 * ms},
      {"14s", 14 * sec},
      {"15m", 15 * min},
      {"16h", 16 * hour},
      // composite durations
      {"3h30m", 3 * hour + 30 * min},
      {"10.5s4m", 4 * min + 10 * sec + 500 * ms},
      {"-2m3.4s", -(2 * min + 3 * sec + 400 * ms)},
      {"1h2m3s4ms5us6ns", 1 * hour + 2 * min + 3 * sec + 4 * ms + 5 * us + 6 * ns},
      {"39h9m14.425s", 39 * hour + 9 * min + 14 * sec + 425 * ms},
      // large value
      {"52763797000ns", 52763797000 * ns},
      // more than 9 digits after decimal point, see https://golang.org/issue/6617
      {"0.3333333333333333333h", 20 * min},
      // 9007199254740993 = 1<<53+1 cannot be stored precisely in a float64
      {"9007199254740993ns", (std::int64_t{1} << 53) + 1},
      // largest duration that can be represented by int64 in nanoseconds
      {"9223372036854775807ns", INT64_MAX},
      {"9223372036854775.807us", INT64_MAX},
      {"9223372036s854ms775us807ns", INT64_MAX},
      {"-9223372036854775808ns", INT64_MIN},
      {"-9223372036854775.808us", INT64_MIN},
      {"-9223372036s854ms775us808ns", INT64_MIN},
      // largest negative round trip value, see https://golang.org/issue/48629
      {"-2562047h47m16.854775808s", INT64_MIN},
      // huge string; issue 15011.
      {"0.100000000000000000000h", 6 * min},
      // This value tests the first overflow check in leadingFraction.
      {"0.830103483285477580700h", 49 * min + 48 * sec + 372539827 * ns},
      // ours: surrounding ASCII whitespace is trimmed (the original trims its settings)
      {"  90s\n", 90 * sec},
      {"\t24h ", 24 * hour},
      {"1h30m", 90 * min},
      {"1.5h", 90 * min},
      {"300ms", 300 * ms},
  };
  for (const auto& c : cases) {
    CAPTURE(c.in);
    const auto got = parse_go_duration(c.in);
    REQUIRE(got.has_value());
    CHECK(got->count() == c.want);
  }
}

TEST_CASE("go duration: Go's invalid cases") {
  const char* bad[] = {
      // invalid
      "", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "\x85\x85",
      "\xff"
      "ff",
      "hello \xff"
      "ff world",
      "\uFFFD", "\uFFFD hello \uFFFD world",
      // overflow
      "9223372036854775810ns", "9223372036854775808ns", "-9223372036854775809ns",
      "9223372036854776us", "3000000h", "9223372036854775.808us", "9223372036854ms775us808ns",
      // ours
      "   ", "1 s", "1h 30m", "++1s", "1S", "1H", "1sec", "1.2.3s", "1e3s", "s1",
      "\xc2\xb5s",  // unit without a number
      "1\xc2s",     // broken UTF-8 unit
  };
  for (const char* in : bad) {
    CAPTURE(in);
    CHECK_FALSE(parse_go_duration(in).has_value());
  }
}
