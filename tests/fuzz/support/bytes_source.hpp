#pragma once
// A restore's body from bytes held in memory (io/archive/home_reader.hpp's byte_source),
// for the targets that restore archives.
#include <algorithm>
#include <cstring>
#include <string>

#include "io/archive/home_reader.hpp"

namespace shellctl::fuzz {

class bytes_source : public io::archive::byte_source {
 public:
  explicit bytes_source(std::string b) : b_(std::move(b)) {}
  std::ptrdiff_t read(char* buf, std::size_t cap) override {
    const std::size_t n = std::min(cap, b_.size() - pos_);
    std::memcpy(buf, b_.data() + pos_, n);
    pos_ += n;
    return static_cast<std::ptrdiff_t>(n);
  }
  std::string failure() const override { return "unused"; }

 private:
  std::string b_;
  std::size_t pos_ = 0;
};

}  // namespace shellctl::fuzz
