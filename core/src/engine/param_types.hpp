// The parameter types of the ABI (kf_param_type), one row each: all kforge knows about a type
// to read a value of it (validate), show it (`kforge plugins describe`) and publish it (the
// JSON Schema). A type without a row is one this host does not know; the registry refuses a
// plugin that declares one. A new type is a new row, and nothing else changes.
#pragma once

#include <kforge/abi.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api.hpp"

namespace kforge {

struct ParamSpec;
struct ParamValue;

// What a YAML value of the type must look like.
enum class ParamShape { Scalar, StringList, Mapping };

struct ParamType {
  kf_param_type type;
  const char* name;      // as describe shows it: "duration"
  const char* expected;  // what a value must be, for messages: "a duration (90s, 2m, ...)"
  ParamShape shape;
  bool takes_choices;  // choices apply (to the text, or to each item of a list)
  bool takes_range;    // KF_RANGE_* applies, to ParamValue::number
  const char* unit;    // of the range in messages: "" or " s"
  // Scalar types: reads `text` into `out` (its canonical text, JSON and typed field), or says
  // what is wrong, naming `subject`. nullptr for the other shapes.
  std::optional<std::string> (*read)(const std::string& text, const std::string& subject, ParamValue& out);
  // The JSON Schema of a value of this type under the parameter's choices and range.
  nlohmann::ordered_json (*schema)(const ParamSpec& spec);
};

// The row of `type`; nullptr when this host does not know it.
KFORGE_API const ParamType* param_type(kf_param_type type);

}  // namespace kforge
