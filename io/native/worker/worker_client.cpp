#include "io/native/worker/worker_client.hpp"

#include <curl/curl.h>

#include <memory>
#include <mutex>

namespace shellctl::io::native {
namespace {

std::size_t collect(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

worker_answer call_worker(const worker_call& c) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  worker_answer out;
  std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), curl_easy_cleanup);
  if (!h) {
    out.error = "curl_easy_init failed";
    return out;
  }
  CURL* e = h.get();
  curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, c.socket_path.c_str());
  // The host part names nothing: the socket is the peer.
  const std::string url = "http://worker" + c.target;
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c.method.c_str());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c.timeout_ms);
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
  struct curl_slist* headers = nullptr;
  const std::string auth = "Authorization: Bearer " + c.control_token;
  headers = curl_slist_append(headers, auth.c_str());
  headers = curl_slist_append(headers, "Expect:");
  if (c.method == "POST" || !c.body.empty()) {
    headers = curl_slist_append(headers, "Content-Type: application/json");
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, c.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(c.body.size()));
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &out.body);
  const CURLcode rc = curl_easy_perform(e);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    out.error = curl_easy_strerror(rc);
    out.body.clear();
    return out;
  }
  out.reached = true;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &out.status);
  char* type = nullptr;
  if (curl_easy_getinfo(e, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK && type) out.content_type = type;
  return out;
}

}  // namespace shellctl::io::native
