#include "io/native/worker/output_budget.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/fs/files.hpp"

namespace shellctl::io::native {

output_budget::~output_budget() {
  if (to_ >= 0) ::close(to_);
  if (pid_ > 0)
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

bool output_budget::start(const std::string& helper, const std::string& db, std::string& err) {
  if (helper.empty() || db.empty()) {
    err = "no budget helper or catalog";
    return false;
  }
  // A socket pair, not pipes: a helper that died is a send error (MSG_NOSIGNAL), never a
  // SIGPIPE that would kill the copier.
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    err = std::string("socketpair: ") + std::strerror(errno);
    return false;
  }
  const char* argv[] = {helper.c_str(), "native-budget", "--db", db.c_str(), nullptr};
  const char* envp[] = {"PATH=/usr/bin:/bin", nullptr};
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::dup2(pair[1], STDIN_FILENO) < 0 || ::dup2(pair[1], STDOUT_FILENO) < 0) ::_exit(127);
    ::execve(helper.c_str(), const_cast<char* const*>(argv), const_cast<char* const*>(envp));
    ::_exit(127);
  }
  ::close(pair[1]);
  if (pid < 0) {
    err = std::string("fork: ") + std::strerror(errno);
    ::close(pair[0]);
    return false;
  }
  pid_ = pid;
  to_ = pair[0];  // both ways: the helper reads and answers on its end
  return true;
}

std::uint64_t output_budget::reserve(std::uint64_t n) {
  if (n == 0 || to_ < 0) return 0;
  const std::string ask = "reserve " + std::to_string(n) + "\n";
  if (::send(to_, ask.data(), ask.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(ask.size()))
    return 0;
  std::string line;
  char c = 0;
  while (line.size() < 32) {
    const ssize_t r = ::read(to_, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    if (c == '\n') break;
    line.push_back(c);
  }
  std::uint64_t granted = 0;
  for (char d : line) {
    if (d < '0' || d > '9') return 0;
    granted = granted * 10 + static_cast<std::uint64_t>(d - '0');
  }
  return granted > n ? 0 : granted;  // never more than asked: a confused helper grants nothing
}

bool write_within_budget(output_budget& budget, int fd, const char* data, std::size_t size,
                         const std::string& overflow_file, bool& overflowed, bool& write_failed) {
  if (overflowed) return false;
  const auto allowed = static_cast<std::size_t>(budget.reserve(size));
  if (allowed > 0 && !fs::write_all(fd, data, allowed)) write_failed = true;
  if (allowed == size) return true;
  overflowed = true;
  const int marker = ::open(overflow_file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (marker >= 0) ::close(marker);
  return false;
}

}  // namespace shellctl::io::native
