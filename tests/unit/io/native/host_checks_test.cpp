// The native supervisor's capability digest and key fingerprint
// (docs/native-scopes.md "The scope service"), against figures computed independently (Python's
// json, hashlib and hmac), and the check report's shape.
#include <doctest/doctest.h>

#include <string>

#include "io/native/host_checks.hpp"

namespace native = shellctl::io::native;

TEST_CASE("the capability document is canonical JSON: sorted keys, no spaces; its digest") {
  native::capabilities c;
  c.landlock_abi = 7;
  c.apparmor_profile = native::kAppArmorProfile;
  c.cgroup_controllers = {"pids", "cpu", "memory"};  // sorted in the document
  CHECK(native::capability_json(c) ==
        R"({"apparmor_profile":"dify-native-test-supervisor","cgroup_controllers":["cpu","memory","pids"],)"
        R"("landlock_abi":7,"max_jobs":64,"mediator":null,"protocol":"dify-native-test/1","proxy":"127.0.0.1:3128"})");
  // python3: json.dumps(doc, sort_keys=True, separators=(',', ':')), then hashlib.sha256
  CHECK(native::capability_digest(c) ==
        "sha256:e75a3c253322e9b0c196bb2c4b7d5d309e23376f65c9e49218ff57693c6c2e9c");
  // Every field is in the digest: one change moves it.
  auto other = c;
  other.mediator = "10.0.2.2:8080";
  CHECK(native::capability_json(other).find(R"("mediator":"10.0.2.2:8080")") != std::string::npos);
  CHECK(native::capability_digest(other) != native::capability_digest(c));
  other = c;
  other.cgroup_controllers.pop_back();
  CHECK(native::capability_digest(other) != native::capability_digest(c));
  other = c;
  other.apparmor_profile.clear();
  CHECK(native::capability_json(other).find(R"("apparmor_profile":null)") != std::string::npos);
}

TEST_CASE("K_tok = HMAC-SHA256(T, label) and its fingerprint (S7)") {
  // python3: hmac.new(b'control-token', b'dify-native/scope-token/v1', hashlib.sha256)
  const auto k = native::scope_token_key("control-token");
  REQUIRE(k.size() == 32);
  CHECK(static_cast<unsigned char>(k[0]) == 0x7d);
  CHECK(static_cast<unsigned char>(k[31]) == 0xff);
  CHECK(native::key_fingerprint("control-token") ==
        "ded8b8895301e2a85eac3bdb839bbb5a6766cbe9c7908bed06031ed9c223ee4c");
  CHECK(native::key_fingerprint("control-token2") != native::key_fingerprint("control-token"));
}

TEST_CASE("the report: ok only when every check passed; the first failure; its JSON") {
  native::check_report r;
  CHECK(r.ok());
  r.checks = {{"uid", true, "uid 1000"}, {"token", false, "blank"}, {"seccomp", false, "none"}};
  CHECK_FALSE(r.ok());
  REQUIRE(r.first_failure() != nullptr);
  CHECK(r.first_failure()->id == "token");
  const auto j = r.json();
  CHECK(j.rfind(R"({"ok":false,"checks":[{"id":"uid","ok":true,"detail":"uid 1000"},)", 0) == 0);
  CHECK(j.find(R"("capability_digest":"sha256:)") != std::string::npos);
  CHECK(j.back() == '\n');
}
