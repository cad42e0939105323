// io/archive/home_writer on a real tree: what GNU tar, zstd and Python's tarfile read back
// from the bytes the sink got (no reader of ours in the loop).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/archive/home_writer.hpp"
#include "io/fs/files.hpp"
#include "tests/unit/io/archive/archive_test_support.hpp"

namespace archive = shellctl::io::archive;
namespace fs = shellctl::io::fs;
using shellctl::test::run;

namespace {

using temp_home = shellctl::test::archive_dirs;

archive::save_result save(const std::string& home, const std::vector<std::string>& excludes,
                          std::string& bytes, std::size_t* chunks = nullptr) {
  archive::snapshot_excludes ex(excludes);
  return archive::write_home_archive(
      home, ex,
      [&](std::string_view chunk) {
        bytes.append(chunk);
        if (chunks) ++*chunks;
        return true;
      },
      [] { return false; });
}

std::string to_file(const std::string& dir, const std::string& bytes) {
  const std::string path = dir + "/snap.tar.zst";
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

TEST_CASE("a Home with every kind of entry: what tar lists, in walk order, owned by 0/0") {
  temp_home t;
  t.file("a.txt", "hello\n");
  t.file("bin/tool.sh", "#!/bin/sh\necho tool\n", 0755);
  t.file("bin/.local/share/shellctl/keep.txt", "ordinary content\n");
  t.file(".local/share/shellctl/shellctl.db", "server state\n");
  t.file(".local/bin/agent-tool", "user tooling\n", 0755);
  t.file("workspace/notes.txt", "notes\n");
  t.file("suid", "s", 04755);
  t.file("ünï/çødé.txt", "unicode\n");
  const std::string long_dir = std::string(120, 'd') + "/" + std::string(90, 'e');
  t.file(long_dir + "/" + std::string(60, 'f') + ".txt", "long\n");
  fs::make_dirs(t.home() + "/emptydir", 0700);
  REQUIRE(::symlink("bin/tool.sh", (t.home() + "/tool-link").c_str()) == 0);
  REQUIRE(::mkfifo((t.home() + "/pipe").c_str(), 0600) == 0);
  // An mtime of x.6 s is saved as x+1.
  struct timespec times[2] = {{0, UTIME_OMIT}, {1700000000, 600000000}};
  REQUIRE(::utimensat(AT_FDCWD, (t.home() + "/a.txt").c_str(), times, 0) == 0);

  std::string bytes;
  auto r = save(t.home(), {}, bytes);
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(r.bytes == bytes.size());
  const auto path = to_file(t.dir, bytes);
  // One frame with a checksum, which zstd verifies.
  run("zstd -q -t '" + path + "'");
  CHECK(run("zstd -lv '" + path + "'").find("XXH64") != std::string::npos);

  const auto names = run("zstd -q -d -c '" + path + "' | tar -tf - 2>&1");
  const std::string expected_start =
      ".local/\n.local/bin/\n.local/bin/agent-tool\n.local/share/\na.txt\nbin/\n"
      "bin/.local/\nbin/.local/share/\nbin/.local/share/shellctl/\n"
      "bin/.local/share/shellctl/keep.txt\nbin/tool.sh\n";
  CHECK(names.substr(0, expected_start.size()) == expected_start);
  CHECK(names.find("shellctl.db") == std::string::npos);    // the runtime's state: out
  CHECK(names.find("\n.local/share/shellctl/\n") == std::string::npos);
  CHECK(names.find("emptydir/\n") != std::string::npos);
  CHECK(names.find("pipe") == std::string::npos);            // a fifo is skipped
  CHECK(names.find("ünï/çødé.txt\n") != std::string::npos);
  CHECK(names.find(long_dir + "/" + std::string(60, 'f') + ".txt\n") != std::string::npos);
  CHECK(names.find("workspace/notes.txt\n") != std::string::npos);

  // Header fields, as Python's tarfile reads them.
  const auto fields = run(
      "zstd -q -d -c '" + path + "' | python3 -c '"
      "import sys, tarfile\n"
      "t = tarfile.open(fileobj=sys.stdin.buffer, mode=\"r|\")\n"
      "for m in t:\n"
      "    print(m.name, m.type.decode(), oct(m.mode), m.uid, m.gid, repr(m.uname), repr(m.gname), int(m.mtime) == m.mtime, m.linkname, m.size, m.mtime if m.name == \"a.txt\" else \"\")\n"
      "'");
  std::istringstream lines(fields);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    CAPTURE(line);
    CHECK(line.find(" 0 0 '' '' True") != std::string::npos);
    ++count;
  }
  CHECK(count == static_cast<int>(r.entries));
  CHECK(fields.find("a.txt 0 0o644 0 0 '' '' True  6 1700000001") != std::string::npos);
  CHECK(fields.find("tool-link 2 0o777 0 0 '' '' True bin/tool.sh 0") != std::string::npos);
  CHECK(fields.find("suid 0 0o4755 ") != std::string::npos);
  CHECK(fields.find("emptydir 5 0o700 ") != std::string::npos);
}

TEST_CASE("excludes prune directories; an empty Home is a valid archive with no entries") {
  temp_home t;
  t.file(".cache/junk", "j");
  t.file(".cache/keep-me", "k");
  t.file("node_modules/x/y.js", "y");
  t.file("src/app.log", "l");
  t.file("src/app.txt", "t");
  std::string bytes;
  auto r = save(t.home(), {".cache/**", "!.cache/keep-me", "node_modules", "*.log"}, bytes);
  REQUIRE_MESSAGE(r.ok, r.error);
  const auto names = run("zstd -q -d -c '" + to_file(t.dir, bytes) + "' | tar -tf -");
  CHECK(names == ".cache/\n.cache/keep-me\nsrc/\nsrc/app.txt\n");

  temp_home empty;
  std::string none;
  auto e = save(empty.home(), {}, none);
  REQUIRE(e.ok);
  CHECK(e.entries == 0);
  CHECK_FALSE(none.empty());  // never an empty body
  const auto path = to_file(empty.dir, none);
  CHECK(run("zstd -q -d -c '" + path + "' | wc -c") == "1024\n");  // two zero blocks only
}

TEST_CASE("a large file streams out in many chunks; a stop or a refusing sink fails the save") {
  temp_home t;
  // 8 MiB of incompressible bytes: the sink must see it piecewise, not at the end.
  run("head -c 8388608 /dev/urandom > '" + t.home() + "/big.bin'");
  std::string bytes;
  std::size_t chunks = 0;
  auto r = save(t.home(), {}, bytes, &chunks);
  REQUIRE(r.ok);
  CHECK(chunks > 8);
  CHECK(bytes.size() > 8388608);

  archive::snapshot_excludes ex({});
  std::size_t handed = 0;
  auto refused = archive::write_home_archive(
      t.home(), ex,
      [&](std::string_view c) {
        handed += c.size();
        return handed < 1000000;
      },
      [] { return false; });
  CHECK_FALSE(refused.ok);
  CHECK(refused.error == "the client stopped reading");

  t.file("second", "x");
  auto stopped = archive::write_home_archive(
      t.home(), ex, [](std::string_view) { return true; }, [] { return true; });
  CHECK_FALSE(stopped.ok);
  CHECK(stopped.error.find("deadline") != std::string::npos);
}

TEST_CASE("Home that cannot be opened fails before any byte") {
  std::string bytes;
  auto r = save("/nonexistent/home", {}, bytes);
  CHECK_FALSE(r.ok);
  CHECK(bytes.empty());
  CHECK(r.error.find("/nonexistent/home") != std::string::npos);
}
