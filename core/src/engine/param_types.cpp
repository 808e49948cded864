#include "engine/param_types.hpp"

#include <fmt/format.h>

#include <array>

#include "engine/pipeline/scalars.hpp"
#include "engine/plan.hpp"
#include "engine/registry.hpp"

namespace kforge {
namespace {

using loader::Json;
using loader::json_text;

// ---- reading scalar text ----------------------------------------------------------------

std::optional<std::string> read_string(const std::string& text, const std::string&, ParamValue& out) {
  out.text = text;
  out.json = json_text(Json(text));
  return std::nullopt;
}

std::optional<std::string> read_int(const std::string& text, const std::string& subject, ParamValue& out) {
  bool out_of_range = false;
  auto value = loader::parse_int64(text, out_of_range);
  if (!value) {
    return out_of_range ? fmt::format("{} is out of range: {} does not fit in a 64-bit integer", subject, text)
                        : fmt::format("{} must be an integer, got '{}'", subject, text);
  }
  out.text = std::to_string(*value);
  out.json = json_text(Json(*value));
  out.integer = *value;
  out.number = static_cast<double>(*value);
  return std::nullopt;
}

std::optional<std::string> read_float(const std::string& text, const std::string& subject, ParamValue& out) {
  auto value = loader::parse_finite_double(text);
  if (!value) {
    return loader::is_number_literal(text) ? fmt::format("{} is out of range: {} is not a finite double", subject, text)
                                           : fmt::format("{} must be a number, got '{}'", subject, text);
  }
  out.text = text;  // as written
  out.json = json_text(Json(*value));
  out.number = *value;
  return std::nullopt;
}

std::optional<std::string> read_duration(const std::string& text, const std::string& subject, ParamValue& out) {
  auto seconds = loader::parse_duration(text);
  if (!seconds) return fmt::format("{} must be {}, got '{}'", subject, param_type(KF_PARAM_DURATION)->expected, text);
  out.text = text;  // as written; the JSON form is seconds, so 2m and 120s are one value
  out.json = json_text(Json(*seconds));
  out.number = *seconds;
  return std::nullopt;
}

std::optional<std::string> read_bool(const std::string& text, const std::string& subject, ParamValue& out) {
  if (text != "true" && text != "false") {
    return fmt::format("{} must be true or false, got '{}' (only true and false are accepted)", subject, text);
  }
  out.text = text;
  out.json = text;
  out.boolean = text == "true";
  return std::nullopt;
}

// ---- JSON Schema --------------------------------------------------------------------------
// Where the loader accepts a ${...} variable in place of a typed value (k: ${k}), the schema
// accepts it too: substitution happens before type checking.

Json or_variable(Json schema) {
  return {{"anyOf", Json::array({std::move(schema), {{"$ref", "#/$defs/variable"}}})}};
}

// A number's bounds as the parameter's range declares them.
void add_range(Json& schema, const ParamSpec& spec) {
  if (spec.range & KF_RANGE_MIN) schema[(spec.range & KF_RANGE_MIN_EXCLUSIVE) ? "exclusiveMinimum" : "minimum"] = spec.min;
  if (spec.range & KF_RANGE_MAX) schema[(spec.range & KF_RANGE_MAX_EXCLUSIVE) ? "exclusiveMaximum" : "maximum"] = spec.max;
}

Json string_schema(const ParamSpec& spec) {
  Json schema = {{"type", "string"}};
  if (!spec.choices.empty()) schema["enum"] = spec.choices;
  return schema;
}

Json number_schema(const char* json_type, const ParamSpec& spec) {
  Json number = {{"type", json_type}};
  add_range(number, spec);
  return or_variable(number);
}

Json duration_schema(const ParamSpec& spec) {
  // Seconds as a number, or text with a unit; the range applies to the seconds.
  Json seconds = {{"type", "number"}, {"minimum", 0}};
  add_range(seconds, spec);
  return {{"anyOf", Json::array({seconds,
                                 {{"type", "string"}, {"pattern", "^([0-9]+\\.?[0-9]*|\\.[0-9]+)(ms|s|m|h)?$"}},
                                 {{"$ref", "#/$defs/variable"}}})}};
}

// ---- the table ----------------------------------------------------------------------------

const std::array<ParamType, 7> kTypes = {{
    {KF_PARAM_STRING, "string", "a string", ParamShape::Scalar, true, false, "", read_string, string_schema},
    {KF_PARAM_INT, "int", "an integer", ParamShape::Scalar, false, true, "", read_int,
     [](const ParamSpec& spec) { return number_schema("integer", spec); }},
    {KF_PARAM_FLOAT, "float", "a number", ParamShape::Scalar, false, true, "", read_float,
     [](const ParamSpec& spec) { return number_schema("number", spec); }},
    {KF_PARAM_BOOL, "bool", "true or false", ParamShape::Scalar, false, false, "", read_bool,
     [](const ParamSpec&) { return or_variable({{"type", "boolean"}}); }},
    {KF_PARAM_STRING_LIST, "list<string>", "a list of strings", ParamShape::StringList, true, false, "", nullptr,
     [](const ParamSpec& spec) { return Json{{"type", "array"}, {"items", string_schema(spec)}}; }},
    {KF_PARAM_OBJECT, "object", "a mapping", ParamShape::Mapping, false, false, "", nullptr,
     [](const ParamSpec&) { return Json{{"type", "object"}}; }},
    {KF_PARAM_DURATION, "duration", "a duration (90s, 2m, 500ms, 1h, or a number of seconds; at most 1e9 s)",
     ParamShape::Scalar, false, true, " s", read_duration, duration_schema},
}};

}  // namespace

const ParamType* param_type(kf_param_type type) {
  for (const ParamType& row : kTypes) {
    if (row.type == type) return &row;
  }
  return nullptr;
}

}  // namespace kforge
