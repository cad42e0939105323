#include "io/native/scope_token.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <stdexcept>

namespace shellctl::io::native {
namespace {

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

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

}  // namespace

std::string base64url(std::string_view raw) {
  static const char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  for (; i + 3 <= raw.size(); i += 3) {
    const unsigned v = static_cast<unsigned char>(raw[i]) << 16 |
                       static_cast<unsigned char>(raw[i + 1]) << 8 | static_cast<unsigned char>(raw[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += alphabet[(v >> s) & 63];
  }
  if (raw.size() - i == 1) {
    const unsigned v = static_cast<unsigned char>(raw[i]) << 16;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
  } else if (raw.size() - i == 2) {
    const unsigned v = static_cast<unsigned char>(raw[i]) << 16 | static_cast<unsigned char>(raw[i + 1]) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
  }
  return out;
}

std::optional<std::string> unbase64url(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;  // no whole byte in a lone sixth
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = b64_value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  // The leftover bits must be zero: one text per byte string (no malleable tokens).
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

std::string mint_scope_token(const std::string& control_token, const worker_identity& id,
                             std::string_view nonce) {
  const std::string nonce_text = base64url(nonce);
  return std::string(kPrefix) + nonce_text + "." + base64url(token_mac(control_token, id, nonce_text));
}

std::string new_scope_token(const std::string& control_token, const worker_identity& id) {
  char nonce[kNonceBytes];
  if (::getrandom(nonce, sizeof nonce, 0) != static_cast<ssize_t>(sizeof nonce))
    throw std::runtime_error("getrandom: no randomness for a scope token");
  return mint_scope_token(control_token, id, std::string_view(nonce, sizeof nonce));
}

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
