// shellctl-sanitize-pty: stdin -> stdout terminal-output filter run by `tmux pipe-pane`
// (docs/layout.md "The binaries", docs/jobs.md "The output pipe").
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "io/fs/files.hpp"
#include "io/native/worker/output_budget.hpp"
#include "io/pty/sanitizer.hpp"
#include "io/text/go_flags.hpp"

namespace {

constexpr const char* kProg = "shellctl-sanitize-pty";

void usage(FILE* f) {
  std::fprintf(f,
               "Usage of %s:\n"
               "  -end-file string\n    \tfile created once the end marker has been read\n"
               "  -end-marker string\n    \tnonce of the runner's end marker (ESC ] shellctl-end;NONCE BEL)\n"
               "  -drained-file string\n    \tfile created after a clean EOF, before exiting 0\n"
               "  -failed-file string\n    \tfile created before exiting non-zero\n"
               "  -ready-file string\n    \tfile created before reading stdin\n"
               "  -budget-helper string\n    \ta native scope's job: shellctl, run as `native-budget`\n"
               "  -budget-db string\n    \tthe scope's catalog, where output is reserved before it is written\n"
               "  -overflow-file string\n    \tfile created when the output budget is spent\n"
               "  -pending-file string\n    \tfile holding the unfinished last line while stdin is quiet\n"
               "  -version\n    \tprint the version\n"
               "\nRun by tmux pipe-pane for every PTY job of shellctl serve: turns terminal output\n"
               "(stdin) into plain UTF-8 lines (stdout). Exit 0 at EOF, 1 on an I/O error.\n"
               "Environment: none.\n",
               kProg);
}

int fail(const std::string& what, int err) {
  std::fprintf(stderr, "%s: %s: %s\n", kProg, what.c_str(), std::strerror(err));
  return 1;
}

void touch(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
}

// stdin to stdout until EOF: 0, or 1 after an I/O error (reported on stderr).
// The unfinished last line, kept in a file while the pane is quiet (a prompt waiting for
// its answer), for the server to show past the log (io/fs/job_dir.hpp). Written only when a
// read would block, so a job that prints without pause pays nothing; emptied before any
// completed line goes to the log, so a reader never sees a line twice (the log's new line
// and the old pending one), at worst for a moment neither.
class pending_file {
 public:
  explicit pending_file(const std::string& path) {
    if (!path.empty()) fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  }
  ~pending_file() {
    if (fd_ >= 0) ::close(fd_);
  }
  pending_file(const pending_file&) = delete;
  pending_file& operator=(const pending_file&) = delete;
  // Before completed lines are written.
  void clear() {
    if (fd_ < 0 || shown_.empty()) return;
    if (::ftruncate(fd_, 0) == 0) shown_.clear();
  }
  // When stdin is quiet.
  void show(const std::string& line) {
    if (fd_ < 0 || line == shown_) return;
    if (!shown_.empty() && ::ftruncate(fd_, 0) != 0) return;
    shown_.clear();
    if (!line.empty() && ::pwrite(fd_, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size()))
      shown_ = line;
  }

