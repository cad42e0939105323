#pragma once
// shellctl-home: the process that performs every operation of the server on Home (the
// snapshot's save and restore, the file API), confined like a job of that HOME
// (io/home/confine.hpp). The server never opens, creates, links, renames, chmods or removes
// a path in a tree a job writes; it starts this helper (io/home/spawn.hpp) and talks to it
// in frames (io/home/frames.hpp, io/home/wire.hpp):
//
//   shellctl-home save|restore|files --home DIR --state-dir DIR --root-mount DIR
//       [--home-as PATH] [--file-root DIR]... [--ro DIR]... [--no-namespaces]
//       [--landlock-optional]
//
//   fd 0  the control socket (Unix, stream): requests in, replies out; the file worker
//         gets its channels here, each a socket of its own with one request at a time
//   fd 1  save: the archive out (a pipe the server reads); restore: the archive in
//   fd 2  the server's stderr (setup failures are also said in a reply)
//
// save     reads {save, excludes, skip}; writes tar+zstd to fd 1 (never following a
//          symlink, never the state dir, by identity); replies {ok|failed, count}.
// restore  reads {restore, skip}; extracts fd 1 into Home; replies {ok|malformed|failed,
//          count = entries, bytes = bytes written}.
// files    reads {files, skip} (the state dir's linked files), replies {ok} once serving,
//          then takes channels until the control socket closes; on each channel one
//          request after another: stat, list, mkdir, remove, move (a reply each), open_read
//          (the reply carries the open file), open_write (the reply carries the temporary
//          file; the server writes it, then sends commit, or discard (or closes the channel)
//          to drop it).
#include <string>
#include <vector>

namespace shellctl::io::home {

// The helper's main: returns its exit code.
int helper_main(const std::vector<std::string>& args);

}  // namespace shellctl::io::home
