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
                                               int cancel_fd, metrics_registry_actor metrics) {
  auto fds = std::make_shared<feeder_fds>();
  fds->pipe = pipe_fd;
  fds->cancel = cancel_fd;
  self->attach_functor([fds] { fds->close_all(); });
  auto finish = [self, fds] {
    fds->close_all();
    self->quit();
  };
  return {
      [self, fds, finish, metrics](stdin_write& w) -> caf::result<stdin_written> {
        if (fds->pipe < 0) return make_job_error(job_errc::input_unsupported, "the pipe is closed");
        const auto bytes = io::proc::stdin_pipe::write_all(fds->pipe, w.text, fds->cancel);
        const int e = errno;
        if (bytes > 0) self->send(metrics, job_input_event{bytes});
        if (bytes < w.text.size()) {
          finish();
          return make_job_error(job_errc::input_unsupported,
                                e == ECANCELED ? "the job ended before it read all of its input"
                                               : std::string("write to the job's stdin: ") + std::strerror(e));
        }
        if (w.eof) finish();  // the pipe's end: the job reads EOF once it has the rest
        return stdin_written{bytes};
      },
      [finish](shutdown_jobs&) { finish(); },
  };
}

}  // namespace shellctl::actors
