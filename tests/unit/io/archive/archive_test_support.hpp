#pragma once
// What the archive tests share: running a shell pipeline (GNU tar, zstd, Python) and a
// temporary directory holding a Home and a source tree, removed afterwards.
#include <doctest/doctest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "io/fs/files.hpp"

namespace shellctl::test {

// The command's stdout; the command must succeed.
inline std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  REQUIRE(::pclose(p) == 0);
  return out;
}

// <dir>/home and <dir>/src; a tmpfs a test mounts on home is unmounted at the end.
struct archive_dirs {
  std::string dir;
  archive_dirs() {
    char tmpl[] = "/tmp/shellctl-archive-XXXXXX";
    dir = ::mkdtemp(tmpl);
    io::fs::make_dirs(dir + "/home", 0755);
    io::fs::make_dirs(dir + "/src", 0755);
  }
  ~archive_dirs() {
    ::umount2((dir + "/home").c_str(), MNT_DETACH);
    std::system(("rm -rf '" + dir + "'").c_str());
  }
  archive_dirs(const archive_dirs&) = delete;
  archive_dirs& operator=(const archive_dirs&) = delete;
  std::string home() const { return dir + "/home"; }
  std::string src() const { return dir + "/src"; }
  // A file below home, with its directories.
  void file(const std::string& rel, const std::string& content, unsigned mode = 0644) const {
    io::fs::make_dirs(io::fs::parent_of(home() + "/" + rel), 0755);
    io::fs::write_file(home() + "/" + rel, content, mode);
  }
};

}  // namespace shellctl::test
