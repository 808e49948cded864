#include "request_key.hpp"

#include <kforge/sha256.hpp>

namespace kforge::llm {

std::string request_key_material(const ChatRequest& request) {
  nlohmann::json material = chat_request_body(request);
  material["sample"] = request.context.sample;
  return dump_json(material);
}

std::string request_key(const ChatRequest& request) {
  return kforge::sha256_hex(request_key_material(request));
}

}  // namespace kforge::llm
