#pragma once
// Frames on a Unix stream socket, the one way the server and its confined Home helper talk
// (io/home/wire.hpp holds what a frame carries): a 4-byte little-endian length, then that
// many bytes; at most one descriptor travels with a frame (SCM_RIGHTS, attached to its
// first byte). Both calls work on blocking and non-blocking sockets alike (they poll) and
// end by their deadline, so a peer that stops answering never holds the caller.
//
// The file worker's doorbell (actors/files/home_files.cpp) is a frame too: an empty one whose
// descriptor is the worker's end of a new channel.
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace shellctl::io::home {

using deadline = std::chrono::steady_clock::time_point;
inline deadline no_deadline() { return deadline::max(); }

constexpr std::size_t max_frame = 64u << 20;

// False with errno: EPIPE/ECONNRESET (peer gone), ETIMEDOUT, EMSGSIZE, ...
bool send_frame(int sock, std::string_view payload, int fd = -1, deadline until = no_deadline());

enum class recv_result {
  frame,     // `payload` holds it; `*fd` the descriptor that came with it, or -1
  closed,    // the peer closed the socket before a frame began
  timeout,   // the deadline passed
  failed,    // an error, a frame cut short or longer than max_frame (errno says which)
};
// A descriptor that came with the frame is returned in `*fd` (close-on-exec) when `fd` is
// not null, closed otherwise; any more than one are closed.
recv_result recv_frame(int sock, std::string& payload, int* fd, deadline until = no_deadline());

}  // namespace shellctl::io::home
