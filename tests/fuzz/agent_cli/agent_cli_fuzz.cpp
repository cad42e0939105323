// libFuzzer target over what dify-agent takes from outside: the stub URL (every rule must
// answer with a normalized URL or a message), error bodies (structured and legacy
// decoding), a command line run through the real tree (the environment is unset, so every
// command stops before any request), and a Home Snapshot download's archive, compressed
// here or raw, extracted into a sandboxed Home: anything written beside Home is an escape
// and aborts.
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bin/dify-agent/cli.hpp"
#include "bin/dify-agent/environment.hpp"
#include "bin/dify-agent/client/stub_client.hpp"
#include "bin/dify-agent/formats/agent_home.hpp"
#include "tests/fuzz/support/sandboxed_home.hpp"

namespace cli = shellctl::dify_agent;

namespace {

// The environment is unset once, so that every command stops before any request, and
// help texts (the tree's output) go nowhere.
void init_once() {
  static const bool done = [] {
    ::unsetenv("DIFY_AGENT_STUB_API_BASE_URL");
    ::unsetenv("DIFY_AGENT_STUB_AUTH_JWE");
    std::freopen("/dev/null", "w", stdout);
    return true;
  }();
  (void)done;
}

void extract(const std::string& stream) {
  const std::string home = shellctl::fuzz::fresh_home();
  std::size_t at = 0;
  (void)cli::extract_agent_home(home, [&](char* buf, std::size_t cap) -> std::ptrdiff_t {
    const std::size_t n = std::min(cap, stream.size() - at);
    std::memcpy(buf, stream.data() + at, n);
    at += n;
    return static_cast<std::ptrdiff_t>(n);
  });
  shellctl::fuzz::abort_if_escaped();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  init_once();
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      try {
        const std::string url = cli::parse_endpoint(input);
        if (url.find("/agent-stub") == std::string::npos) std::abort();
      } catch (const cli::cli_error& e) {
        if (e.message.empty()) std::abort();
      }
      break;
    case 1:
      if (cli::structured_error(400, input).rfind("HTTP 400: ", 0) != 0) std::abort();
      (void)cli::legacy_error("op", 500, input);
      break;
    case 2: {  // argv split at NUL bytes, through pre-dispatch and the tree
      std::vector<std::string> args;
      std::size_t start = 0;
      while (start <= input.size() && args.size() < 32) {
        const auto z = input.find('\0', start);
        args.push_back(input.substr(start, z == std::string::npos ? std::string::npos : z - start));
        if (z == std::string::npos) break;
        start = z + 1;
      }
      if (!args.empty() && args[0] == "__dump-cli-help") args[0] = "x";
      const int saved = ::dup(STDERR_FILENO);
      std::freopen("/dev/null", "w", stderr);
      const int rc = cli::run_cli(args);
      std::fflush(stderr);
      ::dup2(saved, STDERR_FILENO);
      ::close(saved);
      if (rc != 0 && rc != 1) std::abort();
      break;
    }
    case 3: {
      std::string z(ZSTD_compressBound(input.size()), '\0');
      const std::size_t n = ZSTD_compress(z.data(), z.size(), input.data(), input.size(), 1);
      if (ZSTD_isError(n)) return 0;
      z.resize(n);
      extract(z);
      break;
    }
    default:
      extract(input);
      break;
  }
  return 0;
}
