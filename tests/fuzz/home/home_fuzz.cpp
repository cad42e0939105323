// libFuzzer target over what the confined Home helper and the server take from each other
// and from Home (io/home):
//
//   0  the wire: bytes as a request and as a reply (what a confined, possibly subverted,
//      helper may send the server); a message that decodes must encode back to the same
//      bytes, and frames read from a socket never outgrow their bounds;
//   1  a planted Home, then a restore and a save, as the helper runs them in its world:
//      the fuzzer's process has a mount namespace of its own (made once, as root) in which
//      a read-only tmpfs masks the state dir inside Home, exactly as the helper's world
//      does. Home gets symlinks (relative, absolute, into the state dir, loops), hard
//      links, FIFOs and sockets from the input, then the rest of the input is restored as
//      a tar: nothing outside Home or in the state dir may change, nothing may block
//      (run with -timeout), and the save holds nothing of the state dir.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "io/archive/excludes.hpp"
#include "io/archive/home_reader.hpp"
#include "tests/fuzz/support/bytes_source.hpp"
#include "io/archive/home_writer.hpp"
#include "io/home/frames.hpp"
#include "io/home/wire.hpp"

namespace home = shellctl::io::home;
namespace archive = shellctl::io::archive;

namespace {

std::string base;     // <tmp>/shellctl-home-fuzz-XXXXXX: home/ and outside/, nothing else
std::string home_dir;
std::string state;    // home/.local/share/shellctl, masked
dev_t mask_dev = 0;
bool masked = false;

void setup() {
  char tmpl[] = "/tmp/shellctl-home-fuzz-XXXXXX";
  base = ::mkdtemp(tmpl);
  home_dir = base + "/home";
  state = home_dir + "/.local/share/shellctl";
  std::filesystem::create_directories(state);
  std::filesystem::create_directories(base + "/outside");
  std::FILE* f = std::fopen((base + "/outside/secret").c_str(), "w");
  std::fputs("outside\n", f);
  std::fclose(f);
  // The helper's world, in miniature: the state dir behind an empty read-only tmpfs.
  if (::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
      ::mount("tmpfs", state.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755") == 0) {
    std::FILE* db = std::fopen((state + "/shellctl.db").c_str(), "w");
    std::fputs("state-db-content-7f3a", db);
    std::fclose(db);
    ::mkdir((state + "/runtime").c_str(), 0755);
    ::mount(nullptr, state.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr);
    struct stat st {};
    ::stat(state.c_str(), &st);
    mask_dev = st.st_dev;
    masked = true;
  }
}

// Home emptied but for the way to the state dir.
void reset_home() {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(home_dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().string().rfind(state, 0) == 0) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
  }
  for (auto& e : std::filesystem::directory_iterator(home_dir, ec))
    if (e.path().filename() != ".local") std::filesystem::remove_all(e.path(), ec);
  for (auto& e : std::filesystem::directory_iterator(home_dir + "/.local", ec))
    if (e.path().filename() != "share") std::filesystem::remove_all(e.path(), ec);
  for (auto& e : std::filesystem::directory_iterator(home_dir + "/.local/share", ec))
    if (e.path().filename() != "shellctl") std::filesystem::remove_all(e.path(), ec);
}

std::string tree_of(const std::string& dir) {
  std::string out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    ::lstat(it->path().c_str(), &st);
    out += it->path().string() + " " + std::to_string(st.st_mode) + " " + std::to_string(st.st_size) + "\n";
  }
  return out;
}

const char* const names[] = {"a", "b", "sub", "link", "loop", "fifo", "sock", ".local/share/x"};
const char* const targets[] = {"a", "../a", "/tmp", "../../outside/secret", ".local/share/shellctl",
                               ".local/share/shellctl/shellctl.db", ".local/share/shellctl/runtime",
                               "loop", "/proc/self/root", ".local/share", "sub/../.."};

