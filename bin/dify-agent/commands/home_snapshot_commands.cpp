// home-snapshot upload | download (docs/dify-agent.md, hidden): the agent backend's path for
// saving and restoring a sandbox's Home through the Agent Stub. Both directions stream: the
// archive is produced (or extracted) on a second thread joined through a pipe, so memory
// stays flat whatever Home holds, and a signal or a failed request stops both sides.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <dirent.h>
#include <set>
#include <thread>

#include "bin/dify-agent/cli.hpp"
#include "bin/dify-agent/environment.hpp"
#include "bin/dify-agent/local/local_paths.hpp"
#include "bin/dify-agent/client/stub_client.hpp"
#include "bin/dify-agent/formats/agent_home.hpp"

namespace shellctl::dify_agent {

namespace {

constexpr const char* archive_path = "/home-snapshots/archive";
constexpr std::size_t max_error_body = 64 * 1024;

std::string snapshot_home() {
  const char* raw = std::getenv("HOME");
  std::string home = raw ? raw : "";
  const char* ws = " \t\n\r\v\f";
  const auto b = home.find_first_not_of(ws);
  home = b == std::string::npos ? "" : home.substr(b, home.find_last_not_of(ws) - b + 1);
  if (home.empty()) throw cli_error{"HOME must be set"};
  if (home[0] != '/') throw cli_error{"HOME must be an absolute path"};
  home = clean_path(home);
  struct stat st {};
  if (::stat(home.c_str(), &st) != 0) throw cli_error{"stat HOME: stat " + home + ": " + go_errno_text(errno)};
  if (!S_ISDIR(st.st_mode)) throw cli_error{"HOME must be a directory"};
  return home;
}

std::set<std::string> normalize_excludes(const std::vector<std::string>& raw) {
  std::set<std::string> out;
  for (const auto& x : raw) {
    if (x.empty() || x[0] == '/' || x.find('\\') != std::string::npos)
      throw cli_error{"invalid Home Snapshot exclude " + go_quote(x)};
    if (x.find_first_of("*?[") != std::string::npos)
      throw cli_error{"Home Snapshot exclude must not be a glob: " + go_quote(x)};
    const std::string c = clean_path(x);
    if (c == "." || c == ".." || c.rfind("../", 0) == 0)
      throw cli_error{"invalid Home Snapshot exclude " + go_quote(x)};
    if (c != x) throw cli_error{"Home Snapshot exclude must be normalized: " + go_quote(x)};
    out.insert(c);
  }
  return out;
}

// Writes all of `data` to a pipe; false once the reader is gone (EPIPE: SIGPIPE is ignored).
bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

std::ptrdiff_t read_some(int fd, char* buf, std::size_t cap) {
  for (;;) {
    const ssize_t n = ::read(fd, buf, cap);
    if (n < 0 && errno == EINTR) {
      if (cancelled()) return -1;
      continue;
    }
    return n;
  }
}

void upload(const std::vector<std::string>& raw_excludes) {
  const environment env = read_environment();
  const std::string home = snapshot_home();
  const auto excludes = normalize_excludes(raw_excludes);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw cli_error{"create pipe: " + go_errno_text(errno)};
  std::string producer_error;
  std::atomic<bool> producer_failed{false};
  std::thread producer([&] {
    producer_error = dify_agent::write_agent_home(home, excludes, [&](std::string_view chunk) {
      return !cancelled() && write_all(p[1], chunk.data(), chunk.size());
    });
    producer_failed.store(!producer_error.empty(), std::memory_order_release);
    ::close(p[1]);
  });
  http_request req;
  req.method = "PUT";
  req.url = env.base_url + archive_path;
  req.headers = {"Authorization: Bearer " + env.jwe, "Content-Type: application/zstd"};
  req.max_body = max_error_body;
  req.progress_label = "uploading Home Snapshot";
  // The pipe's end is the body's end only when the producer succeeded: a failed one makes
  // the read abort the request, so the stub never receives a cut archive as complete.
  req.source = [&](char* buf, std::size_t cap) -> std::ptrdiff_t {
    const std::ptrdiff_t n = read_some(p[0], buf, cap);
    if (n == 0 && producer_failed.load(std::memory_order_acquire)) return -1;
    return n;
  };
  auto res = perform(req);
  ::close(p[0]);  // a producer still writing gets EPIPE and stops
  producer.join();
  if (res.outcome == transfer_outcome::ok || res.outcome == transfer_outcome::too_large) {
    if (res.status < 200 || res.status >= 300)
      throw cli_error{legacy_error("Home Snapshot upload", res.status, res.body)};
    if (!producer_error.empty()) throw cli_error{producer_error};
    return;
  }
  if (res.outcome == transfer_outcome::cancelled)
    throw cli_error{"Home Snapshot upload request failed: context canceled"};
  if (!producer_error.empty()) throw cli_error{"Home Snapshot upload request failed: " + producer_error};
  throw cli_error{"Home Snapshot upload request failed: connection failed"};
}

void download() {
  const environment env = read_environment();
  const std::string home = snapshot_home();
  DIR* d = ::opendir(home.c_str());
  if (!d) throw cli_error{"read HOME: open " + home + ": " + go_errno_text(errno)};
  bool empty = true;
  while (auto* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") empty = false;
  }
  ::closedir(d);
  if (!empty) throw cli_error{"HOME must be empty before Home Snapshot download"};

  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw cli_error{"create pipe: " + go_errno_text(errno)};
  http_response res;
  std::thread fetcher([&] {
    http_request req;
    req.url = env.base_url + archive_path;
    req.headers = {"Authorization: Bearer " + env.jwe};
    req.max_body = max_error_body;
    req.progress_label = "downloading Home Snapshot";
    req.sink = [&](const char* data, std::size_t n) { return write_all(p[1], data, n); };
    res = perform(req);
    ::close(p[1]);
  });
  const std::string extract_error = dify_agent::extract_agent_home(
      home, [&](char* buf, std::size_t cap) { return read_some(p[0], buf, cap); });
  ::close(p[0]);  // an extraction that stopped early ends the transfer (EPIPE)
  fetcher.join();
  if (res.outcome == transfer_outcome::ok && (res.status < 200 || res.status >= 300))
    throw cli_error{legacy_error("Home Snapshot download", res.status, res.body)};
  if (res.outcome == transfer_outcome::cancelled)
    throw cli_error{"Home Snapshot download request failed: context canceled"};
  if (res.outcome != transfer_outcome::ok && res.outcome != transfer_outcome::sink_failed)
    throw cli_error{"Home Snapshot download request failed: connection failed"};
  if (!extract_error.empty()) throw cli_error{extract_error};
}

}  // namespace

std::unique_ptr<command> make_home_snapshot_command() {
  auto hs = std::make_unique<command>("home-snapshot", "Transfer a backend-controlled Home Snapshot archive.");
  hs->hidden();
  hs->add(std::make_unique<command>("upload", "Stream the current HOME to the Home Snapshot gateway."))
      .hidden()
      .args(arg_rule::none)
      .flag({"exclude", 0, flag_kind::string_array, "Exclude one normalized path relative to HOME.", "", true})
      .run([](const invocation& in) { upload(in.flags.list("exclude")); });
  hs->add(std::make_unique<command>("download", "Restore the Home Snapshot gateway archive into the current HOME."))
      .hidden()
      .args(arg_rule::none)
      .run([](const invocation&) { download(); });
  return hs;
}

}  // namespace shellctl::dify_agent
