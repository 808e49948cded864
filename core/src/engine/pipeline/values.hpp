// Converting YAML values to typed parameter values, by the rules docs/pipelines.md gives.
#pragma once

#include <kforge/abi.h>
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

#include "engine/plan.hpp"

namespace kforge {
struct ParamSpec;
}

namespace kforge::loader {

// Where scalar text comes from and where problems go. Pipeline files expand ${...} and
// report at the node; command-line values and plugin defaults are literal and reported at
// a fixed place.
class ValueSource {
 public:
  virtual ~ValueSource() = default;
  // The scalar's text; nullopt once a problem has been reported.
  virtual std::optional<std::string> text(const YAML::Node& scalar) = 0;
  virtual void error(const YAML::Node& at, const std::string& message) = 0;
};

// Converts a YAML value to a parameter of `type`; nullopt once a problem is reported.
std::optional<ParamValue> convert(kf_param_type type, const YAML::Node& value, const std::string& subject,
                                  ValueSource& source);

// A plugin's default as YAML (strings are taken as they are: "a: b" is that string).
std::optional<YAML::Node> parse_default(const ParamSpec& spec, std::string& problem);

// What is wrong with a converted value under the parameter's choices and range, if anything.
std::optional<std::string> violated_constraint(const ParamSpec& spec, const ParamValue& value,
                                               const std::string& subject);

}  // namespace kforge::loader
