#include "io/archive/excludes.hpp"

#include <cstdint>

namespace shellctl::io::archive {
namespace {

// ---------------------------------------------------------------- Go's filepath.Match

// utf8.DecodeRuneInString: the rune and its length; invalid input is (0xFFFD, 1).
constexpr char32_t rune_error = 0xFFFD;

std::pair<char32_t, std::size_t> decode_rune(std::string_view s) {
  if (s.empty()) return {rune_error, 0};
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return {b0, 1};
  auto cont = [&](std::size_t i) {
    return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
  };
  auto byte = [&](std::size_t i) { return static_cast<char32_t>(static_cast<unsigned char>(s[i]) & 0x3F); };
  if (b0 >= 0xC2 && b0 <= 0xDF && cont(1)) return {((b0 & 0x1Fu) << 6) | byte(1), 2};
  if (b0 >= 0xE0 && b0 <= 0xEF && cont(1) && cont(2)) {
    char32_t r = ((b0 & 0x0Fu) << 12) | (byte(1) << 6) | byte(2);
    if (r >= 0x800 && !(r >= 0xD800 && r <= 0xDFFF)) return {r, 3};
    return {rune_error, 1};
  }
  if (b0 >= 0xF0 && b0 <= 0xF4 && cont(1) && cont(2) && cont(3)) {
    char32_t r = ((b0 & 0x07u) << 18) | (byte(1) << 12) | (byte(2) << 6) | byte(3);
    if (r >= 0x10000 && r <= 0x10FFFF) return {r, 4};
  }
  return {rune_error, 1};
}

struct bad_pattern {};

// getEsc: one (possibly escaped) character of a class.
char32_t get_esc(std::string_view& chunk) {
  if (chunk.empty() || chunk[0] == '-' || chunk[0] == ']') throw bad_pattern{};
  if (chunk[0] == '\\') {
    chunk.remove_prefix(1);
    if (chunk.empty()) throw bad_pattern{};
  }
  auto [r, n] = decode_rune(chunk);
  if (r == rune_error && n == 1) throw bad_pattern{};
  chunk.remove_prefix(n);
  if (chunk.empty()) throw bad_pattern{};
  return r;
}

// scanChunk: leading stars, then the chunk up to the next star outside a class.
void scan_chunk(std::string_view& pattern, bool& star, std::string_view& chunk) {
  star = false;
  while (!pattern.empty() && pattern[0] == '*') {
    pattern.remove_prefix(1);
    star = true;
  }
  bool inrange = false;
  std::size_t i = 0;
  for (; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      if (i + 1 < pattern.size()) ++i;
    } else if (c == '[') {
      inrange = true;
    } else if (c == ']') {
      inrange = false;
    } else if (c == '*' && !inrange) {
      break;
    }
  }
  chunk = pattern.substr(0, i);
  pattern.remove_prefix(i);
}

// matchChunk: whether `chunk` matches a prefix of `s` (the rest in `rest`). Throws
// bad_pattern for a malformed chunk, also after the match has failed (Go checks on).
bool match_chunk(std::string_view chunk, std::string_view s, std::string_view& rest) {
  bool failed = false;
  while (!chunk.empty()) {
    if (!failed && s.empty()) failed = true;
    switch (chunk[0]) {
      case '[': {
        char32_t r = 0;
        if (!failed) {
          auto [rr, n] = decode_rune(s);
          r = rr;
          s.remove_prefix(n);
        }
        chunk.remove_prefix(1);
        bool negated = false;
        if (!chunk.empty() && chunk[0] == '^') {
          negated = true;
          chunk.remove_prefix(1);
        }
        bool match = false;
        int nrange = 0;
        for (;;) {
          if (!chunk.empty() && chunk[0] == ']' && nrange > 0) {
            chunk.remove_prefix(1);
            break;
          }
          char32_t lo = get_esc(chunk);
          char32_t hi = lo;
          if (chunk[0] == '-') {
            chunk.remove_prefix(1);
            hi = get_esc(chunk);
          }
          if (lo <= r && r <= hi) match = true;
          ++nrange;
        }
        if (match == negated) failed = true;
        break;
      }
      case '?':
        if (!failed) {
          if (s[0] == '/') failed = true;
          auto [r, n] = decode_rune(s);
          (void)r;
          s.remove_prefix(n);
        }
        chunk.remove_prefix(1);
        break;
      case '\\':
        chunk.remove_prefix(1);
        if (chunk.empty()) throw bad_pattern{};
        [[fallthrough]];
      default:
        if (!failed) {
          if (chunk[0] != s[0]) failed = true;
          s.remove_prefix(1);
        }
        chunk.remove_prefix(1);
        break;
    }
  }
  if (failed) return false;
  rest = s;
  return true;
}

bool go_match(std::string_view pattern, std::string_view name) {
  while (!pattern.empty()) {
    bool star;
    std::string_view chunk;
    scan_chunk(pattern, star, chunk);
    if (star && chunk.empty()) return name.find('/') == std::string_view::npos;
    std::string_view t;
    // An error here is only raised when no match was found (Go: `ok` first).
    bool ok = false;
    bool bad = false;
    try {
      ok = match_chunk(chunk, name, t);
    } catch (const bad_pattern&) {
      bad = true;
    }
    if (ok && (t.empty() || !pattern.empty())) {
      name = t;
      continue;
    }
    if (bad) throw bad_pattern{};
    if (star) {
      bool advanced = false;
      for (std::size_t i = 0; i < name.size() && name[i] != '/'; ++i) {
        std::string_view t2;
        bool ok2 = false;
        bool bad2 = false;
        try {
          ok2 = match_chunk(chunk, name.substr(i + 1), t2);
        } catch (const bad_pattern&) {
          bad2 = true;
        }
        if (ok2) {
          if (pattern.empty() && !t2.empty()) continue;
          name = t2;
          advanced = true;
          break;
        }
        if (bad2) throw bad_pattern{};
      }
      if (advanced) continue;
    }
    // Before returning false, the rest of the pattern must be well formed.
    while (!pattern.empty()) {
      scan_chunk(pattern, star, chunk);
      std::string_view ignored;
      match_chunk(chunk, "", ignored);
    }
    return false;
  }
  return name.empty();
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    auto pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

bool go_path_match(std::string_view pattern, std::string_view name) {
  try {
    return go_match(pattern, name);
  } catch (const bad_pattern&) {
    return false;
  }
}

// ---------------------------------------------------------------- go-git's pattern

gitignore_pattern::gitignore_pattern(std::string_view p) {
  if (!p.empty() && p[0] == '!') {
    negated_ = true;
    p.remove_prefix(1);
  }
  if (!ends_with(p, "\\ "))
    while (!p.empty() && p.back() == ' ') p.remove_suffix(1);
  if (!p.empty() && p.back() == '/') {
    dir_only_ = true;
    p.remove_suffix(1);
  }
  is_path_ = p.find('/') != std::string_view::npos;
  for (auto seg : split(p, '/')) segments_.emplace_back(seg);
}

gitignore_pattern::result gitignore_pattern::match(const std::vector<std::string_view>& path,
                                                   bool is_dir) const {
  // go-git's domain is empty here: every pattern applies from Home.
  if (path.empty()) return result::no_match;
  const bool hit = is_path_ ? glob_match(path, is_dir) : name_match(path, is_dir);
  if (!hit) return result::no_match;
  return negated_ ? result::include : result::exclude;
}

bool gitignore_pattern::name_match(const std::vector<std::string_view>& path, bool is_dir) const {
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (!go_path_match(segments_[0], path[i])) continue;
    if (dir_only_ && !is_dir && i == path.size() - 1) return false;
    return true;
  }
  return false;
}

bool gitignore_pattern::glob_match(const std::vector<std::string_view>& components,
                                   bool is_dir) const {
  std::size_t cursor = 0;  // path = components[cursor..]
  const auto left = [&] { return components.size() - cursor; };
  bool matched = false;
  bool traverse = false;
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    const std::string& seg = segments_[i];
    if (seg.empty()) {
      traverse = false;
      continue;
    }
    if (seg == "**") {
      if (i == segments_.size() - 1) break;
      traverse = true;
      continue;
    }
    if (seg.find("**") != std::string::npos) return false;
    if (left() == 0) return false;
    if (traverse) {
      traverse = false;
      while (left() > 0) {
        auto e = components[cursor++];
        if (go_path_match(seg, e)) {
          matched = true;
          break;
        }
        if (left() == 0) matched = false;
      }
    } else {
      if (!go_path_match(seg, components[cursor])) return false;
      matched = true;
      ++cursor;
      // The dir-glob rule (go-git #1493): a pattern with segments left cannot match an
      // entry whose components ran out (".cache/**" is not ".cache" itself).
      if (left() == 0 && i < segments_.size() - 1) matched = false;
    }
  }
  if (matched && dir_only_ && !is_dir && left() == 0) matched = false;
  return matched;
}

// ---------------------------------------------------------------- the whole decision

snapshot_excludes::snapshot_excludes(const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    if (p.find_first_not_of(" \t\n") == std::string::npos) continue;
    patterns_.emplace_back(p);
  }
}

bool snapshot_excludes::excluded(std::string_view rel, bool is_dir) const {
  // Before, and apart from, the caller's patterns: no `!` can bring it back.
  if (rel == runtime_state) return true;
  const auto components = split(rel, '/');
  for (auto it = patterns_.rbegin(); it != patterns_.rend(); ++it) {
    switch (it->match(components, is_dir)) {
      case gitignore_pattern::result::exclude:
        return true;
      case gitignore_pattern::result::include:
        return false;
      case gitignore_pattern::result::no_match:
        break;
    }
  }
  return false;
}

}  // namespace shellctl::io::archive
