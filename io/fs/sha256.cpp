#include "io/fs/sha256.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace shellctl::io::fs {

struct sha256::state {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~state() { EVP_MD_CTX_free(ctx); }
};

sha256::sha256() : s_(std::make_unique<state>()) {
  if (s_->ctx == nullptr || EVP_DigestInit_ex(s_->ctx, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: out of memory");
}

sha256::~sha256() = default;

void sha256::update(std::string_view bytes) { EVP_DigestUpdate(s_->ctx, bytes.data(), bytes.size()); }

std::string sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(s_->ctx, md, &n);
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += digits[md[i] >> 4];
    out += digits[md[i] & 0xF];
  }
  return out;
}

}  // namespace shellctl::io::fs
