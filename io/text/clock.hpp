#pragma once
// UTC timestamps in the one form the contract uses: YYYY-MM-DDTHH:MM:SSZ.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace shellctl::io::text {

std::string format_utc(std::chrono::system_clock::time_point tp);
std::string utc_now();
// Parses exactly YYYY-MM-DDTHH:MM:SSZ; anything else is nullopt.
std::optional<std::chrono::system_clock::time_point> parse_utc(std::string_view s);

}  // namespace shellctl::io::text
