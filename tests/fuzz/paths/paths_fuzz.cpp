// Random paths against a real tree with symlinks that stay, leave, loop and lead into the
// state dir: whatever the file API's roots (io/fs/file_roots.hpp) open must be, by the
// kernel's own account (/proc/self/fd), inside a root and outside the state dir. The input
// is read as a path directly, and also as a sequence of components drawn from a vocabulary
// of the tree's names, "..", "." and the symlinks, so both raw bytes and deep walks occur.
// The component form also drives the file API's operations (io/fs/file_ops.hpp): stat,
// list, read, and the mutating ones (mkdir -p, upload, recursive delete, move); after each,
// the tree outside the roots and the state dir must be exactly as made, and the tree is
// mended for the next input.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <dirent.h>

#include <algorithm>

#include "io/fs/file_ops.hpp"
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
    mend();
    roots = new shellctl::io::fs::file_roots(home, {extra}, state);
  }
  // Makes (again) what a mutating operation may have removed inside the roots.
  void mend() const {
    for (const auto& d : {home, home + "/.local", home + "/.local/share", state, state + "/jobs", extra,
                          outside, home + "/a", home + "/a/b"})
      ::mkdir(d.c_str(), 0700);
    for (const auto& f : {home + "/a/f", state + "/shellctl.db", outside + "/secret", extra + "/w"})
      ::close(::open(f.c_str(), O_WRONLY | O_CREAT, 0600));
    // "/etc" would be the machine's: an absolute link that leads out goes to `outside` here.
    const std::pair<std::string, std::string> links[] = {
        {"../outside", home + "/up"},        {outside, home + "/etc"},
        {"a", home + "/in"},                 {".local/share/shellctl", home + "/st"},
        {"loop", home + "/loop"},            {"/proc/self/root", home + "/magic"},
        {"../../outside", home + "/a/b/up2"}, {"../home", extra + "/h"},
        {"../..", home + "/a/b/top"}};
    for (const auto& [target, at] : links) (void)::symlink(target.c_str(), at.c_str());
  }
};

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (struct dirent* e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Outside the roots and in the state dir, nothing may have changed.
void check_untouched(const world& w) {
  if (names_in(w.outside) != std::vector<std::string>{"secret"}) std::abort();
  if (names_in(w.state) != std::vector<std::string>{"jobs", "shellctl.db"}) std::abort();
  if (!names_in(w.state + "/jobs").empty()) std::abort();
  struct stat st {};
  if (::stat((w.outside + "/secret").c_str(), &st) != 0 || st.st_size != 0) std::abort();
  if (::stat((w.state + "/shellctl.db").c_str(), &st) != 0 || st.st_size != 0) std::abort();
}

// One file API operation on `path` (and `other`, for a move), chosen by `op`; refusals are
// expected, anything else that escapes is caught by check_untouched.
void operate(world& w, unsigned op, const std::string& path, const std::string& other) {
  namespace fs = shellctl::io::fs;
  try {
    switch (op % 7) {
      case 0: (void)fs::stat_path(*w.roots, path); break;
      case 1: (void)fs::list_dir(*w.roots, path, 5); break;
      case 2: {
        fs::file_reader r(*w.roots, path);
        char buf[16];
        (void)r.read_at(0, buf, sizeof buf);
        break;
      }
      case 3: (void)fs::make_directory(*w.roots, path, true, 0755); break;
      case 4: {
        fs::file_upload up(*w.roots, path, std::nullopt, (op & 8) != 0);
        up.write("fuzz");
        (void)up.commit();
        break;
      }
      case 5: (void)fs::remove_path(*w.roots, path, true); break;
      case 6: (void)fs::move_path(*w.roots, path, other, (op & 8) != 0); break;
    }
  } catch (const fs::file_failure&) {
  }
  check_untouched(w);
  w.mend();
}

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
  if (path.empty()) return 0;
  const std::string walk = path[0] == '/' && path.rfind(w.base, 0) != 0 ? path.substr(1) : path;
  check_one(w, walk);
  // The same walk through an operation; a move goes to the walk's last two components.
  const auto cut = walk.rfind('/', walk.size() > 1 ? walk.rfind('/') - 1 : 0);
  const std::string other = cut == std::string::npos ? "x" : walk.substr(cut + 1);
  operate(w, data[size - 1], walk, other.empty() ? "x" : other);
  return 0;
}
