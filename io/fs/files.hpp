#pragma once
// Small file-system helpers with the exact modes the on-disk layout requires.
//
// Two error forms, one per kind of caller: the server's (actors) throw std::system_error;
// the forms taking `std::string& err` never throw and are for code that runs in a job's
// own processes (runner, its PID 1), where nothing may unwind past a fork.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace shellctl::io::fs {

// write(2) until everything is written (EINTR retried). False on any other error.
bool write_all(int fd, const char* data, std::size_t size);
// Creates/truncates `path` with `mode` and writes `data`. Throws std::system_error.
void write_file(const std::string& path, std::string_view data, unsigned mode);
// Writes `data` to a temporary file beside `path` and renames it over `path`: a reader
// sees the old content or all of the new, never part of it. False (and `err`) on failure.
bool write_file_atomic(const std::string& path, std::string_view data, unsigned mode,
                       std::string& err);
// mkdir with `mode`; returns false if it already exists. Throws on other errors.
bool make_dir(const std::string& path, unsigned mode);
// mkdir -p with `mode` for the created components (existing ones are left as they are).
void make_dirs(const std::string& path, unsigned mode);  // throws
bool make_dirs(const std::string& path, unsigned mode, std::string& err);
bool exists(const std::string& path);
// The names in a directory but . and .., in byte order (the order archives are written in);
// false with errno set when it cannot be opened or read.
bool sorted_entry_names(const std::string& dir, std::vector<std::string>& names);
bool is_dir(const std::string& path);
// True when the file exists and holds something other than whitespace.
bool non_empty_file(const std::string& path);
// Whole file, or "" when unreadable.
std::string read_small_file(const std::string& path);
// Whole file into `out`, telling "not there" from "could not be read" (out of descriptors,
// I/O error): only the first is evidence about the file.
// At most `limit` bytes are read (and a little more kept: a caller that checks the size
// sees the file was larger).
enum class read_result { ok, missing, error };
read_result read_small_file_checked(const std::string& path, std::string& out,
                                    std::size_t limit = std::size_t{1} << 20);
// rm -rf; errors ignored (best effort, as the original).
void remove_tree(const std::string& path);
// The first, instant half of removing a directory that other processes may still write
// into by path (a job's pipe finalizer, run by tmux, recreates markers in its job dir): it
// is renamed into `trash_dir` (created when missing; same file system), so that nothing
// can recreate it under its name and nobody listing its parent sees it go. Returns what
// remove_tree must then remove: the tombstone, `path` itself when it could not be moved,
// or "" when it does not exist.
std::string move_aside(const std::string& path, const std::string& trash_dir);
// Absolute, lexically cleaned path (like Go's filepath.Abs): no symlink resolution.
std::string absolute_clean(const std::string& path);
std::string join(const std::string& a, const std::string& b);
// The directory part of `path` ("/" for "/x", "." for "x"), lexically.
std::string parent_of(const std::string& path);
// realpath(3), or `path` itself when it cannot be resolved.
std::string canonical_or(const std::string& path);

}  // namespace shellctl::io::fs
