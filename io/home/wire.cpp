#include "io/home/wire.hpp"

#include <cstring>

namespace shellctl::io::home {
namespace {

class writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void str(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    out_.append(s);
  }
  void meta(const fs::entry_meta& m) {
    str(m.name);
    u8(static_cast<std::uint8_t>(m.type));
    u64(m.size);
    u32(m.mode);
    u64(static_cast<std::uint64_t>(m.mtime));
    u8(m.target ? 1 : 0);
    str(m.target ? *m.target : std::string_view());
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Every read checks what is left; the first failure sticks and the result is discarded.
class reader {
 public:
  explicit reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && pos_ == in_.size(); }

  std::uint8_t u8() {
    if (!need(1)) return 0;
    return static_cast<std::uint8_t>(in_[pos_++]);
  }
  std::uint32_t u32() {
    if (!need(4)) return 0;
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(in_[pos_++])) << (8 * i);
    return v;
  }
  std::uint64_t u64() {
    if (!need(8)) return 0;
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[pos_++])) << (8 * i);
    return v;
  }
  bool flag() {
    const auto v = u8();
    if (v > 1) ok_ = false;
    return v == 1;
  }
  std::string str(std::size_t max) {
    const std::uint32_t n = u32();
    if (n > max || !need(n)) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  // A count of items that each take at least `min_bytes`: bounded by `max` and by what is left.
  std::size_t count(std::size_t max, std::size_t min_bytes) {
    const std::uint32_t n = u32();
    if (n > max || (ok_ && static_cast<std::uint64_t>(n) * min_bytes > in_.size() - pos_)) {
      ok_ = false;
      return 0;
    }
    return n;
  }
  fs::entry_meta meta() {
    fs::entry_meta m;
    m.name = str(max_text);
    const auto type = u8();
    if (type > static_cast<std::uint8_t>(fs::entry_type::other)) ok_ = false;
    m.type = static_cast<fs::entry_type>(type);
    m.size = u64();
    m.mode = u32();
    if (m.mode > 07777) ok_ = false;
    m.mtime = static_cast<std::int64_t>(u64());
    const bool has_target = flag();
    std::string target = str(max_text);
    if (has_target) m.target = std::move(target);
    else if (!target.empty()) ok_ = false;
    return m;
  }

 private:
  bool need(std::size_t n) {
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  std::string_view in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

// The smallest encoded meta: five empty-ish fields.
constexpr std::size_t min_meta_bytes = 4 + 1 + 8 + 4 + 8 + 1 + 4;

}  // namespace

status status_of(fs::file_errc c) {
  return static_cast<status>(static_cast<std::uint8_t>(c) + 1);
}

fs::file_errc file_errc_of(status s) {
  if (s >= status::invalid_path && s <= status::io)
    return static_cast<fs::file_errc>(static_cast<std::uint8_t>(s) - 1);
  return fs::file_errc::io;
}

std::string encode(const request& r) {
  writer w;
  w.u8(static_cast<std::uint8_t>(r.kind));
  w.str(r.path);
  w.str(r.to);
  w.u64(r.limit);
  w.u8(r.flag ? 1 : 0);
  w.u8(r.mode ? 1 : 0);
  w.u32(r.mode.value_or(0));
  w.u32(static_cast<std::uint32_t>(r.excludes.size()));
  for (const auto& e : r.excludes) w.str(e);
  w.u32(static_cast<std::uint32_t>(r.skip.size()));
  for (const auto& [dev, ino] : r.skip) {
    w.u64(dev);
    w.u64(ino);
  }
  return w.take();
}

std::string encode(const reply& r) {
  writer w;
  w.u8(static_cast<std::uint8_t>(r.st));
  w.str(r.message);
  w.str(r.path);
  w.meta(r.meta);
  w.u32(static_cast<std::uint32_t>(r.entries.size()));
  for (const auto& e : r.entries) w.meta(e);
  w.u8(r.truncated ? 1 : 0);
  w.u64(r.count);
  w.u64(r.bytes);
  return w.take();
}

std::optional<request> decode_request(std::string_view bytes) {
  reader in(bytes);
  request r;
  const auto kind = in.u8();
  if (kind < 1 || kind > op_last) return std::nullopt;
  r.kind = static_cast<op>(kind);
  r.path = in.str(max_text);
  r.to = in.str(max_text);
  r.limit = in.u64();
  r.flag = in.flag();
  const bool has_mode = in.flag();
  const auto mode = in.u32();
  if (mode > 07777 || (!has_mode && mode != 0)) return std::nullopt;
  if (has_mode) r.mode = mode;
  const auto n = in.count(max_excludes, 4);
  for (std::size_t i = 0; i < n && in.ok(); ++i) r.excludes.push_back(in.str(max_text));
  const auto m = in.count(max_skip, 16);
  r.skip.reserve(m);
  for (std::size_t i = 0; i < m && in.ok(); ++i) {
    const auto dev = in.u64();
    const auto ino = in.u64();
    r.skip.emplace_back(dev, ino);
  }
  if (!in.done()) return std::nullopt;
  return r;
}

std::optional<reply> decode_reply(std::string_view bytes) {
  reader in(bytes);
  reply r;
  const auto st = in.u8();
  if (st > status_last) return std::nullopt;
  r.st = static_cast<status>(st);
  r.message = in.str(max_text);
  r.path = in.str(max_text);
  r.meta = in.meta();
  const auto n = in.count(max_entries, min_meta_bytes);
  r.entries.reserve(n);
  for (std::size_t i = 0; i < n && in.ok(); ++i) r.entries.push_back(in.meta());
  r.truncated = in.flag();
  r.count = in.u64();
  r.bytes = in.u64();
  if (!in.done()) return std::nullopt;
  return r;
}

}  // namespace shellctl::io::home
