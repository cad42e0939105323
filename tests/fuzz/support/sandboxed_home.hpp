#pragma once
// What the archive-extracting fuzz targets share: one directory per fuzzing process that
// holds `home` and nothing else, ever. An extraction that writes anything beside Home is an
// escape and aborts the run.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace shellctl::fuzz {

inline const std::string& sandbox_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/shellctl-archive-fuzz-XXXXXX";
    // libFuzzer ends without running exit handlers: packaging/dev.sh removes these.
    return std::string(::mkdtemp(tmpl));
  }();
  return dir;
}

// An empty <sandbox>/home, whatever the last input left there.
inline std::string fresh_home() {
  const std::string home = sandbox_dir() + "/home";
  std::error_code ec;
  // Make every directory writable again first (an archive may have made one 0500).
  for (auto it = std::filesystem::recursive_directory_iterator(home, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
  std::filesystem::remove_all(home, ec);
  ::mkdir(home.c_str(), 0700);
  return home;
}

inline void abort_if_escaped() {
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(sandbox_dir(), ec))
    if (e.path().filename() != "home") {
      std::fprintf(stderr, "escape: %s was written outside Home\n", e.path().c_str());
      std::abort();
    }
}

}  // namespace shellctl::fuzz
