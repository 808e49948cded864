#include <kforge/sha256.hpp>

#include <gtest/gtest.h>

#include <string>

namespace kforge {
namespace {

std::string digest(std::string_view text) { return Sha256().update(text).hex(); }

TEST(Sha256, MatchesTheFips180Vectors) {
  EXPECT_EQ(digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(digest(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecewiseUpdatesEqualOneUpdate) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>(i * 7 + 3);
  for (size_t split : {size_t{1}, size_t{55}, size_t{56}, size_t{63}, size_t{64}, size_t{65}, size_t{999}}) {
    Sha256 pieces;
    pieces.update(std::string_view(text).substr(0, split)).update(std::string_view(text).substr(split));
    EXPECT_EQ(pieces.hex(), digest(text)) << "split at " << split;
  }
}

TEST(Sha256, FieldsAreLengthPrefixed) {
  EXPECT_NE(sha256_of_fields({"ab", "c"}), sha256_of_fields({"a", "bc"}));
  EXPECT_EQ(sha256_of_fields({"ab", "c"}), sha256_of_fields({"ab", "c"}));
}

}  // namespace
}  // namespace kforge
