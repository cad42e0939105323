// libFuzzer target over everything a home snapshot takes from outside: the caller's
// exclude patterns (Go's filepath.Match port and go-git's rules), and a restore's archive,
// both as a tar compressed here (so the fuzzer reaches libarchive's headers and our name
// checks and confinement) and as a raw zstd stream. After every restore the sandbox around
// Home must hold nothing but Home: anything else is an escape, and aborts.
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "io/archive/excludes.hpp"
#include "io/archive/home_reader.hpp"
#include "tests/fuzz/support/bytes_source.hpp"
#include "tests/fuzz/support/sandboxed_home.hpp"

namespace archive = shellctl::io::archive;

namespace {

using shellctl::fuzz::bytes_source;

void restore(const std::string& stream) {
  const std::string home = shellctl::fuzz::fresh_home();
  bytes_source src(stream);
  auto r = archive::restore_home(home, src, [] { return false; });
  if (r.result != archive::restore_result::outcome::ok && r.message.empty()) std::abort();
  shellctl::fuzz::abort_if_escaped();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {  // patterns, then paths: one per line, split by the first empty line
      std::vector<std::string> patterns, paths;
      std::size_t start = 0;
      bool in_paths = false;
      while (start <= input.size()) {
        auto nl = input.find('\n', start);
        std::string line = input.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        if (line.empty() && !in_paths) in_paths = true;
        else (in_paths ? paths : patterns).push_back(line);
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
      archive::snapshot_excludes ex(patterns);
      for (const auto& p : paths) {
        (void)ex.excluded(p, false);
        (void)ex.excluded(p, true);
        if (!patterns.empty()) (void)archive::go_path_match(patterns[0], p);
      }
      // The runtime's state dir stays out whatever the patterns say.
      if (!ex.excluded(archive::snapshot_excludes::runtime_state, true)) std::abort();
      break;
    }
    case 1: {  // a tar, compressed here
      std::string z(ZSTD_compressBound(input.size()), '\0');
      const std::size_t n = ZSTD_compress(z.data(), z.size(), input.data(), input.size(), 1);
      if (ZSTD_isError(n)) return 0;
      z.resize(n);
      restore(z);
      break;
    }
    default:  // a zstd stream as it comes
      restore(input);
      break;
  }
  return 0;
}
