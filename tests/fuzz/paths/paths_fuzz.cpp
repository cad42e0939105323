// Random paths against a real tree with symlinks that stay, leave, loop and lead into the
// state dir: whatever the file API's roots (io/fs/file_roots.hpp) open must be, by the
// kernel's own account (/proc/self/fd), inside a root and outside the state dir. The input
// is read as a path directly, and also as a sequence of components drawn from a vocabulary
// of the tree's names, "..", "." and the symlinks, so both raw bytes and deep walks occur.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/fs/file_roots.hpp"

namespace {

struct world {
  std::string base, home, state, extra, outside;
  shellctl::io::fs::file_roots* roots = nullptr;
  world() {
    char tmpl[] = "/tmp/shellctl-paths-fuzz-XXXXXX";
    base = ::mkdtemp(tmpl);
    home = base + "/home";
    state = home + "/.local/share/shellctl";
    extra = base + "/workspace";
    outside = base + "/outside";
    for (const auto& d : {home, home + "/.local", home + "/.local/share", state, state + "/jobs", extra,
                          outside, home + "/a", home + "/a/b"})
      ::mkdir(d.c_str(), 0700);
    for (const auto& f : {home + "/a/f", state + "/shellctl.db", outside + "/secret", extra + "/w"})
      ::close(::open(f.c_str(), O_WRONLY | O_CREAT, 0600));
    const std::pair<const char*, std::string> links[] = {
        {"../outside", home + "/up"},        {"/etc", home + "/etc"},
        {"a", home + "/in"},                 {".local/share/shellctl", home + "/st"},
        {"loop", home + "/loop"},            {"/proc/self/root", home + "/magic"},
        {"../../outside", home + "/a/b/up2"}, {"../home", extra + "/h"},
        {"../..", home + "/a/b/top"}};
    for (const auto& [target, at] : links) (void)::symlink(target, at.c_str());
    roots = new shellctl::io::fs::file_roots(home, {extra}, state);
  }
};

world& the_world() {
  static world w;  // one tree for the whole run (never torn down: the process ends)
  return w;
}

bool under(const std::string& path, const std::string& dir) {
  return path == dir || path.rfind(dir + "/", 0) == 0;
}

void check_one(world& w, const std::string& path) {
  const auto at = w.roots->locate(path);
  if (at.v != shellctl::io::fs::file_roots::verdict::ok) return;
  for (int flags : {O_RDONLY, O_PATH}) {
    const int fd = w.roots->open(at, flags);
    if (fd < 0) continue;
    char buf[8192];
    const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) std::abort();
    const std::string real(buf, static_cast<std::size_t>(n));
    if (!(under(real, w.home) || under(real, w.extra))) std::abort();  // out of every root
    if (under(real, w.state)) std::abort();                           // into the state dir
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto& w = the_world();
  check_one(w, std::string(reinterpret_cast<const char*>(data), size));
  static const char* const vocab[] = {"..", ".", "a", "b", "f", "up", "etc", "in", "st", "loop",
                                      "magic", "up2", "top", "h", "w", ".local", "share",
                                      "shellctl", "shellctl.db", "jobs", "secret", "outside",
                                      "home", "workspace", "", "passwd", "proc", "self", "root"};
  std::string path;
  for (std::size_t i = 0; i < size && i < 48; ++i) {
    if (i == 0 && (data[0] & 0x80)) path = (data[0] & 0x40) ? w.extra : w.home;  // absolute starts
    path += '/';
    path += vocab[data[i] % (sizeof vocab / sizeof vocab[0])];
  }
  if (!path.empty()) check_one(w, path[0] == '/' && path.rfind(w.base, 0) != 0 ? path.substr(1) : path);
  return 0;
}
