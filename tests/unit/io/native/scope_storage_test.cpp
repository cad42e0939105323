// A scope worker's storage on the real kernel (docs/native-scopes.md "The scope worker"; S13,
// S18, S19): in a child with its own mount namespace (as root, and as an unprivileged user that
// is root of its own user namespace, the worker's shape), the spool and payload are tmpfs of
// exactly the sizes asked (statfs), Home is a writable copy of a root-owned base (modes kept,
// symlinks not followed, fifos left out) while the base stays unchanged, a write past
// disk_bytes is ENOSPC, and a base larger than disk_bytes fails the setup saying so.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "io/native/scope/scope_storage.hpp"

namespace native = shellctl::io::native;

namespace {

constexpr std::uint64_t kSpool = 3 << 20, kDisk = 2 << 20;

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& p, const std::string& text, mode_t mode) {
  std::ofstream(p) << text;
  ::chmod(p.c_str(), mode);
}

struct temp_base {
  std::string dir;
  temp_base() {
    char tmpl[] = "/tmp/shellctl-storage-XXXXXX";
    dir = ::mkdtemp(tmpl);
    ::chmod(dir.c_str(), 0755);
    ::mkdir((dir + "/base").c_str(), 0755);
    ::mkdir((dir + "/base/sub").c_str(), 0755);
    ::mkdir((dir + "/base/locked").c_str(), 0755);
    spit(dir + "/base/notes.txt", "from the base\n", 0644);
    spit(dir + "/base/run.sh", "#!/bin/sh\necho hi\n", 0755);
    spit(dir + "/base/sub/deep.txt", "deep\n", 0640 | 0004);
    spit(dir + "/base/locked/ro.txt", "ro\n", 0444);
    ::chmod((dir + "/base/locked").c_str(), 0555);
    ::symlink("/etc/passwd", (dir + "/base/link").c_str());
    ::mkfifo((dir + "/base/fifo").c_str(), 0644);
    ::mkdir((dir + "/mnt").c_str(), 0755);
    ::mkdir((dir + "/mnt2").c_str(), 0755);
    // A base larger than the payload.
    ::mkdir((dir + "/big").c_str(), 0755);
    spit(dir + "/big/blob", std::string(kDisk + 4096, 'b'), 0644);
  }
  ~temp_base() { (void)!std::system(("rm -rf " + dir).c_str()); }
};

