#pragma once
// Go's time.ParseDuration: "90s", "1h30m", "1.5h", "300ms", "2us"/"2µs", "-1s", "0".
// Leading/trailing ASCII whitespace is trimmed first (as the original does for its
// duration settings).
#include <chrono>
#include <optional>
#include <string_view>

namespace shellctl::io::text {

std::optional<std::chrono::nanoseconds> parse_go_duration(std::string_view s);

}  // namespace shellctl::io::text
