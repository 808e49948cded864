#include "chat.hpp"

namespace kforge::llm {

nlohmann::json chat_request_body(const ChatRequest& request) {
  nlohmann::json body = nlohmann::json::object();
  body["model"] = request.model;
  nlohmann::json messages = nlohmann::json::array();
  for (const Message& m : request.messages) {
    messages.push_back({{"role", m.role}, {"content", m.content}});
  }
  body["messages"] = std::move(messages);
  const SamplingParams& p = request.params;
  if (p.temperature) body["temperature"] = *p.temperature;
  if (p.top_p) body["top_p"] = *p.top_p;
  if (p.max_tokens) body["max_tokens"] = *p.max_tokens;
  if (p.seed) body["seed"] = *p.seed;
  if (p.extra_body.is_object()) {
    for (const auto& [key, value] : p.extra_body.items()) body[key] = value;
  }
  return body;
}

std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kforge::llm
