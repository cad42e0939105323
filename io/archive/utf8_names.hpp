#pragma once
// libarchive converts names between "the locale's charset" and the UTF-8 of PAX records.
// The server runs in the C locale, where every non-ASCII name would fail that conversion
// (written as hdrcharset=BINARY, read back as nothing). A snapshot's thread reads and
// writes names as UTF-8 instead: this switches the calling thread alone (uselocale) to
// C.UTF-8 for its lifetime. Bytes that are not UTF-8 still travel, marked binary.
#include <locale.h>

namespace shellctl::io::archive {

class utf8_names {
 public:
  utf8_names() : mine_(::newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0))) {
    if (mine_) previous_ = ::uselocale(mine_);
  }
  ~utf8_names() {
    if (!mine_) return;
    ::uselocale(previous_);
    ::freelocale(mine_);
  }
  utf8_names(const utf8_names&) = delete;
  utf8_names& operator=(const utf8_names&) = delete;

 private:
  locale_t mine_;
  locale_t previous_ = LC_GLOBAL_LOCALE;
};

}  // namespace shellctl::io::archive
