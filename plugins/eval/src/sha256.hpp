// SHA-256 (FIPS 180-4), for content-addressed caches of compiled artifacts. Written here
// because a plugin must not link the kforge core, and a hash is not worth a dependency.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace kforge::eval {

class Sha256 {
 public:
  Sha256();
  Sha256& update(std::string_view bytes);
  // The digest as 64 lowercase hex digits. Finishes the hash: call once.
  std::string hex();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// Hash of several fields, each length-prefixed so that ("ab", "c") and ("a", "bc") differ.
std::string sha256_of_fields(std::initializer_list<std::string_view> fields);

}  // namespace kforge::eval
