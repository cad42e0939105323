#include "io/native/scope/scope_token.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <stdexcept>

#include "io/text/base64url.hpp"

namespace shellctl::io::native {
namespace {

using text::base64url;
using text::unbase64url;

constexpr std::string_view kPrefix = "nst1.";
constexpr std::size_t kNonceBytes = 16;
constexpr std::size_t kMacBytes = 32;

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), md, &len);
  return std::string(reinterpret_cast<char*>(md), len);
}

std::string token_mac(const std::string& control_token, const worker_identity& id,
                      std::string_view nonce_text) {
  const auto k_tok = hmac_sha256(control_token, "dify-native/scope-token/v1");
  std::string msg = "nst1|" + id.scope_id + "|" + std::to_string(id.generation) + "|" +
                    std::to_string(id.worker_pid) + "|" + std::to_string(id.worker_starttime) +
                    "|" + id.boot_id + "|";
  msg.append(nonce_text);
  return hmac_sha256(k_tok, msg);
}


}  // namespace

std::string mint_scope_token(const std::string& control_token, const worker_identity& id,
                             std::string_view nonce) {
  const std::string nonce_text = base64url(nonce);
  return std::string(kPrefix) + nonce_text + "." + base64url(token_mac(control_token, id, nonce_text));
}

namespace {

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  if (::getrandom(out.data(), n, 0) != static_cast<ssize_t>(n))
    throw std::runtime_error("getrandom: no randomness for a scope credential");
  return out;
}

}  // namespace

std::string new_scope_token(const std::string& control_token, const worker_identity& id) {
  return mint_scope_token(control_token, id, random_bytes(kNonceBytes));
}

std::string new_worker_nonce() { return base64url(random_bytes(kNonceBytes)); }

bool verify_scope_token(const std::string& control_token, const worker_identity& id,
                        std::string_view token) {
  if (token.substr(0, kPrefix.size()) != kPrefix) return false;
  token.remove_prefix(kPrefix.size());
  const auto dot = token.find('.');
  if (dot == std::string_view::npos) return false;
  const auto nonce_text = token.substr(0, dot);
  const auto nonce = unbase64url(nonce_text);
  const auto mac = unbase64url(token.substr(dot + 1));
  if (!nonce || nonce->size() != kNonceBytes || !mac || mac->size() != kMacBytes) return false;
  const auto want = token_mac(control_token, id, nonce_text);
  return CRYPTO_memcmp(want.data(), mac->data(), kMacBytes) == 0;
}

std::string worker_control_token(const std::string& control_token, const std::string& scope_id,
                                 std::uint64_t generation, const std::string& worker_nonce) {
  const auto k_ctl = hmac_sha256(control_token, "dify-native/worker-control/v1");
  return base64url(
      hmac_sha256(k_ctl, scope_id + "|" + std::to_string(generation) + "|" + worker_nonce));
}

}  // namespace shellctl::io::native
