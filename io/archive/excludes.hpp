#pragma once
// What a home snapshot leaves out (docs/snapshots.md "Excludes"): the runtime's own state
// directory, always, and the caller's gitignore patterns, with the semantics of go-git v5's
// plumbing/format/gitignore (the original vendors it verbatim): `!` negation, anchoring by
// `/`, `**`, dir-only patterns, and each segment matched like Go's filepath.Match.
#include <string>
#include <string_view>
#include <vector>

namespace shellctl::io::archive {

// Go's filepath.Match on Linux, ported rule for rule: `*`, `?` (one UTF-8 character),
// `[...]` / `[^...]` classes with ranges, `\` escapes. A malformed pattern never matches
// (Go returns ErrBadPattern, which go-git treats as no match).
bool go_path_match(std::string_view pattern, std::string_view name);

// One caller pattern.
class gitignore_pattern {
 public:
  explicit gitignore_pattern(std::string_view text);
  enum class result { no_match, exclude, include };
  // `components`: the entry's path relative to Home, split on '/'.
  result match(const std::vector<std::string_view>& components, bool is_dir) const;

 private:
  bool name_match(const std::vector<std::string_view>& path, bool is_dir) const;
  bool glob_match(const std::vector<std::string_view>& path, bool is_dir) const;
  std::vector<std::string> segments_;
  bool negated_ = false;
  bool dir_only_ = false;
  bool is_path_ = false;  // had a '/' (after the dir-only one): anchored at Home
};

// The whole decision for one entry.
class snapshot_excludes {
 public:
  // The runtime's state directory, relative to Home: always out, whatever the patterns say.
  static constexpr std::string_view runtime_state = ".local/share/shellctl";

  // Patterns empty or only spaces, tabs and newlines are dropped; the others are compiled
  // as given (untrimmed).
  explicit snapshot_excludes(const std::vector<std::string>& patterns);
  // `rel`: slash-separated, relative to Home, no leading "./".
  bool excluded(std::string_view rel, bool is_dir) const;

 private:
  std::vector<gitignore_pattern> patterns_;
};

}  // namespace shellctl::io::archive