void plant(const std::uint8_t*& p, const std::uint8_t* end) {
  const int count = p < end ? *p++ % 8 : 0;
  for (int i = 0; i < count && end - p >= 2; ++i) {
    const std::uint8_t kind = *p++;
    const std::string path = home_dir + "/" + names[*p++ % (sizeof names / sizeof *names)];
    switch (kind % 6) {
      case 0: ::mkdir(path.c_str(), 0755); break;
      case 1: {
        // Never waits: a FIFO planted earlier at this name would block a plain open.
        const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 04755);
        if (fd >= 0) ::close(fd);
        break;
      }
      case 2: ::symlink(targets[(kind >> 3) % (sizeof targets / sizeof *targets)], path.c_str()); break;
      case 3: ::link((home_dir + "/a").c_str(), path.c_str()); break;
      case 4: ::mkfifo(path.c_str(), 0644); break;
      default: {
        const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        if (path.size() < sizeof addr.sun_path) {
          std::memcpy(addr.sun_path, path.c_str(), path.size());
          ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        }
        ::close(s);
      }
    }
  }
}

using shellctl::fuzz::bytes_source;

void wire(const std::string& input) {
  if (auto r = home::decode_request(input))
    if (home::encode(*r) != input) std::abort();
  if (auto r = home::decode_reply(input))
    if (home::encode(*r) != input) std::abort();
  // The same bytes as frames on a socket: whatever comes is bounded and never blocks.
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
  if (input.size() <= 65536 && ::write(sv[0], input.data(), input.size()) == static_cast<ssize_t>(input.size())) {
    ::close(sv[0]);
    std::string payload;
    while (home::recv_frame(sv[1], payload, nullptr, std::chrono::steady_clock::now()) == home::recv_result::frame)
      if (payload.size() > input.size()) std::abort();
  } else {
    ::close(sv[0]);
  }
  ::close(sv[1]);
}

void restore_and_save(const std::uint8_t* data, std::size_t size) {
  if (!masked) return;  // not root: no world to fuzz in
  reset_home();
  const std::uint8_t* p = data;
  const std::uint8_t* end = data + size;
  plant(p, end);
  const std::string before_state = tree_of(state);
  const std::string before_outside = tree_of(base + "/outside");
  const std::string tar(reinterpret_cast<const char*>(p), static_cast<std::size_t>(end - p));
  std::string z(ZSTD_compressBound(tar.size()), '\0');
  const std::size_t n = ZSTD_compress(z.data(), z.size(), tar.data(), tar.size(), 1);
  if (ZSTD_isError(n)) return;
  z.resize(n);
  bytes_source src(z);
  const archive::restore_filter off_limits = [](const struct stat& st) { return st.st_dev == mask_dev; };
  auto r = archive::restore_home(home_dir, src, [] { return false; }, off_limits);
  if (r.result != archive::restore_result::outcome::ok && r.message.empty()) std::abort();
  std::string saved;
  archive::snapshot_excludes none({});
  const archive::save_filter leave_out = [](const struct stat& st) { return st.st_dev == mask_dev; };
  archive::write_home_archive(home_dir, none, [&](std::string_view c) { saved.append(c); return true; },
                              [] { return false; }, leave_out);
  if (tree_of(state) != before_state || tree_of(base + "/outside") != before_outside) {
    std::fprintf(stderr, "escape: the state dir or outside changed\n");
    std::abort();
  }
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(base, ec))
    if (e.path().filename() != "home" && e.path().filename() != "outside") {
      std::fprintf(stderr, "escape: %s was written outside Home\n", e.path().c_str());
      std::abort();
    }
  // The save, decompressed, holds nothing of the state dir (its database's bytes).
  static std::string raw(8u << 20, '\0');
  const std::size_t m = ZSTD_decompress(raw.data(), raw.size(), saved.data(), saved.size());
  if (!ZSTD_isError(m) && std::string_view(raw.data(), m).find("state-db-content-7f3a") != std::string_view::npos) {
    std::fprintf(stderr, "the save holds the state dir\n");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setup();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) wire(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  else restore_and_save(data + 1, size - 1);
  return 0;
}
