#include "store/run_record.hpp"

#include <kforge/sha256.hpp>

#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "engine/registry.hpp"
#include "store/json_text.hpp"

namespace kforge {
namespace {

using json = nlohmann::ordered_json;

json param_json(const ParamValue& value) {
  if (!value.json.empty()) {
    json parsed = json::parse(value.json, nullptr, false);
    if (!parsed.is_discarded()) return parsed;
  }
  if (value.type == KF_PARAM_STRING_LIST) return value.items;
  return value.text;
}

json config_json(const StageConfig& config) {
  json with = json::object();
  for (const auto& [name, value] : config.values) with[name] = param_json(value);
  return with;
}

// The hash --resume compares: the config without what cannot change a result (how many
// jobs run at once), so that a resumed run may use other concurrency settings.
std::string config_hash(const std::string& config_text) {
  json config = json::parse(config_text);
  config.erase("max_in_flight");
  for (auto& stage : config["stages"]) stage.erase("concurrency");
  return sha256_hex(json_text(config));
}

}  // namespace

std::string pipeline_config_json(const Plan& plan) {
  json config;
  config["pipeline"] = plan.name;
  config["label"] = plan.label;
  config["file"] = plan.file;
  config["vars"] = plan.vars;
  config["tasks"] = {{"uses", plan.source.kind->name}, {"with", config_json(plan.source.config)}};
  config["k"] = plan.k;
  config["max_in_flight"] = plan.max_in_flight;
  auto& stages = config["stages"] = json::array();
  for (const StagePlan& s : plan.stages) {
    json stage;
    stage["id"] = s.id;
    stage["uses"] = s.kind->name;
    stage["with"] = config_json(s.config);
    stage["concurrency"] = s.concurrency;
    stage["timeout"] = s.timeout_seconds;
    auto& on = stage["on"] = json::object();
    for (const RoutePlan& r : s.routes) {
      json route = {{"to", plan.target_id(r.target)}};
      if (r.max_rounds > 0) {
        route["max_rounds"] = r.max_rounds;
        route["then"] = plan.target_id(r.exhausted_target);
      }
      on[r.on] = route;
    }
    stages.push_back(std::move(stage));
  }
  return json_text(config);
}

const char* to_string(RunStatus status) {
  switch (status) {
    case RunStatus::Running:
      return "running";
    case RunStatus::Finished:
      return "finished";
    case RunStatus::Interrupted:
      return "interrupted";
    case RunStatus::Failed:
      return "failed";
  }
  return "failed";
}

std::string visible_devices(const char* const* environment) {
  std::vector<std::string> devices;
  for (const char* const* entry = environment; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    const size_t eq = variable.find('=');
    if (eq != std::string_view::npos && variable.substr(0, eq).ends_with("_VISIBLE_DEVICES")) devices.emplace_back(variable);
  }
  std::sort(devices.begin(), devices.end());
  return fmt::format("{}", fmt::join(devices, "; "));
}

RunRecord describe_run(const Plan& plan, const std::string& kforge_version) {
  RunRecord run;
  run.pipeline = plan.name;
  run.label = plan.label;
  run.pipeline_file = plan.file;
  run.config = pipeline_config_json(plan);
  run.config_hash = config_hash(run.config);
  run.kforge_version = kforge_version;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) run.host = host;
  run.devices = visible_devices(environ);
  return run;
}

uint64_t draw_secret_seed() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed)) {
    throw std::runtime_error(fmt::format("cannot draw the run's secret seed from the operating system: {}",
                                         std::strerror(errno)));
  }
  return seed;
}

}  // namespace kforge