bool write_map(const char* file, const std::string& text) {
  const int fd = ::open(file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// The worker's steps in a child; what it found comes back as "key=value" lines.
std::map<std::string, std::string> in_worker(const temp_base& t, bool user_ns) {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(out[0]);
    std::string said;
    auto say = [&](const std::string& k, const std::string& v) { said += k + "=" + v + "\n"; };
    auto finish = [&] {
      (void)!::write(out[1], said.data(), said.size());
      ::_exit(0);
    };
    if (user_ns) {
      // An unprivileged user (nobody), root of a user namespace mapped to it.
      // (A uid change clears the dumpable flag, which would leave /proc/self to root.)
      if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0 ||
          ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0 || ::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0 ||
          !write_map("/proc/self/setgroups", "deny") ||
          !write_map("/proc/self/uid_map", "0 65534 1") ||
          !write_map("/proc/self/gid_map", "0 65534 1")) {
        say("setup", std::strerror(errno));
        finish();
      }
    } else if (::unshare(CLONE_NEWNS) != 0) {
      say("setup", std::strerror(errno));
      finish();
    }
    ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
    const std::string mnt = t.dir + "/mnt";
    native::scope_storage_spec s;
    s.dir = mnt;
    s.spool_bytes = kSpool;
    s.disk_bytes = kDisk;
    s.base_fd = ::open((t.dir + "/base").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    std::string err;
    say("mounted", native::mount_scope_storage(s, err) ? "yes" : err);
    struct statfs fs {};
    ::statfs((mnt + "/spool").c_str(), &fs);
    say("spool_bytes", std::to_string(static_cast<std::uint64_t>(fs.f_blocks) * fs.f_bsize));
    ::statfs((mnt + "/payload").c_str(), &fs);
    say("payload_bytes", std::to_string(static_cast<std::uint64_t>(fs.f_blocks) * fs.f_bsize));
    const std::string home = mnt + "/payload/home";
    say("notes", slurp(home + "/notes.txt"));
    say("deep", slurp(home + "/sub/deep.txt"));
    struct stat st {};
    ::stat((home + "/run.sh").c_str(), &st);
    say("run_mode", std::to_string(st.st_mode & 07777));
    ::stat((home + "/locked").c_str(), &st);
    say("locked_mode", std::to_string(st.st_mode & 07777));
    ::stat((home + "/sub/deep.txt").c_str(), &st);
    say("deep_mode", std::to_string(st.st_mode & 07777));
    char link[256] = {};
    say("link", ::readlink((home + "/link").c_str(), link, sizeof link - 1) > 0 ? link : "none");
    say("fifo", ::lstat((home + "/fifo").c_str(), &st) == 0 ? "copied" : "absent");
    {
      std::ofstream f(home + "/notes.txt", std::ios::app);
      f << "changed in Home\n";
    }
    say("notes_after", slurp(home + "/notes.txt"));
    ::stat((mnt + "/payload/tmp").c_str(), &st);
    say("tmp_mode", std::to_string(st.st_mode & 07777));
    // Fill the workspace: ENOSPC at disk_bytes, not later.
    const int fd = ::open((mnt + "/payload/workspace/fill").c_str(), O_WRONLY | O_CREAT, 0644);
    std::string chunk(65536, 'x');
    std::uint64_t written = 0;
    int last = 0;
    for (;;) {
      const ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n <= 0) {
        last = errno;
        break;
      }
      written += static_cast<std::uint64_t>(n);
    }
    ::close(fd);
    say("fill_errno", last == ENOSPC ? "ENOSPC" : std::strerror(last));
    say("fill_within", written <= kDisk ? "yes" : "no");
    // A base larger than the payload.
    s.dir = t.dir + "/mnt2";
    s.base_fd = ::open((t.dir + "/big").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    err.clear();
    say("big", native::mount_scope_storage(s, err) ? "mounted" : err);
    finish();
  }
  ::close(out[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::map<std::string, std::string> m;
  std::string key, value;
  std::istringstream in(text);
  // Values may span lines (file contents): a line without '=' continues the last value.
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos && line.find(' ') > eq && !line.empty() && line[0] != ' ') {
      key = line.substr(0, eq);
      m[key] = line.substr(eq + 1);
    } else if (!key.empty()) {
      m[key] += "\n" + line;
    }
  }
  return m;
}

void check_storage(const std::map<std::string, std::string>& m, const temp_base& t) {
  auto at = [&](const char* k) {
    auto it = m.find(k);
    return it == m.end() ? std::string("<missing>") : it->second;
  };
  REQUIRE_MESSAGE(at("mounted") == "yes", at("setup"), " ", at("mounted"));
  CHECK(at("spool_bytes") == std::to_string(kSpool));
  CHECK(at("payload_bytes") == std::to_string(kDisk));
  CHECK(at("notes") == "from the base\n");
  CHECK(at("deep") == "deep\n");
  CHECK(at("run_mode") == std::to_string(0755));
  CHECK(at("locked_mode") == std::to_string(0555));
  CHECK(at("deep_mode") == std::to_string(0644));
  CHECK(at("link") == "/etc/passwd");
  CHECK(at("fifo") == "absent");
  CHECK(at("notes_after") == "from the base\nchanged in Home\n");
  CHECK(at("tmp_mode") == std::to_string(01777));
  CHECK(at("fill_errno") == "ENOSPC");
  CHECK(at("fill_within") == "yes");
  CHECK_MESSAGE(at("big").find("does not fit in disk_bytes") != std::string::npos, at("big"));
  // The base is as it was.
  CHECK(slurp(t.dir + "/base/notes.txt") == "from the base\n");
}

}  // namespace

TEST_CASE("a worker's storage as root in its own mount namespace") {
  temp_base t;
  check_storage(in_worker(t, false), t);
}

TEST_CASE("a worker's storage as an unprivileged user, root of its own user namespace") {
  temp_base t;
  check_storage(in_worker(t, true), t);
}
