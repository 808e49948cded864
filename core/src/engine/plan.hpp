// A pipeline as declared in YAML, after includes, variable substitution and validation.
// docs/pipelines.md is the user-facing description of the format.
#pragma once

#include <kforge/abi.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/pipeline/diagnostics.hpp"

namespace kforge {

// One validated parameter value, converted once when the pipeline is loaded. Scalars keep
// their text form (`text`, as written for numbers and durations), lists their items, and
// every value has its JSON form (`json`, what objects use, and what identifies a
// configuration: a duration's is its seconds).
struct ParamValue {
  kf_param_type type = KF_PARAM_STRING;
  std::string text;
  std::vector<std::string> items;
  std::string json;
  int64_t integer = 0;  // KF_PARAM_INT
  double number = 0;    // KF_PARAM_INT, KF_PARAM_FLOAT, KF_PARAM_DURATION (seconds)
  bool boolean = false; // KF_PARAM_BOOL
};

// The parameters of one stage or source: every declared parameter that has a value
// (given, or its default). Behind the opaque kf_config of the ABI.
struct StageConfig {
  std::map<std::string, ParamValue> values;
  std::string base_dir;  // directory of the file that declared the stage
};

struct StageKind;
struct SourceKind;

// Where a route sends a job: a stage index, or kEnd (the job leaves the graph).
inline constexpr int kEnd = -1;
// How many distinct targets one stage may route to: the router after each stage is a
// multifunction_node with this many ports, a compile-time number. The loader refuses more.
inline constexpr size_t kMaxRouteTargets = 8;

// One outgoing edge of a stage: when the verdict is `on` (pass, fail, error or a named
// route of the stage kind), the job goes to `target`. A bounded edge (max_rounds > 0) is a
// retry/fix back edge: a job takes it at most max_rounds times (bounded edges into the
// same stage share the count), each time its fix round goes up by one; after that it goes
// to `exhausted_target`.
struct RoutePlan {
  std::string on;
  int target = kEnd;
  int max_rounds = 0;
  int exhausted_target = kEnd;
  SourceLocation where;  // where the route is written; the stage's place for a default
};

struct StagePlan {
  std::string id;
  const StageKind* kind = nullptr;  // owned by the Registry, which outlives the plan
  StageConfig config;
  int concurrency = 0;         // 0: the default (unlimited for CPU stages, 16 for waiting ones)
  double timeout_seconds = 0;  // 0: no timeout
  // pass, fail and error, in that order, then every named route the kind declares.
  std::vector<RoutePlan> routes;
  SourceLocation where;  // where the stage is written; errors creating it are reported there
};

struct SourcePlan {
  const SourceKind* kind = nullptr;
  StageConfig config;
  SourceLocation where;  // of the `tasks:` key
};

// A pipeline compiled for running: kinds resolved to the registry's, routes to stage
// indices, parameters to typed values. What the loader produces and the executor runs as
// is; docs/pipelines.md describes the format it comes from.
struct Plan {
  std::string name;
  std::string label;  // the run's name in reports and `kforge compare`: `label:`, else `name`
  std::string file;   // absolute path of the top-level file
  std::map<std::string, std::string> vars;
  SourcePlan source;
  int k = 1;                 // candidates per task
  int max_in_flight = 1024;  // jobs inside the graph at once
  std::vector<StagePlan> stages;  // in file order; the first one is the entry
  // What the pipeline may still write but should not (a kind's former name), one each;
  // load_pipeline has logged them.
  std::vector<Diagnostic> warnings;

  // The id of a route target, "end" for kEnd.
  std::string target_id(int target) const { return target == kEnd ? "end" : stages.at(static_cast<size_t>(target)).id; }
};

}  // namespace kforge
