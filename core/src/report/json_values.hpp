// Values the report's JSON writers (report.json, the data embedded in report.html) share.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace kforge {

// A number, or null where there is none: a missing cost or speedup is not zero.
inline nlohmann::ordered_json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

}  // namespace kforge
