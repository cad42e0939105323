// The blocking calls a scheduled job actor makes itself (docs/architecture.md "Blocking"),
// each timed next to what the job actor's answer costs anyway: one CAF request/response
// between two scheduled actors, measured in the same run. Prints per call: mean, p99 and
// worst in microseconds and the mean as a multiple of that round trip. Never asserts.
//
//   build/bench/actor_calls_bench [iterations]   (as root: the cgroup rows need a cgroup2
//                                                 tree it may write; otherwise they say so)
#include <caf/all.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "io/fs/files.hpp"
#include "io/fs/job_dir.hpp"
#include "io/proc/job_processes.hpp"
#include "io/proc/terminal_wait.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/text/output_window.hpp"
#include "io/tmux/control_client.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct figures {
  double mean_us = 0, p99_us = 0, worst_us = 0;
};

figures time_it(int n, const std::function<void(int)>& call) {
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto t0 = clock_type::now();
    call(i);
    us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  figures f;
  for (double v : us) f.mean_us += v;
  f.mean_us /= static_cast<double>(n);
  f.p99_us = us[static_cast<std::size_t>(static_cast<double>(n - 1) * 0.99)];
  f.worst_us = us.back();
  return f;
}

void print_row(const char* name, const figures& f, double round_trip_us) {
  std::printf("%-52s %9.1f %9.1f %9.1f %8.2fx\n", name, f.mean_us, f.p99_us, f.worst_us,
              f.mean_us / round_trip_us);
}

// A child that sleeps on a read of the terminal it does not have: a process to look at.
pid_t sleeper() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using namespace shellctl;
  const int n = argc > 1 ? std::max(10, std::atoi(argv[1])) : 2000;

  // The yardstick: a request/response between two scheduled actors.
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto echo = sys.spawn([]() -> caf::behavior { return {[](int x) { return x; }}; });
  caf::scoped_actor self{sys};
  const auto round_trip = time_it(n, [&](int i) {
    self->request(echo, caf::infinite, i).receive([](int) {}, [](caf::error&) {});
  });

  char tmpl[] = "/tmp/shellctl-actor-calls-XXXXXX";
  const std::string root = ::mkdtemp(tmpl);
  const std::string job = root + "/jobs/bench";
  fs::create_directories(job);
  const io::fs::job_dir dir(job);
  const std::string script(1024, 'x');
  const std::string log = job + "/output.log";
  {
    std::string mib(1 << 20, 'a');
    for (std::size_t i = 79; i < mib.size(); i += 80) mib[i] = '\n';
    io::fs::write_file(log, mib, 0600);
  }
  const pid_t child = sleeper();
  std::vector<pid_t> members{child};

  std::printf("%d iterations each; microseconds; last column: mean / the round trip\n", n);
  std::printf("%-52s %9s %9s %9s %9s\n", "call", "mean", "p99", "worst", "ratio");
  print_row("CAF request/response between two actors (yardstick)", round_trip, round_trip.mean_us);

  print_row("job_dir::write_inputs (1 KiB script, env, empty log)", time_it(n, [&](int) {
              dir.write_inputs(script, "{\"A\":\"1\"}", job + "/o2.log");
            }), round_trip.mean_us);
  print_row("io::fs::write_file (an input's 1 KiB paste file)", time_it(n, [&](int i) {
              const auto p = root + "/paste-" + std::to_string(i);
              io::fs::write_file(p, script, 0600);
              ::unlink(p.c_str());
            }), round_trip.mean_us);
  print_row("file_size_or_zero (the log's size, each event)", time_it(n, [&](int) {
              (void)io::text::file_size_or_zero(log);
            }), round_trip.mean_us);
  print_row("read_output_window 16 KiB (the default limit)", time_it(n, [&](int i) {
              (void)io::text::read_output_window(log, static_cast<std::uint64_t>(i % 64) * 16384, 16384, true);
            }), round_trip.mean_us);
  print_row("read_output_window 512 KiB (the largest window)", time_it(std::max(10, n / 10), [&](int) {
              (void)io::text::read_output_window(log, 0, 512 * 1024, true);
            }), round_trip.mean_us);
  print_row("read_terminal_facts (a prompt's check, /proc)", time_it(n, [&](int) {
              (void)io::proc::read_terminal_facts(child, members);
            }), round_trip.mean_us);
  print_row("cgroup_job_processes (given the cgroup's pids)", time_it(n, [&](int) {
              (void)io::proc::cgroup_job_processes(child, members);
            }), round_trip.mean_us);
  print_row("job_processes (no cgroup: the whole /proc scanned)", time_it(std::max(10, n / 10), [&](int) {
              (void)io::proc::job_processes(child, job);
            }), round_trip.mean_us);
  print_row("kill_processes_naming (after tmux died: /proc scan)", time_it(std::max(10, n / 10), [&](int) {
              io::tmux::kill_processes_naming(job + "/.no-such-marker");
            }), round_trip.mean_us);
  print_row("move_aside (a deleted job's dir to the trash)", time_it(n, [&](int i) {
              const auto d = root + "/jobs/gone-" + std::to_string(i);
              ::mkdir(d.c_str(), 0700);
              (void)io::fs::move_aside(d, root + "/trash");
            }), round_trip.mean_us);

  // The cgroup rows: a parent of our own under the cgroup2 tree this process sits in.
  const std::string cg_parent = "/sys/fs/cgroup/shellctl-actor-calls-" + std::to_string(::getpid());
  if (::mkdir(cg_parent.c_str(), 0755) == 0) {
    io::sandbox::cgroups::job_limits none;
    std::string err;
    print_row("cgroups::create (a job's cgroup, no limits)", time_it(std::max(10, n / 4), [&](int i) {
                const auto p = cg_parent + "/job-" + std::to_string(i);
                if (!io::sandbox::cgroups::create(p, none, err)) std::fprintf(stderr, "%s\n", err.c_str());
                ::rmdir(p.c_str());
              }), round_trip.mean_us);
    const auto p = cg_parent + "/job-held";
    io::sandbox::cgroups::create(p, none, err);
    print_row("cgroups::subtree_procs (a job with a child cgroup)", time_it(n, [&](int) {
                (void)io::sandbox::cgroups::subtree_procs(p);
              }), round_trip.mean_us);
    print_row("cgroups::read_limit_events (as a job ends)", time_it(n, [&](int) {
                (void)io::sandbox::cgroups::read_limit_events(p);
              }), round_trip.mean_us);
    ::rmdir(p.c_str());
    ::rmdir(cg_parent.c_str());
  } else {
    std::printf("%-52s (no writable cgroup2 tree here: %s)\n", "cgroup rows", cg_parent.c_str());
  }

  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  fs::remove_all(root);
  return 0;
}
