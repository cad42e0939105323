#pragma once
// The native test supervisor's startup checks (docs/native-scopes.md "The scope service",
// guarantee S9): every primitive a scope needs, looked at on the real host before anything is
// bound or written. A missing one rejects setup: `serve --native-test-supervisor` stops at the
// first failure, `--native-check` runs them all and prints them. Nothing here changes the host:
// the namespace probe's mounts die with its namespaces, the catalog is only read.
//
// Also the capability document and its digest, which creation pins, and the token
// derivation the catalog's fingerprint is made from (S7).
#include <string>
#include <vector>

namespace shellctl::io::native {

// What the checks are given (from serve_config and the helper search).
struct supervisor_setup {
  std::string token;
  std::string state_dir;
  std::string base_root, input_root, image_root;
  std::string unit_cgroup;  // SHELLCTL_NATIVE_CGROUP (a cgroup path, "/a/b"); "" = derive
  std::string mediator;     // "IP:port" or ""
  std::string runner;       // the shellctl-runner found, "" = none
};

struct check_result {
  std::string id;
  bool ok = false;
  std::string detail;
};

// The capability document (GET /v1/native-test/capabilities) without its digest.
struct capabilities {
  int landlock_abi = 0;
  std::string apparmor_profile;                 // "" = none in force (JSON null)
  std::vector<std::string> cgroup_controllers;  // delegated to the unit cgroup, sorted
  std::string mediator;                         // "" = none (JSON null)
  int max_jobs = 64;
  std::string proxy = "127.0.0.1:3128";
};
constexpr const char* kProtocol = "dify-native-test/1";
constexpr const char* kAppArmorProfile = "dify-native-test-supervisor";

// Canonical JSON (keys sorted, no spaces) of the document, `protocol` included.
std::string capability_json(const capabilities& c);
// "sha256:" + the hex SHA-256 of capability_json.
std::string capability_digest(const capabilities& c);

// K_tok = HMAC-SHA256(T, "dify-native/scope-token/v1"), and the catalog's fingerprint of
// it: the hex SHA-256 of K_tok (S7: it must not change while scopes are retained).
std::string scope_token_key(const std::string& control_token);
std::string key_fingerprint(const std::string& control_token);

struct check_report {
  std::vector<check_result> checks;  // in the order they run
  capabilities found;                // as far as the host shows them
  std::string unit_dir;              // the unit cgroup's directory ("" = not found)
  bool ok() const;
  const check_result* first_failure() const;
  // {"ok":…,"checks":[{"id","ok","detail"}…],"capability_digest":"sha256:…"}
  std::string json() const;
};

check_report run_checks(const supervisor_setup& s);

}  // namespace shellctl::io::native
