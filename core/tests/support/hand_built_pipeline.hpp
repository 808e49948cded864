// Pipelines built in C++ instead of YAML, for tests and benchmarks of the executor and
// the store: what load_pipeline() would produce, without the loader in the way.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "engine/pipeline/load.hpp"

namespace kforge::testing {

inline ParamValue scalar(kf_param_type type, std::string text) {
  ParamValue v;
  v.type = type;
  v.json = type == KF_PARAM_STRING ? nlohmann::json(text).dump() : text;
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
  p.source.uses = "demo.range";
  p.source.config.values["count"] = scalar(KF_PARAM_INT, std::to_string(tasks));
  p.source.config.values["prefix"] = scalar(KF_PARAM_STRING, std::move(prefix));
  p.k = k;
  p.stages = std::move(stages);
  return p;
}

}  // namespace kforge::testing
