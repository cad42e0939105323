// io/sandbox/cgroups against the real kernel (docs/jobs.md "Containment"): a job cgroup is made,
// entered through a descriptor opened beforehand, holds a process that left its session,
// and is ended (cgroup.kill, populated 0 by notification, rmdir). Needs root and a
// cgroup2 mount (CI's machine has both); elsewhere these cases fail, they do not skip.
#include <doctest/doctest.h>

#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "io/sandbox/cgroups.hpp"

namespace cg = shellctl::io::sandbox::cgroups;

namespace {

// A root of this test's own under the detected one (the process's own cgroup).
struct test_root {
  std::string path;
  test_root() {
    cg::root_choice r;
    std::string err;
    REQUIRE(cg::choose_root("", "/tmp/shellctl-cgroups-test-" + std::to_string(::getpid()), r, err));
    REQUIRE_MESSAGE(!r.path.empty(), r.why_none);
    CHECK(r.detected);
    path = r.path;
  }
  ~test_root() { ::rmdir(path.c_str()); }
};

// Forks a child that enters `job` through a descriptor opened here, then forks a
// grandchild that leaves its session (setsid) and sleeps; the child sleeps too.
pid_t spawn_inside(const std::string& job) {
  std::string err;
  const int fd = cg::open_procs(job, err);
  REQUIRE_MESSAGE(fd >= 0, err);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!cg::enter(fd)) ::_exit(3);
    if (::fork() == 0) {
      ::setsid();
      ::execl("/bin/sleep", "sleep", "1000", nullptr);
      ::_exit(4);
    }
    ::execl("/bin/sleep", "sleep", "1000", nullptr);
    ::_exit(4);
  }
  ::close(fd);
  return pid;
}

}  // namespace

TEST_CASE("a job cgroup holds every process its first one starts, and end() kills and removes it") {
  test_root root;
  const std::string job = cg::job_path(root.path, "00112233aabbccdd");
  CHECK(job == root.path + "/job-00112233aabbccdd");
  std::string err;
  REQUIRE_MESSAGE(cg::create(job, {}, err), err);
  REQUIRE(cg::create(job, {}, err));  // a retried start finds it there
  CHECK(cg::exists(job));
  CHECK(cg::populated(job) == false);
  CHECK(cg::job_ids(root.path) == std::vector<std::string>{"00112233aabbccdd"});

  const pid_t child = spawn_inside(job);
  auto members = [&] { return cg::procs(job); };
  for (int i = 0; i < 2000 && members().size() < 2; ++i) ::usleep(1000);
  REQUIRE(members().size() == 2);  // the child and its setsid grandchild
  CHECK(std::find(members().begin(), members().end(), child) != members().end());
  CHECK(cg::populated(job) == true);

  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE_MESSAGE(cg::end(job, std::chrono::seconds(5), err), err);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  CHECK_FALSE(cg::exists(job));
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(cg::job_ids(root.path).empty());
  // Ending a cgroup that is gone is a no-op.
  CHECK(cg::end(job, std::chrono::seconds(1), err));
}

TEST_CASE("end() removes cgroups the job made below its own") {
  test_root root;
  const std::string job = cg::job_path(root.path, "feedfacefeedface");
  std::string err;
  REQUIRE(cg::create(job, {}, err));
  REQUIRE(::mkdir((job + "/inner").c_str(), 0755) == 0);
  const pid_t child = spawn_inside(job + "/inner");
  for (int i = 0; i < 2000 && cg::procs(job + "/inner").size() < 2; ++i) ::usleep(1000);
  CHECK(cg::populated(job) == true);
  REQUIRE_MESSAGE(cg::end(job, std::chrono::seconds(5), err), err);
  CHECK_FALSE(cg::exists(job));
  int status = 0;
  CHECK(::waitpid(child, &status, 0) == child);
}

TEST_CASE("roots: none, a given root that is not cgroup2, limits without their controllers") {
  cg::root_choice r;
  std::string err;
  REQUIRE(cg::choose_root("none", "/s", r, err));
  CHECK(r.path.empty());
  CHECK_FALSE(cg::choose_root("/tmp", "/s", r, err));
  CHECK(err.find("is not a cgroup v2 directory") != std::string::npos);
  CHECK_FALSE(cg::choose_root("relative", "/s", r, err));
  // Without containment, limits cannot be had at all.
  cg::job_limits limits;
  CHECK(cg::prepare_limits("", limits, err));  // none asked for: fine
  limits.pids_max = "10";
  CHECK_FALSE(cg::prepare_limits("", limits, err));
  test_root root;
  // This host's cgroup2 has no pids/memory/cpu controller (bound to v1): refused, named.
  std::string available;
  {
    FILE* f = std::fopen((root.path + "/cgroup.controllers").c_str(), "r");
    REQUIRE(f != nullptr);
    char buf[256] = {};
    available = std::fgets(buf, sizeof buf, f) ? buf : "";
    std::fclose(f);
  }
  if (available.find("pids") == std::string::npos) {
    CHECK_FALSE(cg::prepare_limits(root.path, limits, err));
    CHECK(err.find("controller(s) pids") != std::string::npos);
  } else {
    CHECK_MESSAGE(cg::prepare_limits(root.path, limits, err), err);
  }
}

TEST_CASE("limit syntax") {
  CHECK(cg::valid_memory_max("max"));
  CHECK(cg::valid_memory_max("1073741824"));
  CHECK(cg::valid_memory_max("512M"));
  CHECK_FALSE(cg::valid_memory_max(""));
  CHECK_FALSE(cg::valid_memory_max("M"));
  CHECK_FALSE(cg::valid_memory_max("1.5G"));
  CHECK(cg::valid_pids_max("1"));
  CHECK_FALSE(cg::valid_pids_max("0"));
  CHECK_FALSE(cg::valid_pids_max("-1"));
  CHECK(cg::valid_cpu_max("max"));
  CHECK(cg::valid_cpu_max("max 100000"));
  CHECK(cg::valid_cpu_max("50000 100000"));
  CHECK_FALSE(cg::valid_cpu_max("50000 "));
  CHECK_FALSE(cg::valid_cpu_max("0 100000"));
  CHECK_FALSE(cg::valid_cpu_max("1 2 3"));
}

