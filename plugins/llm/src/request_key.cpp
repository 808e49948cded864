#include "request_key.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace kforge::llm {

std::string request_key_material(const ChatRequest& request) {
  nlohmann::json material = chat_request_body(request);
  material["sample"] = request.context.sample;
  return dump_json(material);
}

std::string request_key(const ChatRequest& request) {
  return sha256_hex(request_key_material(request));
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("OpenSSL could not compute SHA-256");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

}  // namespace kforge::llm
