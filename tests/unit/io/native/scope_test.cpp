// A scope's field rules and tokens (docs/native-scopes.md "The scope service"), the tokens
// against figures computed independently (Python's hmac, hashlib and base64.urlsafe_b64encode).
#include <doctest/doctest.h>

#include <string>

#include "io/native/scope/scope_fields.hpp"
#include "io/native/scope/scope_token.hpp"

namespace native = shellctl::io::native;

namespace {
native::worker_identity identity() {
  return native::worker_identity{"scope-a", 7, 4242, 123456, "boot-1"};
}
std::string nonce16() {
  std::string n;
  for (int i = 0; i < 16; ++i) n += static_cast<char>(i);
  return n;
}
}  // namespace

TEST_CASE("scope ids, generations, binding refs and refs") {
  for (const char* ok : {"a", "0", "scope-1", "a-", "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123"})
    CHECK_MESSAGE(native::valid_scope_id(ok), ok);
  for (const char* bad : {"", "-a", "A", "a_b", "a.b", "a b", "é",
                          "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij1234"})
    CHECK_FALSE_MESSAGE(native::valid_scope_id(bad), bad);

  CHECK(native::parse_generation("1") == 1u);
  CHECK(native::parse_generation("9007199254740991") == native::kMaxGeneration);
  for (const char* bad : {"", "0", "01", "+1", "-1", " 1", "1 ", "1.0", "9007199254740992",
                          "99999999999999999999", "0x10"})
    CHECK_FALSE_MESSAGE(native::parse_generation(bad).has_value(), bad);

  CHECK(native::valid_binding_ref("run 42 / step 3"));
  CHECK(native::valid_binding_ref(std::string(256, 'x')));
  CHECK_FALSE(native::valid_binding_ref(""));
  CHECK_FALSE(native::valid_binding_ref(std::string(257, 'x')));
  CHECK_FALSE(native::valid_binding_ref("tab\there"));
  CHECK_FALSE(native::valid_binding_ref("caf\xc3\xa9"));

  for (const char* ok : {"canary/base", "a", "v1.2/input_file-3.txt", "..a/b..", ".hidden"})
    CHECK_MESSAGE(native::valid_ref(ok), ok);
  for (const char* bad : {"", "/abs", "a//b", "a/", "./a", "a/./b", "a/../b", "..", ".", "a b",
                          "a\\b", "a/b\n", "caf\xc3\xa9"})
    CHECK_FALSE_MESSAGE(native::valid_ref(bad), bad);
}

TEST_CASE("limits: positive, bounded, the network pair, memory over the tmpfs budgets") {
  native::scope_limits l;
  l.cpu_millicores = 1000;
  l.memory_bytes = 1ull << 30;
  l.pids = 256;
  l.disk_bytes = 256ull << 20;
  l.input_bytes = 1 << 20;
  l.output_bytes = 8 << 20;
  l.max_jobs = 64;
  l.job_wall_seconds = 600;
  l.open_files = 1024;
  l.file_bytes = 64 << 20;
  CHECK(native::limits_problem(l, false) == "");
  CHECK(native::limits_problem(l, true).find("network_bytes must be greater than 0") != std::string::npos);
  auto n = l;
  n.network_bytes = 1000;
  n.network_connections = 10;
  CHECK(native::limits_problem(n, true) == "");
  CHECK(native::limits_problem(n, false).find("must be 0 without network targets") != std::string::npos);
  auto z = l;
  z.pids = 0;
  CHECK(native::limits_problem(z, false) == "limits.pids must be greater than 0");
  z = l;
  z.swap_bytes = 0;  // may be 0
  CHECK(native::limits_problem(z, false) == "");
  z.max_jobs = 65;
  CHECK(native::limits_problem(z, false).find("at most 64") != std::string::npos);
  // memory must exceed disk + 2*input + output + 34 MiB: exactly equal is refused.
  z = l;
  z.memory_bytes = z.disk_bytes + 2 * z.input_bytes + z.output_bytes + (34ull << 20);
  CHECK(native::limits_problem(z, false).find("memory_bytes must exceed") != std::string::npos);
  ++z.memory_bytes;
  CHECK(native::limits_problem(z, false) == "");
  z.disk_bytes = UINT64_MAX - 1;  // no wrap-around lets it through
  CHECK(native::limits_problem(z, false).find("memory_bytes must exceed") != std::string::npos);
}

TEST_CASE("scope tokens: the MAC of docs/native-scopes.md, bound to the identity, the generation and T") {
  const auto token = native::mint_scope_token("control-token", identity(), nonce16());
  // python3: hmac.new(K_tok, b"nst1|scope-a|7|4242|123456|boot-1|AAECAwQFBgcICQoLDA0ODw", sha256)
  CHECK(token == "nst1.AAECAwQFBgcICQoLDA0ODw.5GkRf_iqHRJ4Vofc6rFmOXnRZbzofJJKZjX8MSZBMKM");
  CHECK(native::verify_scope_token("control-token", identity(), token));
  // Dies with the worker identity, the generation or the control token.
  auto other = identity();
  other.generation = 8;
  CHECK_FALSE(native::verify_scope_token("control-token", other, token));
  other = identity();
  other.worker_pid = 4243;
  CHECK_FALSE(native::verify_scope_token("control-token", other, token));
  other = identity();
  other.worker_starttime = 123457;
  CHECK_FALSE(native::verify_scope_token("control-token", other, token));
  other = identity();
  other.boot_id = "boot-2";
  CHECK_FALSE(native::verify_scope_token("control-token", other, token));
  other = identity();
  other.scope_id = "scope-b";
  CHECK_FALSE(native::verify_scope_token("control-token", other, token));
  CHECK_FALSE(native::verify_scope_token("control-token2", identity(), token));
  // Malformed or tampered.
  for (std::string bad : {std::string(""), std::string("nst1."), token.substr(0, token.size() - 1),
                          token + "A", "nst2" + token.substr(4), token.substr(0, 10) + "." + token.substr(10)}) {
    CAPTURE(bad);
    CHECK_FALSE(native::verify_scope_token("control-token", identity(), bad));
  }
  auto flipped = token;
  flipped[8] = flipped[8] == 'A' ? 'B' : 'A';  // another nonce
  CHECK_FALSE(native::verify_scope_token("control-token", identity(), flipped));
  // Fresh tokens differ and verify.
  const auto a = native::new_scope_token("control-token", identity());
  const auto b = native::new_scope_token("control-token", identity());
  CHECK(a != b);
  CHECK(native::verify_scope_token("control-token", identity(), a));
  CHECK(native::verify_scope_token("control-token", identity(), b));
}

TEST_CASE("the worker control token") {
  // python3: hmac.new(K_ctl, b"scope-a|7|wn", sha256), base64url
  CHECK(native::worker_control_token("control-token", "scope-a", 7, "wn") ==
        "i4bpcRABdJvLtM2Qfn54deToB__2Tdihzf--QsKoSHA");
  CHECK(native::worker_control_token("control-token", "scope-a", 8, "wn") !=
        native::worker_control_token("control-token", "scope-a", 7, "wn"));
}
