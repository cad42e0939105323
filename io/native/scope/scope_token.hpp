#pragma once
// The native test supervisor's credentials (docs/native-scopes.md "The scope service"), pure
// functions of the control token T:
// * the scope token (the transport handle a client sends as X-Scope-Token):
//   `nst1.<nonce>.<mac>` in base64url, mac = HMAC(K_tok, "nst1|scope_id|generation|
//   worker_pid|worker_starttime|boot_id|<nonce as sent>"), K_tok = HMAC-SHA256(T,
//   "dify-native/scope-token/v1"). Stateless: it verifies exactly while the worker identity,
//   the generation and T are those it was minted for, and never needs storing.
// * the worker control token: HMAC(K_ctl, "scope_id|generation|worker_nonce"), K_ctl =
//   HMAC-SHA256(T, "dify-native/worker-control/v1"), base64url; recomputable after a
//   restart (hence T must stay stable while scopes are retained, S7).
// base64url is io/text/base64url.hpp's, canonical (one text per byte string).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shellctl::io::native {

// Who a scope's worker is: fixed at its spawn, committed with the scope (S11).
struct worker_identity {
  std::string scope_id;
  std::uint64_t generation = 0;
  long worker_pid = 0;
  std::uint64_t worker_starttime = 0;  // /proc/<pid>/stat field 22
  std::string boot_id;
};

// A token over `nonce` (raw bytes; the caller draws 16 random ones, see new_scope_token).
std::string mint_scope_token(const std::string& control_token, const worker_identity& id,
                             std::string_view nonce);
std::string new_scope_token(const std::string& control_token, const worker_identity& id);
// True only for a well-formed token minted with this T for exactly this identity; the
// MAC is compared in constant time.
bool verify_scope_token(const std::string& control_token, const worker_identity& id,
                        std::string_view token);

// A worker's nonce (16 random bytes, base64url), drawn once per spawn and kept in the
// catalog: with T it recomputes the worker control token after a restart.
std::string new_worker_nonce();

std::string worker_control_token(const std::string& control_token, const std::string& scope_id,
                                 std::uint64_t generation, const std::string& worker_nonce);

}  // namespace shellctl::io::native
