#pragma once
// A job's status and mode, and the one table each that spells them: the jobs table, the
// API's JSON and the runner's argv all use these words (docs/api.md "Statuses").
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

namespace shellctl::io::store {

// In lifecycle order: the live ones first, then the terminal ones.
enum class job_status : std::uint8_t { created, starting, running, exited, terminated, failed, lost };

enum class job_mode : std::uint8_t { pty, stdio };

namespace detail {
inline constexpr std::string_view status_words[] = {"created", "starting",   "running", "exited",
                                                    "terminated", "failed", "lost"};
inline constexpr std::string_view mode_words[] = {"pty", "stdio"};
}  // namespace detail

constexpr std::string_view status_text(job_status s) {
  return detail::status_words[static_cast<std::uint8_t>(s)];
}

constexpr std::optional<job_status> parse_status(std::string_view text) {
  for (std::uint8_t i = 0; i < std::size(detail::status_words); ++i)
    if (detail::status_words[i] == text) return static_cast<job_status>(i);
  return std::nullopt;
}

constexpr bool is_terminal(job_status s) { return s >= job_status::exited; }
// Not started yet: created, or its start is under way.
constexpr bool is_before_running(job_status s) {
  return s == job_status::created || s == job_status::starting;
}

constexpr std::string_view mode_text(job_mode m) {
  return detail::mode_words[static_cast<std::uint8_t>(m)];
}

constexpr std::optional<job_mode> parse_mode(std::string_view text) {
  for (std::uint8_t i = 0; i < std::size(detail::mode_words); ++i)
    if (detail::mode_words[i] == text) return static_cast<job_mode>(i);
  return std::nullopt;
}

}  // namespace shellctl::io::store
