// Loading a pipeline file: what `kforge validate` and `kforge run` start with.
#pragma once

#include "api.hpp"

#include <kforge/abi.h>

#include <map>
#include <optional>
#include <string>

#include "engine/plan.hpp"

namespace kforge {

class Registry;
struct ParamSpec;
struct SourceKind;
struct StageKind;

// Command-line overrides (`--set key=value`): a plain key sets a variable, a dotted key
// `STAGE.PARAM` (or `tasks.PARAM`) sets one parameter of that stage or of the task source.
struct Overrides {
  std::map<std::string, std::string> values;
};

// Reads, includes, substitutes, validates and compiles; throws ConfigError with every
// problem.
KFORGE_API Plan load_pipeline(const std::string& path, const Registry& registry,
                           const Overrides& overrides = {});

// One kind's parameters from YAML flow or block text ("{model: x, timeout: 90s}"), checked
// and converted as a pipeline's `with:` is, relative paths against base_dir; throws
// ConfigError. What the plugin test kit (kforge/testing.hpp) configures stages with.
KFORGE_API StageConfig load_params(const StageKind& kind, const std::string& text, const std::string& base_dir);
KFORGE_API StageConfig load_params(const SourceKind& kind, const std::string& text, const std::string& base_dir);

// JSON Schema (draft 2020-12) of the pipeline format, with one `with:` schema per
// registered stage and source kind, for editors and `kforge schema`.
KFORGE_API std::string pipeline_json_schema(const Registry& registry);

namespace detail {
// JSON form of a parameter's default, converted by the rules that apply to values written in
// a pipeline; nullopt when there is none or it does not convert. Shared with the schema.
std::optional<std::string> default_json(const ParamSpec& spec);
}  // namespace detail

}  // namespace kforge
