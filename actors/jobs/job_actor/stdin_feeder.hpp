#pragma once
// stdin_feeder: a piped stdin's writer (io/proc/stdin_pipe.hpp), one per stdio job whose
// run asked for `"stdin": "pipe"`, spawned detached by its job_actor: a write waits in
// poll() until the job has read enough, which may take as long as the job likes, so it
// blocks this actor's own thread, never a scheduler thread. Texts are written whole and
// in mailbox order (two /input requests never interleave); `eof` closes the pipe after
// its text. The job_actor cancels a waiting write through `cancel_fd` (an eventfd) when
// the job ends; the feeder owns both descriptors and closes them when it goes. It tells
// `metrics` of every byte the job took, also of a write the job's end cut short.
#include "actors/protocol/interfaces.hpp"

namespace shellctl::actors {

stdin_feeder_actor::behavior_type stdin_feeder(stdin_feeder_actor::pointer self, int pipe_fd,
                                               int cancel_fd, metrics_registry_actor metrics);

}  // namespace shellctl::actors
