// Pipelines built in C++ instead of YAML, for tests and benchmarks of the executor and
// the store: drafts with stage kinds and route targets named as a file names them, compiled
// into the Plan the loader would produce, without the loader in the way.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/plan.hpp"
#include "engine/registry.hpp"

namespace kforge::testing {

inline constexpr const char* kEndTarget = "end";

struct RouteSpec {
  std::string on;
  std::string target;
  int max_rounds = 0;
  std::string exhausted_target = kEndTarget;
};

struct StageSpec {
  std::string id;
  std::string uses;
  StageConfig config;
  int concurrency = 0;
  double timeout_seconds = 0;
  std::vector<RouteSpec> routes;
};

struct PipelineSpec {
  std::string name;
  std::string label;  // empty: the name
  std::string file;
  std::map<std::string, std::string> vars;
  std::string source;
  StageConfig source_config;
  int k = 1;
  int max_in_flight = 1024;
  std::vector<StageSpec> stages;
};

inline ParamValue scalar(kf_param_type type, std::string text) {
  ParamValue v;
  v.type = type;
  v.json = type == KF_PARAM_STRING ? nlohmann::json(text).dump() : text;
  if (type == KF_PARAM_INT) v.integer = std::stoll(text);
  if (type == KF_PARAM_INT || type == KF_PARAM_FLOAT || type == KF_PARAM_DURATION) v.number = std::stod(text);
  if (type == KF_PARAM_BOOL) v.boolean = text == "true";
  v.text = std::move(text);
  return v;
}

inline ParamValue string_list(std::vector<std::string> items) {
  ParamValue v;
  v.type = KF_PARAM_STRING_LIST;
  v.json = nlohmann::json(items).dump();
  v.items = std::move(items);
  return v;
}

inline RouteSpec route(std::string on, std::string target, int max_rounds = 0) {
  RouteSpec r;
  r.on = std::move(on);
  r.target = std::move(target);
  r.max_rounds = max_rounds;
  return r;
}

// A stage with its routes filled as the loader fills them by default: pass -> `next`,
// fail and error -> end.
inline StageSpec stage(std::string id, std::string uses, std::string next = kEndTarget) {
  StageSpec s;
  s.id = std::move(id);
  s.uses = std::move(uses);
  s.routes = {route("pass", std::move(next)), route("fail", kEndTarget), route("error", kEndTarget)};
  return s;
}

// Sets (or adds) the route taken on `on`.
inline void set_route(StageSpec& s, const std::string& on, const std::string& target, int max_rounds = 0) {
  for (auto& r : s.routes) {
    if (r.on == on) {
      r = route(on, target, max_rounds);
      return;
    }
  }
  s.routes.push_back(route(on, target, max_rounds));
}

// `tasks` tasks from the demo plugin's demo.range (ids "<prefix>0000", ...), k each.
inline PipelineSpec range_pipeline(std::string name, int tasks, std::vector<StageSpec> stages, int k = 1,
                                   std::string prefix = "task-") {
  PipelineSpec p;
  p.name = std::move(name);
  p.source = "demo.range";
  p.source_config.values["count"] = scalar(KF_PARAM_INT, std::to_string(tasks));
  p.source_config.values["prefix"] = scalar(KF_PARAM_STRING, std::move(prefix));
  p.k = k;
  p.stages = std::move(stages);
  return p;
}

// The draft as a plan, kinds from `registry`; throws std::invalid_argument on a name the
// registry or the draft does not know.
inline Plan compile(const Registry& registry, const PipelineSpec& draft) {
  Plan plan;
  plan.name = draft.name;
  plan.label = draft.label.empty() ? draft.name : draft.label;
  plan.file = draft.file;
  plan.vars = draft.vars;
  plan.source.kind = registry.source(draft.source);
  if (plan.source.kind == nullptr) throw std::invalid_argument("no source kind " + draft.source);
  plan.source.config = draft.source_config;
  plan.k = draft.k;
  plan.max_in_flight = draft.max_in_flight;
  auto index_of = [&](const std::string& id) {
    if (id == kEndTarget) return kEnd;
    for (size_t i = 0; i < draft.stages.size(); ++i) {
      if (draft.stages[i].id == id) return static_cast<int>(i);
    }
    throw std::invalid_argument("no stage " + id);
  };
  for (const StageSpec& s : draft.stages) {
    StagePlan stage;
    stage.id = s.id;
    stage.kind = registry.stage(s.uses);
    if (stage.kind == nullptr) throw std::invalid_argument("no stage kind " + s.uses);
    stage.config = s.config;
    stage.concurrency = s.concurrency;
    stage.timeout_seconds = s.timeout_seconds;
    for (const RouteSpec& r : s.routes) {
      stage.routes.push_back({r.on, index_of(r.target), r.max_rounds, index_of(r.exhausted_target), {}});
    }
    plan.stages.push_back(std::move(stage));
  }
  return plan;
}

}  // namespace kforge::testing
