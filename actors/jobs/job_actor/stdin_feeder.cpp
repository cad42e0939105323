#include "actors/jobs/job_actor/stdin_feeder.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "io/proc/stdin_pipe.hpp"

namespace shellctl::actors {
namespace {

// The pipe's end and the cancel eventfd: closed as soon as the feeder is done with them
// (the job reads EOF only once no writer is left), and at the latest when it terminates.
struct feeder_fds {
  int pipe = -1;
  int cancel = -1;
  void close_all() {
    for (int* fd : {&pipe, &cancel})
      if (*fd >= 0) {
        ::close(*fd);
        *fd = -1;
      }
  }
  ~feeder_fds() { close_all(); }
};

}  // namespace

stdin_feeder_actor::behavior_type stdin_feeder(stdin_feeder_actor::pointer self, int pipe_fd,
                                               int cancel_fd) {
  auto fds = std::make_shared<feeder_fds>();
  fds->pipe = pipe_fd;
  fds->cancel = cancel_fd;
  self->attach_functor([fds] { fds->close_all(); });
  auto finish = [self, fds] {
    fds->close_all();
    self->quit();
  };
  return {
      [fds, finish](stdin_write& w) -> stdin_written {
        stdin_written out;
        if (fds->pipe < 0) {
          out.ok = false;
          out.error = "the pipe is closed";
          return out;
        }
        out.bytes = io::proc::stdin_pipe::write_all(fds->pipe, w.text, fds->cancel);
        if (out.bytes < w.text.size()) {
          out.ok = false;
          out.error = errno == ECANCELED ? "the job ended before it read all of its input"
                                         : std::string("write to the job's stdin: ") + std::strerror(errno);
          finish();
          return out;
        }
        if (w.eof) finish();  // the pipe's end: the job reads EOF once it has the rest
        return out;
      },
      [finish](shutdown_jobs&) { finish(); },
  };
}

}  // namespace shellctl::actors
