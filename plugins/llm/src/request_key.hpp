// The cassette key of a request: what determines the answer, hashed.
#pragma once

#include "chat.hpp"

#include <string>
#include <string_view>

namespace kforge::llm {

// The request body as it would be sent (model id, messages, sampling parameters,
// extra_body) plus the sample index, as canonical JSON. Endpoint, key, timeouts, retry
// and rate settings are left out: they do not change the answer, and leaving them out
// lets a cassette recorded against one server replay for another serving the same model.
std::string request_key_material(const ChatRequest& request);

// Lower-case hex SHA-256 of request_key_material().
std::string request_key(const ChatRequest& request);

}  // namespace kforge::llm
