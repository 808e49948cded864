// A pipeline as declared in YAML, after includes, variable substitution and validation.
// docs/pipelines.md is the user-facing description of the format.
#pragma once

#include <kforge/abi.h>

#include <map>
#include <string>
#include <vector>

#include "engine/pipeline/diagnostics.hpp"

namespace kforge {

// One validated parameter value. Scalars keep their text form (`text`), lists their
// items, and every value also has its JSON form (`json`), which is what objects use.
struct ParamValue {
  kf_param_type type = KF_PARAM_STRING;
  std::string text;
  std::vector<std::string> items;
  std::string json;
};

// The parameters of one stage or source: every declared parameter that has a value
// (given, or its default). Behind the opaque kf_config of the ABI.
struct StageConfig {
  std::map<std::string, ParamValue> values;
  std::string base_dir;  // directory of the file that declared the stage
};

inline constexpr const char* kEndTarget = "end";

// One outgoing edge of a stage: when the verdict is `on` (pass, fail, error or a named
// route of the stage kind), the job goes to `target` (a stage id or "end"). A bounded
// edge (max_rounds > 0) is a retry/fix back edge: a job takes it at most max_rounds
// times, and each time it does its fix round goes up by one; after that it goes to
// `exhausted_target`.
struct RouteSpec {
  std::string on;
  std::string target;
  int max_rounds = 0;
  std::string exhausted_target = kEndTarget;
  SourceLocation where;
};

struct StageSpec {
  std::string id;
  std::string uses;  // stage kind name
  StageConfig config;
  int concurrency = 0;         // 0: the default (unlimited for CPU stages, 16 for waiting ones)
  double timeout_seconds = 0;  // 0: no timeout
  // Complete after validation: pass, fail and error always present, plus every named
  // route the stage kind declares (defaulting to end).
  std::vector<RouteSpec> routes;
  SourceLocation where;
};

struct SourceSpec {
  std::string uses;  // source kind name
  StageConfig config;
  SourceLocation where;
};

struct PipelineSpec {
  std::string name;
  std::string file;  // absolute path of the top-level file
  std::map<std::string, std::string> vars;
  SourceSpec source;
  int k = 1;                 // candidates per task
  int max_in_flight = 1024;  // jobs inside the graph at once
  std::vector<StageSpec> stages;  // in file order; the first one is the entry
};

}  // namespace kforge
