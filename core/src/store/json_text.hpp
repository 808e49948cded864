// JSON as the store keeps it in a text column: compact, with invalid UTF-8 replaced rather
// than thrown, since candidates' logs and messages can hold any bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kforge {

inline std::string json_text(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace kforge
