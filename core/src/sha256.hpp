// SHA-256, for content hashes (artifacts, verdict-cache keys, cassette keys).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kforge {

class Sha256 {
 public:
  Sha256();
  Sha256& update(std::string_view data);
  // Lowercase hex of the digest; the object must not be updated afterwards.
  std::string hex();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;
};

inline std::string sha256_hex(std::string_view data) { return Sha256().update(data).hex(); }

}  // namespace kforge
