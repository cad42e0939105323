#pragma once
// SHA-256 of a byte stream (OpenSSL's EVP), as lowercase hex: an upload's digest, computed
// by the server as it writes the bytes (actors/files/file_op.cpp).
#include <memory>
#include <string>
#include <string_view>

namespace shellctl::io::fs {

class sha256 {
 public:
  sha256();
  ~sha256();
  sha256(const sha256&) = delete;
  sha256& operator=(const sha256&) = delete;

  void update(std::string_view bytes);
  std::string hex();  // ends the digest

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace shellctl::io::fs
