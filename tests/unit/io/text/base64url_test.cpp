// io/text/base64url: the URL-safe alphabet without padding, canonical or Go-lenient.
#include <doctest/doctest.h>

#include <string>

#include "io/text/base64url.hpp"

namespace text = shellctl::io::text;

TEST_CASE("base64url without padding, one text per byte string") {
  CHECK(text::base64url("") == "");
  CHECK(text::base64url("f") == "Zg");
  CHECK(text::base64url("fo") == "Zm8");
  CHECK(text::base64url("foo") == "Zm9v");
  CHECK(text::base64url("\xfb\xff") == "-_8");
  for (std::string s : {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
                        std::string("foob"), std::string("\0\xff\x10", 3)})
    CHECK(text::unbase64url(text::base64url(s)) == s);
  CHECK_FALSE(text::unbase64url("Zg=").has_value());  // padding is not ours
  CHECK_FALSE(text::unbase64url("Z").has_value());
  CHECK_FALSE(text::unbase64url("Zh").has_value());   // nonzero leftover bits
  CHECK_FALSE(text::unbase64url("Zm+v").has_value()); // standard alphabet
}

TEST_CASE("base64url: the lenient decoder ignores leftover bits, as Go's does") {
  CHECK(text::unbase64url("Zh", false) == std::string("f"));
  CHECK_FALSE(text::unbase64url("Z", false).has_value());
  CHECK_FALSE(text::unbase64url("Z=", false).has_value());
}
