#pragma once
// A stdio job's stdin when its run asked for `"stdin": "pipe"`: a FIFO in the job's
// directory (the state dir, which no job can reach). The server makes it and holds it
// open read-write before the start, so the runner's open never blocks and the job never
// reads an early end; the server writes each /input's text into it, and closing its end
// is the job's EOF. The runner opens it as the job's stdin instead of /dev/null.
#include <cstddef>
#include <string>
#include <string_view>

namespace shellctl::io::proc::stdin_pipe {

inline constexpr const char* file_name = "stdin.pipe";

// mkfifo (0600) at `path`, then an O_RDWR|O_NONBLOCK|O_CLOEXEC descriptor of it with a
// 1 MiB buffer where the kernel grants it. -1 with errno set.
int create(const std::string& path);

// The runner's end: O_RDONLY, blocking reads (the job's stdin). -1 with errno set.
int open_for_job(const std::string& path);

// Writes all of `bytes` to `fd` (non-blocking), waiting in poll() for room as the job
// reads; stops early when `cancel_fd` turns readable (the job ended, or its actor went).
// Returns how many bytes were written; short means cancelled or an error (errno).
std::size_t write_all(int fd, std::string_view bytes, int cancel_fd);

}  // namespace shellctl::io::proc::stdin_pipe
