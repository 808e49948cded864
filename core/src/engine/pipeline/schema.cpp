// The JSON Schema of the pipeline format, built from the registered kinds so that an editor
// checks `with:` parameters as strictly as `kforge validate` does.
//
// Where the loader accepts a ${...} variable in place of a typed value (k: ${k}), the schema
// accepts it too: substitution happens before type checking, and the schema must not
// flag a pipeline that loads.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/param_types.hpp"
#include "engine/pipeline/load.hpp"
#include "engine/registry.hpp"

namespace kforge {
namespace {

using Json = nlohmann::ordered_json;

const char* kVariablePattern = "\\$\\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\\}";

// `schema`, or a string holding a ${...} variable.
Json or_variable(Json schema) {
  return {{"anyOf", Json::array({std::move(schema), {{"$ref", "#/$defs/variable"}}})}};
}

// A parameter's schema: its type's (param_types.cpp), its doc and its default.
Json param_schema(const ParamSpec& spec) {
  Json schema = param_type(spec.type)->schema(spec);  // the registry reads no type without a row
  if (!spec.doc.empty()) schema["description"] = spec.doc;
  if (auto value = detail::default_json(spec)) schema["default"] = Json::parse(*value);
  return schema;
}

// The `with:` mapping of one kind: its parameters and nothing else.
Json with_schema(const std::vector<ParamSpec>& params) {
  Json properties = Json::object();
  Json required = Json::array();
  for (const ParamSpec& p : params) {
    properties[p.name] = param_schema(p);
    // A former name is accepted (with a warning): an editor marks it deprecated.
    for (const std::string& former : p.former_names) {
      Json old = param_schema(p);
      old["description"] = "The former name of " + p.name + ", accepted for this release only: write " + p.name + ".";
      old["deprecated"] = true;
      properties[former] = std::move(old);
    }
    if (p.required) required.push_back(p.name);
  }
  Json schema = {{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
  if (!required.empty()) schema["required"] = required;
  return schema;
}

// `if uses is KIND then with (and on) follow KIND's schema`, one per kind.
Json kind_branch(const std::string& name, const std::string& doc, const std::vector<ParamSpec>& params,
                 const Json* on) {
  Json then = {{"properties", {{"with", with_schema(params)}}}};
  if (on != nullptr) then["properties"]["on"] = *on;
  if (!doc.empty()) then["description"] = doc;
  if (std::any_of(params.begin(), params.end(), [](const ParamSpec& p) { return p.required; })) {
    then["required"] = Json::array({"with"});
  }
  return {{"if", {{"properties", {{"uses", {{"const", name}}}}}, {"required", {"uses"}}}},
          {"then", then}};
}

Json names_schema(const std::vector<std::string>& names) {
  if (names.empty()) return {{"type", "string"}};
  return {{"type", "string"}, {"enum", names}};
}

Json tasks_schema(const Registry& registry) {
  std::vector<std::string> names;
  Json branches = Json::array();
  for (const SourceKind& kind : registry.sources()) {
    names.push_back(kind.name);
    branches.push_back(
        kind_branch(kind.name, kind.doc, kind.params, nullptr));
  }
  Json schema = {
      {"type", "object"},
      {"description", "The task source: a registered source kind and its parameters."},
      {"properties",
       {{"uses", names_schema(names)},
        {"with", {{"type", "object"}}},
        {"k", {{"$ref", "#/$defs/positive_int"}, {"description", "Candidates per task."}}}}},
      {"required", {"uses"}},
      {"additionalProperties", false}};
  if (!branches.empty()) schema["allOf"] = branches;
  return schema;
}

Json stage_schema(const Registry& registry) {
  std::vector<std::string> names;
  Json branches = Json::array();
  for (const StageKind& kind : registry.stages()) {
    names.push_back(kind.name);
    Json routes = Json::object();
    for (const char* status : {"pass", "fail", "error"})
      routes[status] = {{"$ref", "#/$defs/route"}};
    for (const std::string& route : kind.routes) {
      routes[route] = {{"$ref", "#/$defs/route"}};
    }
    const Json on = {{"type", "object"}, {"properties", routes}, {"additionalProperties", false}};
    branches.push_back(
        kind_branch(kind.name, kind.doc, kind.params, &on));
  }
  Json schema = {
      {"type", "object"},
      {"properties",
       {{"id",
         {{"type", "string"},
          {"pattern", "^[a-z0-9_-]+$"},
          {"not", {{"enum", {"end", "tasks"}}}},
          {"description", "Unique name of the stage; routes refer to it."}}},
        {"uses", names_schema(names)},
        {"with", {{"type", "object"}}},
        {"concurrency",
         {{"$ref", "#/$defs/positive_int"}, {"description", "Jobs in this stage at once."}}},
        {"timeout", {{"$ref", "#/$defs/duration"}}},
        {"on",
         {{"type", "object"},
          {"description", "Where each verdict sends the job: pass, fail, error or a named route."},
          {"additionalProperties", {{"$ref", "#/$defs/route"}}}}}}},
      {"required", {"id", "uses"}},
      {"additionalProperties", false}};
  if (!branches.empty()) schema["allOf"] = branches;
  return schema;
}

}  // namespace

std::string pipeline_json_schema(const Registry& registry) {
  Json target = or_variable({{"type", "string"}, {"pattern", "^[a-z0-9_-]+$"}});
  target["description"] = "A stage id, or end.";
  Json defs = {
      {"variable",
       {{"type", "string"},
        {"pattern", kVariablePattern},
        {"description", "A ${NAME} or ${NAME:-default} variable, replaced before type checks."}}},
      {"positive_int", or_variable({{"type", "integer"}, {"minimum", 1}})},
      {"duration",
       {{"description", "Seconds (90, 1.5) or a number with a unit: 500ms, 90s, 5m, 1h."},
        {"anyOf", Json::array({{{"type", "number"}, {"exclusiveMinimum", 0}},
                               {{"type", "string"},
                                {"pattern", "^([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ms|s|m|h)?$"}},
                               {{"$ref", "#/$defs/variable"}}})}}},
      {"route",
       {{"anyOf",
         Json::array({target,
                      {{"type", "object"},
                       {"description",
                        "A bounded edge: taken at most max_rounds times per job, then the job "
                        "goes to `then`."},
                       {"properties",
                        {{"to", target},
                         {"max_rounds", {{"$ref", "#/$defs/positive_int"}}},
                         {"then", target}}},
                       {"required", {"to", "max_rounds"}},
                       {"additionalProperties", false}}})}}},
      {"tasks", tasks_schema(registry)},
      {"stage", stage_schema(registry)}};

  Json schema = {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"title", "kforge pipeline"},
      {"description", "A kforge pipeline file; see docs/pipelines.md."},
      {"type", "object"},
      {"properties",
       {{"pipeline",
         {{"type", "string"}, {"minLength", 1}, {"description", "The pipeline's name."}}},
        {"label",
         {{"type", "string"},
          {"description", "The run's name in reports and `kforge compare` (its strategy); default: the pipeline's "
                          "name."}}},
        {"include",
         {{"type", "array"},
          {"items", {{"type", "string"}}},
          {"description", "Files (relative to this one) whose vars and stages are merged in."}}},
        {"vars",
         {{"type", "object"},
          {"propertyNames", {{"pattern", "^[A-Za-z_][A-Za-z0-9_]*$"}}},
          {"additionalProperties", {{"type", {"string", "number", "boolean"}}}},
          {"description", "String variables for ${NAME} substitution."}}},
        {"tasks", {{"$ref", "#/$defs/tasks"}}},
        {"max_in_flight",
         {{"$ref", "#/$defs/positive_int"}, {"description", "Jobs inside the pipeline at once."}}},
        {"stages",
         {{"type", "array"},
          {"minItems", 1},
          {"items", {{"$ref", "#/$defs/stage"}}},
          {"description", "The stages; the first is the entry."}}}}},
      // stages may come from included files only, so only these two are required here.
      {"required", {"pipeline", "tasks"}},
      {"additionalProperties", false},
      {"$defs", defs}};
  return schema.dump(2);
}

}  // namespace kforge
