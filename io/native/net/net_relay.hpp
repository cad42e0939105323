#pragma once
// One proxied connection's bytes (docs/native-scopes.md "The network broker"): copies both ways
// between two connected sockets — each direction on its own, so that neither waits for the
// other — until both sides are done, the deadline passes (the 60 s cap), the stop descriptor
// becomes readable or hangs up (the scope is being destroyed), or the budget is spent. Before
// each read(2) the `reserve` callback is asked for up to 64 KiB and the read takes at most what
// it granted (the broker charges the scope's byte budget there, FULL, before the bytes exist; a
// short read may overcharge, nothing is refunded). A grant of 0 ends the relay and both sides
// are closed by the caller. Blocking: for a thread or a detached actor of its own.
#include <chrono>
#include <cstddef>
#include <functional>

namespace shellctl::io::native {

inline constexpr std::size_t kRelayChunk = 64 * 1024;

enum class relay_end { closed, deadline, stopped, exhausted, failed };

struct relay_bounds {
  std::chrono::steady_clock::time_point until;
  int stop_fd = -1;  // -1: none
};

// `reserve(max)` → bytes granted (≤ max). Null: unmetered.
relay_end relay(int a, int b, const relay_bounds& bounds,
                const std::function<std::size_t(std::size_t)>& reserve);

// Writes all of `data` to `fd` within the bounds (poll for POLLOUT). False when it could not.
bool write_all_bounded(int fd, const char* data, std::size_t n, const relay_bounds& bounds);

// Milliseconds left before `until` (0 once passed), capped at INT_MAX.
int ms_left(std::chrono::steady_clock::time_point until);

}  // namespace shellctl::io::native
