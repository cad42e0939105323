// The file API's roots (io/fs/file_roots.hpp) on a real tree: $HOME with the state dir
// inside it, a granted extra root, and symlinks that stay, leave, or lead into the state dir.
// Every escape is refused by the kernel (or, for the state dir, by its identity), and every
// legitimate path resolves.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "io/fs/file_roots.hpp"

using shellctl::io::fs::file_roots;
using verdict = file_roots::verdict;

namespace {

struct tree {
  std::string base, home, state, extra, outside;
  tree() {
    char tmpl[] = "/tmp/shellctl-roots-XXXXXX";
    base = ::mkdtemp(tmpl);
    home = base + "/home";
    state = home + "/.local/share/shellctl";
    extra = base + "/workspace";
    outside = base + "/outside";
    for (const auto& d : {home, home + "/.local", home + "/.local/share", state, extra, outside, home + "/sub"})
      ::mkdir(d.c_str(), 0700);
    write(home + "/sub/file", "in home");
    write(state + "/shellctl.db", "secret db");
    write(outside + "/secret", "outside");
    write(extra + "/w", "workspace");
    link("../outside", home + "/out");                  // leaves home
    link(outside + "/secret", home + "/abs-out");        // absolute, elsewhere
    link("sub", home + "/inside");                       // stays inside
    link(".local/share/shellctl", home + "/to-state");   // inside home, into the state dir
    link(".local/share/shellctl/shellctl.db", home + "/db-link");
    link("/proc/self/root/etc", home + "/magic");
  }
  ~tree() { std::system(("rm -rf '" + base + "'").c_str()); }
  static void write(const std::string& p, const std::string& text) {
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  static void link(const std::string& target, const std::string& at) {
    REQUIRE(::symlink(target.c_str(), at.c_str()) == 0);
  }
};

// Opens `path` read-only through the roots: the fd (>= 0), or -errno.
int open_read(const file_roots& roots, const std::string& path) {
  const auto at = roots.locate(path);
  if (at.v != verdict::ok) return -1000 - static_cast<int>(at.v);
  const int fd = roots.open(at, O_RDONLY);
  if (fd < 0) return -errno;
  return fd;
}

std::string read_all(int fd) {
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

TEST_CASE("legitimate paths resolve: absolute, relative to HOME, an extra root, inner symlinks") {
  tree t;
  file_roots roots(t.home, {t.extra, "relative/ignored", "/nonexistent"}, t.state);
  CHECK(roots.root_count() == 2);
  CHECK(read_all(open_read(roots, t.home + "/sub/file")) == "in home");
  CHECK(read_all(open_read(roots, "sub/file")) == "in home");
  CHECK(read_all(open_read(roots, "./sub//./file")) == "in home");
  CHECK(read_all(open_read(roots, "inside/file")) == "in home");
  CHECK(read_all(open_read(roots, "sub/../sub/file")) == "in home");
  CHECK(read_all(open_read(roots, t.extra + "/w")) == "workspace");
  const auto at = roots.locate("sub/file");
  CHECK(at.absolute == t.home + "/sub/file");
  CHECK(at.rel == "sub/file");
}

TEST_CASE("escapes are refused by the kernel") {
  tree t;
  file_roots roots(t.home, {t.extra}, t.state);
  CHECK(open_read(roots, "../outside/secret") == -EXDEV);
  CHECK(open_read(roots, "sub/../../outside/secret") == -EXDEV);
  CHECK(open_read(roots, "out/secret") == -EXDEV);
  CHECK(open_read(roots, "abs-out") == -EXDEV);
  const int magic = open_read(roots, "magic/hostname");
  CHECK((magic == -EXDEV || magic == -ELOOP));
  CHECK(roots.locate(t.outside + "/secret").v == verdict::denied);
  CHECK(roots.locate("/proc/self/root" + t.outside + "/secret").v == verdict::denied);
  CHECK(roots.locate("/etc/passwd").v == verdict::denied);
}

TEST_CASE("the state dir is refused by name and by identity") {
  tree t;
  file_roots roots(t.home, {}, t.state);
  CHECK(roots.locate(t.state + "/shellctl.db").v == verdict::denied);
  CHECK(roots.locate(".local/share/shellctl").v == verdict::denied);
  CHECK(roots.locate(t.state).v == verdict::denied);
  // Through a symlink inside HOME: the name says home, the kernel's object is the state dir.
  CHECK(open_read(roots, "db-link") == -EACCES);
  const auto dir = roots.locate("to-state");
  REQUIRE(dir.v == verdict::ok);
  CHECK(roots.open(dir, O_PATH | O_DIRECTORY) == -1);
  CHECK(errno == EACCES);
  CHECK(open_read(roots, "to-state/shellctl.db") == -EACCES);
  // Its parent is fine.
  const int parent = roots.open(roots.locate(".local/share"), O_PATH | O_DIRECTORY);
  CHECK(parent >= 0);
  if (parent >= 0) ::close(parent);
}

TEST_CASE("what can never be a path is invalid_path") {
  tree t;
  file_roots roots(t.home, {}, t.state);
  CHECK(roots.locate("").v == verdict::invalid_path);
  CHECK(roots.locate(std::string("sub/\0file", 9)).v == verdict::invalid_path);
  CHECK(roots.locate("sub/\xff").v == verdict::invalid_path);
  CHECK(roots.locate("sub/\xc3").v == verdict::invalid_path);
  CHECK(roots.locate(std::string(4097, 'a')).v == verdict::invalid_path);
  CHECK(roots.locate("sub/caf\xc3\xa9").v == verdict::ok);  // UTF-8 names are fine
}

TEST_CASE("a symlink swapped in between two lookups is met by the kernel at the second") {
  tree t;
  file_roots roots(t.home, {}, t.state);
  ::mkdir((t.home + "/swap").c_str(), 0700);
  tree::write(t.home + "/swap/f", "first");
  CHECK(read_all(open_read(roots, "swap/f")) == "first");
  std::system(("rm -rf '" + t.home + "/swap'").c_str());
  tree::link(t.outside, t.home + "/swap");
  CHECK(open_read(roots, "swap/secret") == -EXDEV);
}