TEST_CASE("a run's limits: controllers, kernel bounds and the server's ceilings") {
  const cg::job_controllers all{true, true, true}, none{};
  cg::run_limits asked;
  asked.memory_bytes = 64ULL << 20;
  asked.pids = 16;
  asked.cpu = 0.5;
  CHECK(cg::check_run_limits(asked, all, {}) == "");
  CHECK(cg::check_run_limits({}, none, {}) == "");  // nothing asked: nothing needed
  const auto missing = cg::check_run_limits(asked, none, {});
  CHECK(missing.find("memory, pids, cpu") != std::string::npos);
  cg::run_limits only_pids;
  only_pids.pids = 4;
  CHECK(cg::check_run_limits(only_pids, cg::job_controllers{true, false, true}, {}).find("controller(s) pids,") !=
        std::string::npos);

  cg::run_limits tiny;
  tiny.memory_bytes = 4096;
  CHECK(cg::check_run_limits(tiny, all, {}).find("at least 1048576") != std::string::npos);
  cg::run_limits slow;
  slow.cpu = 0.001;  // a quota under the kernel's 1000 us
  CHECK(cg::check_run_limits(slow, all, {}).find("limits.cpu") != std::string::npos);

  const cg::job_limits ceilings{"128M", "64", "100000 100000"};
  CHECK(cg::check_run_limits(asked, all, ceilings) == "");
  cg::run_limits big = asked;
  big.memory_bytes = 129ULL << 20;
  CHECK(cg::check_run_limits(big, all, ceilings).find("SHELLCTL_JOB_MEMORY_MAX 128M") != std::string::npos);
  big = asked;
  big.pids = 65;
  CHECK(cg::check_run_limits(big, all, ceilings).find("SHELLCTL_JOB_PIDS_MAX") != std::string::npos);
  big = asked;
  big.cpu = 1.01;
  CHECK(cg::check_run_limits(big, all, ceilings).find("SHELLCTL_JOB_CPU_MAX") != std::string::npos);
  big.cpu = 1.0;  // equal is within
  CHECK(cg::check_run_limits(big, all, ceilings) == "");
}

TEST_CASE("the job cgroup's values: the run's own, else the server's") {
  const cg::job_limits server{"128M", "64", ""};
  cg::run_limits asked;
  CHECK(cg::narrowed(server, asked).memory_max == "128M");
  asked.memory_bytes = 1048576;
  asked.cpu = 0.25;
  const auto v = cg::narrowed(server, asked);
  CHECK(v.memory_max == "1048576");
  CHECK(v.pids_max == "64");
  CHECK(v.cpu_max == "25000 100000");
  CHECK(cg::memory_bytes_of("2G") == (2ULL << 30));
  CHECK(cg::memory_bytes_of("max") == std::nullopt);
  CHECK(cg::pids_of("64") == 64u);
  CHECK(cg::cpus_of("50000 100000") == doctest::Approx(0.5));
  CHECK(cg::cpus_of("200000") == doctest::Approx(2.0));
  CHECK(cg::cpus_of("max 100000") == std::nullopt);
}

namespace {
// True while `pid` exists and is not a zombie (a zombie has exited: only its entry is left).
bool running(pid_t pid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return false;
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const std::string stat(buf, n);
  const auto close_paren = stat.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < stat.size() &&
         stat[close_paren + 2] != 'Z' && stat[close_paren + 2] != 'X';
}
}  // namespace

TEST_CASE("end() answers only once a PID namespace's init has reaped its namespace") {
  // The kernel counts a process out of its cgroup early in its exit; an init then waits
  // for its namespace to die. `populated 0` alone would let end() return while the init
  // still shows in /proc (seen once under load in CI's stress pass).
  test_root root;
  const std::string job = cg::job_path(root.path, "0badc0de0badc0de");
  std::string err;
  REQUIRE(cg::create(job, {}, err));
  const int fd = cg::open_procs(job, err);
  REQUIRE_MESSAGE(fd >= 0, err);
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (!cg::enter(fd) || ::unshare(CLONE_NEWPID) != 0) ::_exit(3);
    const pid_t init = ::fork();  // pid 1 of the new namespace
    if (init == 0) {
      for (int i = 0; i < 20; ++i)
        if (::fork() == 0) {
          ::execl("/bin/sleep", "sleep", "1000", nullptr);
          ::_exit(4);
        }
      for (;;) ::pause();
    }
    (void)!::write(pipe_fds[1], &init, sizeof init);
    for (;;) ::pause();
  }
  ::close(fd);
  ::close(pipe_fds[1]);
  pid_t init = 0;
  REQUIRE(::read(pipe_fds[0], &init, sizeof init) == static_cast<ssize_t>(sizeof init));
  ::close(pipe_fds[0]);
  for (int i = 0; i < 2000 && cg::procs(job).size() < 22; ++i) ::usleep(1000);
  REQUIRE(cg::procs(job).size() == 22);
  const auto members = cg::procs(job);

  REQUIRE_MESSAGE(cg::end(job, std::chrono::seconds(5), err), err);
  CHECK_FALSE(running(init));
  for (pid_t pid : members) CHECK_MESSAGE(!running(pid), pid);
  int status = 0;
  CHECK(::waitpid(child, &status, 0) == child);
}
