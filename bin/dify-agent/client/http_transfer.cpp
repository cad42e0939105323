#include "bin/dify-agent/client/http_transfer.hpp"

#include <curl/curl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

namespace shellctl::dify_agent {

namespace {

// Set by the signal handler, read by every transfer's thread (the pulls run four at a
// time, home-snapshot runs two): a lock-free atomic is both signal- and thread-safe.
std::atomic<bool> g_cancelled{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

void on_signal(int) { g_cancelled.store(true, std::memory_order_relaxed); }

struct exchange {
  CURL* handle = nullptr;
  const http_request* req = nullptr;
  http_response* res = nullptr;
  bool too_large = false, sink_failed = false, source_failed = false;
  bool progress = false;
  std::chrono::steady_clock::time_point last_progress{};
  bool progress_shown = false;
};

std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user) {
  auto* x = static_cast<exchange*>(user);
  const std::size_t len = size * n;
  long status = 0;
  curl_easy_getinfo(x->handle, CURLINFO_RESPONSE_CODE, &status);
  // An error answer's body is its message: kept in `body`, never handed to the sink.
  if (x->req->sink && status < 400) {
    if (!x->req->sink(data, len)) {
      x->sink_failed = true;
      return 0;
    }
    return len;
  }
  if (x->res->body.size() + len > x->req->max_body) {
    x->res->body.append(data, x->req->max_body - x->res->body.size());
    x->too_large = true;
    return 0;  // stops the transfer: nothing beyond the cap is read
  }
  x->res->body.append(data, len);
  return len;
}

std::size_t on_read(char* buf, std::size_t size, std::size_t n, void* user) {
  auto* x = static_cast<exchange*>(user);
  const std::ptrdiff_t got = x->req->source(buf, size * n);
  if (got < 0) {
    x->source_failed = true;
    return CURL_READFUNC_ABORT;
  }
  return static_cast<std::size_t>(got);
}

std::string mib(curl_off_t n) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(n) / (1024.0 * 1024.0));
  return b;
}

int on_progress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                curl_off_t ulnow) {
  if (cancelled()) return 1;  // CURLE_ABORTED_BY_CALLBACK
  auto* x = static_cast<exchange*>(user);
  if (!x->progress) return 0;
  const curl_off_t now = ulnow > 0 ? ulnow : dlnow;
  const curl_off_t total = ulnow > 0 ? ultotal : dltotal;
  constexpr curl_off_t threshold = 4 << 20;  // "over a few MB": small transfers stay quiet
  if (now < threshold) return 0;
  const auto t = std::chrono::steady_clock::now();
  if (x->progress_shown && t - x->last_progress < std::chrono::milliseconds(200)) return 0;
  x->last_progress = t;
  x->progress_shown = true;
  std::string line = "\r" + x->req->progress_label + " " + mib(now);
  if (total > 0) line += " / " + mib(total);
  line += "\033[K";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
  return 0;
}

}  // namespace

void cancel_on_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

bool cancelled() { return g_cancelled.load(std::memory_order_relaxed); }

http_response perform(const http_request& req) {
  static const bool initialized = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  http_response res;
  if (!initialized) return res;
  if (cancelled()) {
    res.outcome = transfer_outcome::cancelled;
    return res;
  }
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return res;
  CURL* h = curl.get();
  exchange x;
  x.handle = h;
  x.req = &req;
  x.res = &res;
  x.progress = !req.progress_label.empty() && ::isatty(STDERR_FILENO) == 1;

  curl_slist* headers = nullptr;
  for (const auto& hd : req.headers) headers = curl_slist_append(headers, hd.c_str());
  // curl would add "Expect: 100-continue" to streamed bodies and wait for it; Go never does.
  headers = curl_slist_append(headers, "Expect:");
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_guard(headers, curl_slist_free_all);

  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "dify-agent");
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, nullptr);
  if (req.timeout_ms > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req.timeout_ms);
  if (req.source) {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);  // a body from the read callback, chunked
    curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(h, CURLOPT_READDATA, &x);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  } else if (req.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    if (req.method != "POST") curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }

  const CURLcode rc = curl_easy_perform(h);
  if (x.progress_shown) (void)!::write(STDERR_FILENO, "\n", 1);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &res.status);
  if (rc == CURLE_OK) {
    res.outcome = transfer_outcome::ok;
  } else if (x.too_large) {
    res.outcome = transfer_outcome::too_large;
  } else if (x.sink_failed) {
    res.outcome = transfer_outcome::sink_failed;
  } else if (x.source_failed) {
    res.outcome = transfer_outcome::source_failed;
  } else if (cancelled() || rc == CURLE_ABORTED_BY_CALLBACK) {
    res.outcome = transfer_outcome::cancelled;
  } else if (rc == CURLE_OPERATION_TIMEDOUT) {
    res.outcome = transfer_outcome::timed_out;
  } else {
    res.outcome = transfer_outcome::transport;
  }
  return res;
}

}  // namespace shellctl::dify_agent
