#pragma once
// The Agent Stub's HTTP conventions (docs/dify-agent.md): control-plane calls to
// `<base><path>` with the bearer JWE and a 30 s bound, signed data-plane URLs without it,
// streamed multipart uploads, and the original's error texts (structured decoding, the
// expired-authorization advice, a signed URL never shown).
#include <cstddef>
#include <functional>
#include <string>

#include "bin/dify-agent/environment.hpp"
#include "bin/dify-agent/client/http_transfer.hpp"

namespace shellctl::dify_agent {

// `HTTP <status>: <message>` from an error body (the structured decoding).
std::string structured_error(long status, const std::string& body);
// `agent stub <op> failed (HTTP <n>): <detail value or raw body>` (drive's legacy decoding).
std::string legacy_error(const std::string& op, long status, const std::string& body);

// Go's json.Marshal of a string (HTML-sensitive characters escaped).
std::string json_string(const std::string& s);

class stub_client {
 public:
  explicit stub_client(environment env) : env_(std::move(env)) {}

  struct reply {
    long status = 0;
    std::string body;
  };

  // A control-plane exchange; a transport failure throws `request failed: …`. The status
  // is the caller's to judge (ok() below for the structured rule). Its answer is JSON and
  // held whole, so it is bounded: past `max_body` (8 MiB unless the caller says less) the
  // transfer stops and the command fails with one line (a file's bytes never come this
  // way: downloads stream to disk).
  static constexpr std::size_t control_plane_max_body = 8u << 20;
  reply call(const std::string& method, const std::string& path, const std::string& json_body,
             long timeout_ms = 30000, std::size_t max_body = control_plane_max_body) const;

  // call() whose status ≥ 400 throws `agent stub <op> failed: HTTP …`.
  std::string ok(const std::string& method, const std::string& path, const std::string& json_body,
                 const std::string& op) const;

  // A signed upload URL for a tool file (POST /files/upload-request?expose_expiration=true).
  // Throws the stub's error or `signed file upload response is missing upload_url`; the
  // caller adds its own context.
  std::string upload_url(const std::string& filename, const std::string& mimetype) const;

  // Multipart upload of `path` to a signed URL (data plane); returns the response body.
  // Errors carry the original's texts and never the URL.
  std::string upload_file(const std::string& url, const std::string& path,
                          const std::string& filename, const std::string& mimetype) const;

  // GET a signed URL into `sink` (120 s bound). Errors never carry the URL.
  void download(const std::string& url, const std::function<bool(const char*, std::size_t)>& sink) const;

  const environment& env() const { return env_; }

 private:
  environment env_;
};

}  // namespace shellctl::dify_agent
