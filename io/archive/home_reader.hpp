#pragma once
// The restore half of the home snapshot (docs/snapshots.md "Restore"): a tar+zstd stream read as it
// arrives (libzstd with a 64 MiB window cap, libarchive's tar reader and nothing else) and
// extracted into Home with every file-system operation confined to it: each path is resolved
// by the kernel beneath Home's descriptor (openat2 RESOLVE_BENEATH), so absolute names,
// `..` and symlinks that lead out are refused however they are combined. Not transactional:
// a failure part-way leaves what was extracted so far.
//
// Blocking (it writes files): run it off the scheduler and the loop thread. The body is
// read and decompressed on a second thread (byte_source::read is called there).
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace shellctl::io::archive {

// Where the compressed bytes come from (the request body, as it arrives).
class byte_source {
 public:
  virtual ~byte_source() = default;
  // Up to `cap` bytes into `buf`: the count, 0 at the end, or -1 when the body cannot be
  // read (client gone, deadline): `failure()` says why.
  virtual std::ptrdiff_t read(char* buf, std::size_t cap) = 0;
  virtual std::string failure() const = 0;
  // Called from another thread once the restore no longer wants bytes: a read waiting for
  // more returns (with -1) now. Sources whose reads never wait need not do anything.
  virtual void cancel() {}
};

struct restore_result {
  enum class outcome { ok, malformed, failed };
  outcome result = outcome::failed;
  std::string message;  // malformed: "archive malformed: ..."; failed: the error
  std::int64_t entries = 0;
  std::int64_t bytes_written = 0;
};

// Places no entry may be written in, whatever Home's symlinks lead to: true for the fstat
// of a directory (or a file) that is off limits. The confined helper passes the server's
// state dir this way (io/home/helper.cpp); its world has the state dir read-only anyway,
// and this names the refusal (archive_malformed) instead of the kernel's EROFS.
using restore_filter = std::function<bool(const struct stat&)>;

// `stop` is asked before every entry (deadline, client gone): true ends it as failed.
//
// Whatever Home holds is met with care: a regular file entry never opens (or blocks on) a
// FIFO, socket or device at its name (archive_malformed), a hard link entry only links to a
// file this restore wrote (never to a file Home held before), and set-id bits never
// survive.
restore_result restore_home(const std::string& home, byte_source& body,
                            const std::function<bool()>& stop,
                            const restore_filter& off_limits = {});

}  // namespace shellctl::io::archive
