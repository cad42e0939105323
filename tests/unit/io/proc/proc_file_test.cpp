// A /proc file whose process died between the open and the read (io/proc/proc_file.hpp):
// the read fails with ESRCH, and the answer is "no text", never an exception. A job's
// actor reads its processes' stat files while they exit; an exception there ended it.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "io/proc/proc_file.hpp"

namespace proc = shellctl::io::proc;

namespace {

pid_t sleeping_child() {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

void reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace

TEST_CASE("a live process's stat file is read whole") {
  const pid_t pid = sleeping_child();
  const auto text = proc::read_proc_file(pid, "stat");
  reap(pid);
  REQUIRE(text.has_value());
  CHECK(text->rfind(std::to_string(pid) + " (", 0) == 0);
  CHECK(text->back() == '\n');
}

TEST_CASE("a process reaped after the open reads as no text, not an exception") {
  const pid_t pid = sleeping_child();
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  // The same situation through the standard streams: what the old readers did throws.
  std::ifstream stream(path);
  REQUIRE(stream.is_open());
  reap(pid);
  CHECK_FALSE(proc::read_proc_fd(fd).has_value());
  ::close(fd);
  CHECK_THROWS(std::string((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>()));
}

TEST_CASE("a process that is gone has no file") {
  const pid_t pid = sleeping_child();
  reap(pid);
  CHECK_FALSE(proc::read_proc_file(pid, "stat").has_value());
}