 private:
  int fd_ = -1;
  std::string shown_;
};

int sanitize(const std::string& end_file, const std::string& end_nonce,
             shellctl::io::native::output_budget& budget, const std::string& overflow_file,
             pending_file& pending) {
  bool overflowed = false;
  shellctl::io::pty::sanitizer s;
  // Non-blocking reads: EAGAIN says the pane is quiet, the moment to show the pending line.
  const int in_flags = ::fcntl(STDIN_FILENO, F_GETFL);
  const bool quiet_known = in_flags >= 0 && ::fcntl(STDIN_FILENO, F_SETFL, in_flags | O_NONBLOCK) == 0;
  std::string buf(64 * 1024, '\0');
  std::string out;
  // The runner's end marker (an OSC sequence, which the sanitizer strips anyway): once it is
  // read, everything the job printed before it has reached us, and the runner may exit.
  // tmux frees a dead pane's pipe buffer unwritten, so a runner that exits at once can
  // lose the job's last output; this handshake closes that window.
  const std::string marker = end_nonce.empty() ? "" : "\x1b]shellctl-end;" + end_nonce + "\x07";
  std::string tail;  // the end of the previous chunk, for a marker split across reads
  bool marker_seen = marker.empty() || end_file.empty();
  for (;;) {
    const ssize_t r = ::read(STDIN_FILENO, buf.data(), buf.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN && quiet_known) {
        pending.show(s.pending_line());
        pollfd in{STDIN_FILENO, POLLIN, 0};
        if (::poll(&in, 1, -1) < 0 && errno != EINTR) return fail("poll /dev/stdin", errno);
        continue;
      }
      return fail("read /dev/stdin", errno);
    }
    out.clear();
    if (r == 0) {
      out = s.finish();
    } else {
      s.feed(std::string_view(buf.data(), static_cast<std::size_t>(r)), out);
    }
    // A native scope's job: reserved before it is written; past the budget what fits is
    // written, the overflow marker made (the worker then fails the job and kills it), and
    // the rest read and dropped so that the pane never blocks on us.
    if (!out.empty()) {
      pending.clear();
      bool write_failed = false;
      if (!overflow_file.empty())
        shellctl::io::native::write_within_budget(budget, STDOUT_FILENO, out.data(), out.size(),
                                                  overflow_file, overflowed, write_failed);
      else
        write_failed = !shellctl::io::fs::write_all(STDOUT_FILENO, out.data(), out.size());
      if (write_failed) return fail("write /dev/stdout", errno);
    }
    if (!marker_seen && r > 0) {
      tail.append(buf.data(), static_cast<std::size_t>(r));
      if (tail.find(marker) != std::string::npos) {
        marker_seen = true;
        touch(end_file);
      } else if (tail.size() >= marker.size()) {
        tail.erase(0, tail.size() - (marker.size() - 1));
      }
    }
    if (r == 0) return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string ready_file, end_file, end_nonce, drained_file, failed_file;
  std::string budget_helper, budget_db, overflow_file, pending_path;
  bool have_ready = false;
  // Go flag syntax (io/text/go_flags.hpp).
  shellctl::io::text::go_flag_reader flags(argc, argv, 1);
  shellctl::io::text::go_flag_reader::flag f;
  for (;;) {
    const auto step = flags.next(f);
    if (step == shellctl::io::text::go_flag_reader::step::end) break;
    if (step == shellctl::io::text::go_flag_reader::step::bad_syntax) {
      std::fprintf(stderr, "bad flag syntax: %s\n", f.raw.c_str());
      usage(stderr);
      return 2;
    }
    const std::string_view name = f.name;
    if (name == "h" || name == "help") {
      usage(stderr);
      return 0;
    }
    if (name == "version") {
      std::printf("%s %s\n", kProg, SHELLCTL_VERSION);
      return 0;
    }
    if (name != "ready-file" && name != "end-file" && name != "end-marker" &&
        name != "drained-file" && name != "failed-file" && name != "budget-helper" &&
        name != "budget-db" && name != "overflow-file" && name != "pending-file") {
      std::fprintf(stderr, "flag provided but not defined: -%.*s\n", static_cast<int>(name.size()),
                   name.data());
      usage(stderr);
      return 2;
    }
    if (!flags.take_value(f)) {
      std::fprintf(stderr, "flag needs an argument: -%.*s\n", static_cast<int>(name.size()),
                   name.data());
      usage(stderr);
      return 2;
    }
    if (name == "ready-file") {
      ready_file = *f.value;
      have_ready = true;
    } else if (name == "end-file") {
      end_file = *f.value;
    } else if (name == "drained-file") {
      drained_file = *f.value;
    } else if (name == "failed-file") {
      failed_file = *f.value;
    } else if (name == "budget-helper") {
      budget_helper = *f.value;
    } else if (name == "budget-db") {
      budget_db = *f.value;
    } else if (name == "overflow-file") {
      overflow_file = *f.value;
    } else if (name == "pending-file") {
      pending_path = *f.value;
    } else {
      end_nonce = *f.value;
    }
  }

  // A closed reader must surface as a write error (exit 1), not kill us silently.
  ::signal(SIGPIPE, SIG_IGN);

  if (have_ready && !ready_file.empty()) {
    const int fd = ::open(ready_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int err = errno;
      if (!failed_file.empty()) touch(failed_file);
      return fail("open " + ready_file, err);
    }
    ::close(fd);
  }

  // The markers the Go server's pipe shell writes after the sanitizer
  // (docs/jobs.md "The output pipe"), written here when asked: shellctl serve execs the
  // sanitizer as the whole pipe program, so no shell stays resident per job to write them. The
  // drained marker is written while stdout is still open (everything is written by then); the
  // stdout's close, which the server watches (IN_CLOSE_WRITE on output.log), comes after it.
  shellctl::io::native::output_budget budget;
  if (!budget_db.empty()) {
    std::string err;
    if (budget_helper.empty() || overflow_file.empty()) {
      err = "-budget-db needs -budget-helper and -overflow-file";
      if (overflow_file.empty()) overflow_file = "/dev/null";  // still budgeted: nothing is granted
    }
    else
      budget.start(budget_helper, budget_db, err);
    // Without a budget nothing is granted: the first output is the overflow.
    if (!err.empty()) std::fprintf(stderr, "%s: output budget: %s\n", kProg, err.c_str());
  }
  pending_file pending(pending_path);
  const int status = sanitize(end_file, end_nonce, budget, overflow_file, pending);
  pending.clear();  // the log holds the whole output now
  const std::string& marker_file = status == 0 ? drained_file : failed_file;
  if (!marker_file.empty()) touch(marker_file);
  return status;
}

