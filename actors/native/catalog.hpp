#pragma once
// native_catalog: the supervisor catalog's only writer
// (docs/native-scopes.md "The scope service"), on its own thread (detached) because every commit
// waits for the disk (synchronous=FULL). Scope actors commit each state before they act on it;
// the registry reads tombstones and, at startup, the retained scopes. A catalog error is answered
// as such: the asker decides (a scope whose state cannot be committed is not acted on).
#include <memory>

#include "actors/native/interfaces.hpp"

namespace shellctl::actors {

native_catalog_actor::behavior_type native_catalog(native_catalog_actor::pointer self,
                                                   std::shared_ptr<io::native::catalog> db);

}  // namespace shellctl::actors
