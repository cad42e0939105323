#pragma once
// The messages between the server and its confined Home helper (shellctl-home, see
// io/home/helper.hpp): one request, one reply, each the payload of one frame
// (io/home/frames.hpp). The helper runs confined like a job, in a tree a hostile job writes:
// the server treats every reply as untrusted input. Decoding is strict (every length
// bounded, enums checked, nothing left over) and fuzzed (tests/fuzz/home).
//
// Layout: little-endian integers; a string is a u32 length and its bytes. A request is
// [u8 op][str path][str to][u64 limit][u8 flag][u8 has_mode][u32 mode][u32 n][n × str
// exclude][u32 m][m × (u64 dev, u64 ino)]; a reply is [u8 status][str message][str path]
// [meta][u32 n][n × meta][u8 truncated][u64 count][u64 bytes], where meta is [str name]
// [u8 type][u64 size][u32 mode][i64 mtime][u8 has_target][str target].
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/fs/file_ops.hpp"

namespace shellctl::io::home {

enum class op : std::uint8_t {
  stat = 1,    // path → meta (lstat)
  list,        // path, limit → entries, truncated
  mkdir,       // path, flag = parents, mode → path
  remove,      // path, flag = recursive → path
  move,        // path (from), to, flag = overwrite → path
  open_read,   // path → path, meta, and the open file (a descriptor with the reply)
  open_write,  // path, flag = parents, mode (none: keep) → path, and the temporary file
  commit,      // (after open_write) → path: the temporary file is renamed over the target
  save,        // excludes, skip → count (entries); the archive went down the data pipe
  restore,     // skip → count (entries), bytes (written); the archive came up the data pipe
  files,       // skip → ok once the file worker serves (its first frame)
  discard,     // (after open_write) → ok once the temporary file is gone (an upload that failed)
};
constexpr std::uint8_t op_last = static_cast<std::uint8_t>(op::discard);

struct request {
  op kind = op::stat;
  std::string path;
  std::string to;
  std::uint64_t limit = 0;
  bool flag = false;
  std::optional<unsigned> mode;
  std::vector<std::string> excludes;
  // The state dir's files that have other names, by identity (device, inode): a save
  // leaves them out, a restore never writes into one, the file API refuses them.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> skip;
};

enum class status : std::uint8_t {
  ok = 0,
  // The file API's failures (io::fs::file_errc, in its order).
  invalid_path,
  denied,
  not_found,
  not_a_directory,
  is_a_directory,
  exists,
  not_empty,
  io,
  // An archive's: what it holds (400 archive_malformed), or the machine (500).
  malformed,
  failed,
};
constexpr std::uint8_t status_last = static_cast<std::uint8_t>(status::failed);

struct reply {
  status st = status::ok;
  std::string message;  // an error's text
  std::string path;     // the absolute path the operation acted on
  fs::entry_meta meta;
  std::vector<fs::entry_meta> entries;
  bool truncated = false;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
};

status status_of(fs::file_errc c);
fs::file_errc file_errc_of(status s);  // an error status of the file API (not ok/malformed/failed)

// Bounds a decoder enforces (a frame is at most max_frame bytes, io/home/frames.hpp).
constexpr std::size_t max_text = 64u << 10;       // a path, a message, a name, a pattern
constexpr std::size_t max_entries = 100000;       // a listing (the API's limit is 10,000)
constexpr std::size_t max_excludes = 16384;
constexpr std::size_t max_skip = 1u << 22;

std::string encode(const request& r);
std::string encode(const reply& r);
// nullopt when the bytes are not exactly one well-formed message.
std::optional<request> decode_request(std::string_view bytes);
std::optional<reply> decode_reply(std::string_view bytes);

}  // namespace shellctl::io::home
