// YAML 1.2 core-schema scalar rules: which plain scalars are integers, numbers, booleans
// and nulls, and durations (90s, 5m). docs/pipelines.md states the rules for users.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kforge::loader {

using Json = nlohmann::ordered_json;

// [-+]?[0-9]+
bool is_integer_literal(std::string_view s);
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool is_number_literal(std::string_view s);
// Parses an integer literal; nullopt with `out_of_range` set when it does not fit.
std::optional<int64_t> parse_int64(std::string_view s, bool& out_of_range);
std::optional<double> parse_finite_double(const std::string& s);
// The JSON value a plain (unquoted) YAML scalar stands for under the YAML 1.2 core schema.
Json plain_scalar_json(const std::string& s);
// Compact JSON text; invalid UTF-8 replaced rather than thrown on.
std::string json_text(const Json& j);
// A scalar written in quotes (or tagged !!str) is a string whatever it looks like.
bool is_quoted(const YAML::Node& scalar);
// "a mapping", "a list", "a single value", "nothing": for messages.
const char* shape_of(const YAML::Node& node);
// The longest duration a pipeline may give: a billion seconds (31 years) is "never" for
// any timeout, and every stage can turn it into clock ticks without overflowing (a
// steady_clock in nanoseconds holds 292 years).
inline constexpr double kMaxDurationSeconds = 1e9;
// Duration text: seconds ("90", "1.5") or a number with a unit (500ms, 90s, 5m, 1h), at
// most kMaxDurationSeconds.
std::optional<double> parse_duration(const std::string& text);

}  // namespace kforge::loader
