#include "run/store/run_record.hpp"

#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "engine/registry.hpp"
#include "util/sha256.hpp"

namespace kforge {
namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

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
  return sha256_hex(dump(config));
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
  return dump(config);
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
  // The devices the environment makes visible; which one ran a candidate is each job's
  // KF_KEY_CANDIDATE_DEVICE. kforge itself does not probe.
  std::vector<std::string> devices;
  for (const char* name : {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES"}) {
    if (const char* value = std::getenv(name)) devices.push_back(fmt::format("{}={}", name, value));
  }
  run.devices = fmt::format("{}", fmt::join(devices, "; "));
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
