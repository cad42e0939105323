#pragma once
// The network of a native scope's worker (docs/native-scopes.md "The scope worker", S21): a new
// network namespace has a loopback interface that is down and nothing else; the worker brings
// it up so that its jobs (which share the namespace) have 127.0.0.1 and no route anywhere else.
#include <string>

namespace shellctl::io::sandbox {

// Sets IFF_UP on "lo" in the caller's network namespace. False with `err`.
bool bring_loopback_up(std::string& err);

}  // namespace shellctl::io::sandbox
