// Frames between the server and the Home helper (io/home/frames.hpp) over a real socket
// pair: payloads of every size arrive whole, a descriptor travels with its frame (and
// extra ones are closed, never leaked), a peer that says nothing meets the deadline, a
// closed peer is told from a cut frame, and the state dir's linked files are found.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "io/home/frames.hpp"
#include "io/home/state_identity.hpp"

namespace home = shellctl::io::home;
using namespace std::chrono_literals;

namespace {

struct pair_of_sockets {
  int a = -1, b = -1;
  pair_of_sockets() {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    a = sv[0];
    b = sv[1];
  }
  ~pair_of_sockets() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
};

int open_fds() {
  int n = 0;
  for (int fd = 0; fd < 1024; ++fd)
    if (::fcntl(fd, F_GETFD) >= 0) ++n;
  return n;
}

}  // namespace

TEST_CASE("frames of every size arrive whole, in order") {
  pair_of_sockets s;
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{4096}, std::size_t{3} << 20}) {
    std::string payload(size, '\0');
    for (std::size_t i = 0; i < size; ++i) payload[i] = static_cast<char>(i * 7);
    std::thread writer([&] { CHECK(home::send_frame(s.a, payload)); });
    std::string got;
    CHECK(home::recv_frame(s.b, got, nullptr, std::chrono::steady_clock::now() + 10s) == home::recv_result::frame);
    writer.join();
    CHECK(got == payload);
  }
}

TEST_CASE("a descriptor travels with its frame") {
  pair_of_sockets s;
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  REQUIRE(home::send_frame(s.a, "with fd", p[1]));
  ::close(p[1]);
  std::string got;
  int fd = -1;
  REQUIRE(home::recv_frame(s.b, got, &fd) == home::recv_result::frame);
  CHECK(got == "with fd");
  REQUIRE(fd >= 0);
  CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(::write(fd, "x", 1) == 1);
  ::close(fd);
  char c = 0;
  CHECK(::read(p[0], &c, 1) == 1);
  CHECK(c == 'x');
  ::close(p[0]);
}

TEST_CASE("descriptors nobody asked for are closed, not leaked") {
  pair_of_sockets s;
  const int before = open_fds();
  for (int i = 0; i < 20; ++i) {
    const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(home::send_frame(s.a, "x", devnull));
    ::close(devnull);
    std::string got;
    REQUIRE(home::recv_frame(s.b, got, nullptr) == home::recv_result::frame);
  }
  CHECK(open_fds() == before);
}

TEST_CASE("deadlines, a closed peer and a cut frame") {
  {
    pair_of_sockets s;
    std::string got;
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(home::recv_frame(s.b, got, nullptr, t0 + 100ms) == home::recv_result::timeout);
  }
  {
    pair_of_sockets s;
    ::close(s.a);
    s.a = -1;
    std::string got;
    CHECK(home::recv_frame(s.b, got, nullptr) == home::recv_result::closed);
  }
  {
    pair_of_sockets s;
    const char head[] = {10, 0, 0, 0, 'a', 'b'};  // ten announced, two sent
    REQUIRE(::write(s.a, head, sizeof head) == static_cast<ssize_t>(sizeof head));
    ::close(s.a);
    s.a = -1;
    std::string got;
    CHECK(home::recv_frame(s.b, got, nullptr) == home::recv_result::failed);
  }
  {
    pair_of_sockets s;
    const unsigned char head[] = {0xff, 0xff, 0xff, 0x7f};  // beyond max_frame
    REQUIRE(::write(s.a, head, sizeof head) == 4);
    std::string got;
    CHECK(home::recv_frame(s.b, got, nullptr) == home::recv_result::failed);
  }
  {
    // A peer that never reads: the sender gives up at its deadline.
    pair_of_sockets s;
    const std::string big(8u << 20, 'x');
    CHECK_FALSE(home::send_frame(s.a, big, -1, std::chrono::steady_clock::now() + 200ms));
    CHECK(errno == ETIMEDOUT);
  }
}

TEST_CASE("the state dir's files with other names are found by identity") {
  char tmpl[] = "/tmp/shellctl-identity-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string state = dir + "/state";
  REQUIRE(::mkdir(state.c_str(), 0700) == 0);
  REQUIRE(::mkdir((state + "/sub").c_str(), 0700) == 0);
  for (const char* f : {"/one", "/sub/two"}) {
    const int fd = ::open((state + f).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    ::close(fd);
  }
  REQUIRE(::link((state + "/sub/two").c_str(), (dir + "/elsewhere").c_str()) == 0);
  REQUIRE(::symlink("one", (state + "/link").c_str()) == 0);
  struct stat two {};
  REQUIRE(::stat((state + "/sub/two").c_str(), &two) == 0);
  const auto found = home::linked_state_files(state);
  REQUIRE(found.size() == 1);
  CHECK(found[0].first == static_cast<std::uint64_t>(two.st_dev));
  CHECK(found[0].second == static_cast<std::uint64_t>(two.st_ino));
  std::system(("rm -rf '" + dir + "'").c_str());
}
