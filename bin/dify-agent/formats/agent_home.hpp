#pragma once
// The Home Snapshot archive of `dify-agent home-snapshot` (docs/dify-agent.md), which the
// agent backend stores and later restores into a fresh sandbox. Not the format of shellctl's
// own /v1/snapshot (home_writer/home_reader): exact-path excludes, zstd level 1, directory
// names without a trailing slash, absolute symlinks into Home made relative, and the
// original's extraction rules and messages.
//
// Blocking (walks and writes files).
#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <string_view>

namespace shellctl::dify_agent {

// Home, walked in byte order without following symlinks, as tar (files, directories,
// symlinks; uid/gid 0; no user names; whole-second mtimes; PAX records only for what USTAR
// cannot hold) in one zstd frame at level 1, handed to `sink` chunk by chunk. `excludes`
// are normalized relative paths: each drops itself and everything below it. Returns "" or
// the error ("pack HOME: …"); a sink returning false ends it with "pack HOME: stopped".
std::string write_agent_home(const std::string& home, const std::set<std::string>& excludes,
                             const std::function<bool(std::string_view)>& sink);

// Extracts a tar.zst read from `source` (fills up to cap bytes; 0 at the end, -1 on error)
// into the empty directory `home`. Returns "" or the error, with the original's messages
// for bad names, duplicates, hard links and special entries. The whole zstd stream is read:
// a truncated or trailing-garbage tail is an error.
std::string extract_agent_home(const std::string& home,
                               const std::function<std::ptrdiff_t(char*, std::size_t)>& source);

}  // namespace shellctl::dify_agent
