#pragma once
// A process's OOM score adjustment (/proc/<pid>/oom_score_adj, -1000..1000): the kernel's
// OOM killer picks the process with the highest score, so the server, its tmux server
// and its helpers keep a low one and every job process a high one — under memory
// pressure the job is the victim, never the control plane (docs/jobs.md "Memory pressure").
// Children inherit the value; raising it needs no privilege, lowering it below what a
// privileged writer set needs CAP_SYS_RESOURCE, which no job has.
#include <sys/types.h>

#include <optional>

namespace shellctl::io::proc::oom_score {

inline constexpr int min_adj = -1000;
inline constexpr int max_adj = 1000;
// The server's own (and so its tmux server's and helpers'), where it may lower it.
inline constexpr int server_adj = -800;
// Every job process's, unless SHELLCTL_JOB_OOM_SCORE_ADJ says otherwise.
inline constexpr int default_job_adj = 800;

// The calling process's value; nullopt when /proc cannot tell.
std::optional<int> read_self();
// `pid`'s value (0: the calling process); nullopt when /proc cannot tell.
std::optional<int> read(pid_t pid);
// Sets the calling process's value; false (errno set) when refused.
bool write_self(int adj);

}  // namespace shellctl::io::proc::oom_score
