// A piped stdin's primitives on a real FIFO: the job's end reads what the server's end
// wrote, the end comes only when the server's end closes, and a write nobody reads is
// cancelled by its eventfd instead of blocking for ever.
#include <doctest/doctest.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "io/proc/stdin_pipe.hpp"

namespace sp = shellctl::io::proc::stdin_pipe;

namespace {
std::string fresh_path() {
  char dir[] = "/tmp/stdin-pipe-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  return std::string(dir) + "/" + sp::file_name;
}
}  // namespace

TEST_CASE("the job reads what was written, then EOF once the server's end closes") {
  const auto path = fresh_path();
  const int server = sp::create(path);
  REQUIRE(server >= 0);
  CHECK(sp::create(path) == -1);  // never over an existing file
  CHECK(errno == EEXIST);
  const int job = sp::open_for_job(path);
  REQUIRE(job >= 0);
  const int cancel = ::eventfd(0, EFD_CLOEXEC);
  REQUIRE(cancel >= 0);
  const std::string text("line one\n\0binary\xff", 17);
  CHECK(sp::write_all(server, text, cancel) == text.size());
  ::close(server);
  std::string got;
  char buf[64];
  ssize_t n;
  while ((n = ::read(job, buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  CHECK(n == 0);  // the end, after every byte
  CHECK(got == text);
  ::close(job);
  ::close(cancel);
  ::unlink(path.c_str());
}

TEST_CASE("a write the job does not read stops when cancelled") {
  const auto path = fresh_path();
  const int server = sp::create(path);
  REQUIRE(server >= 0);
  const int job = sp::open_for_job(path);
  REQUIRE(job >= 0);
  const int cancel = ::eventfd(0, EFD_CLOEXEC);
  REQUIRE(cancel >= 0);
  const std::uint64_t one = 1;
  REQUIRE(::write(cancel, &one, sizeof one) == sizeof one);  // cancelled before it fills
  const std::string big(8u << 20, 'x');  // more than any pipe buffer
  const auto written = sp::write_all(server, big, cancel);
  CHECK(written < big.size());
  CHECK(errno == ECANCELED);
  CHECK(sp::open_for_job(path + ".missing") == -1);
  CHECK(errno == ENOENT);
  ::close(server);
  ::close(job);
  ::close(cancel);
  ::unlink(path.c_str());
}
