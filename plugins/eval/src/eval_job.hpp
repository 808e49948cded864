// What an evaluation stage reads from a job and what it hands back, as plain data: the
// plugin maps job keys onto these, tests build them directly.
#pragma once

#include <kforge/abi.h>
#include <kforge/eval/vocabulary.hpp>

#include <nlohmann/json.hpp>

#include <functional>
#include <limits>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kforge::eval {

// Job attributes the stages hand down the pipeline.
inline constexpr const char* kAttrCppSource = "check.cpp_source";
inline constexpr const char* kAttrCudaSource = "check.cuda_source";
inline constexpr const char* kAttrArtifact = "compile.artifact";
// Where eval.run ran the candidate (with a device pool: which GPU timed it). A candidate.*
// attribute, so results.jsonl shows it as "device".
inline constexpr const char* kAttrRunDevice = KF_KEY_CANDIDATE_DEVICE;
// The sizes the task ran at in eval.run (a JSON object of every module-level integer of
// the task file, as the reference worker saw them; the fitter's choice under
// task.fit_memory_mb).
inline constexpr const char* kAttrRunTaskSizes = "run.task_sizes";
// What judged the job: the harness server's ready-line "environment" (PROTOCOL.md), as JSON
// (docs/reports.md#environment).
inline constexpr const char* kAttrRunEnvironment = KF_KEY_RUN_ENVIRONMENT;
// The harness's environment fact that names which card of a model judged: where a job ran,
// not what ran it, so the attribute lists it under KF_ENV_PLACEMENT.
inline constexpr const char* kEnvironmentCard = "gpu_uuid";
// The task and candidate attributes task sources and candidate stages set for these
// stages are kforge/eval/vocabulary.hpp's (kTaskSizes, ...).

struct EvalJob {
  std::string task_id;
  std::string task_path;
  std::string task_format = kFormatKernelBenchTorch;
  nlohmann::json task_sizes = nlohmann::json::object();
  double task_size_scale = 1.0;
  double task_fit_memory_mb = 0;
  std::optional<std::string> code;  // absent: the reference runs as its own candidate
  // The run's secret seed (Job::run_seed()); absent outside a run. Never logged.
  std::optional<uint64_t> run_seed;
  std::string language;
  std::map<std::string, std::string> attributes;  // check.cpp_source, compile.artifact, ...
  // The stage timeout's time left for this job (+inf without one), asked when a step
  // starts: a stage's steps run one after another (extracting the source, probing the
  // compiler, compiling), and each may take only what the earlier ones left.
  std::function<double()> seconds_left = [] { return std::numeric_limits<double>::infinity(); };
  std::function<bool()> cancelled;

  const std::string* attribute(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? nullptr : &it->second;
  }
};

struct StageResult {
  kf_verdict_status status = KF_VERDICT_PASS;
  std::string error_class;
  std::string message;
  std::string log_tail;
  std::vector<std::pair<std::string, double>> metrics;
  std::vector<std::pair<std::string, std::string>> attributes;  // set on the job

  static StageResult pass() { return {}; }
  static StageResult fail(std::string error_class, std::string message) {
    StageResult r;
    r.status = KF_VERDICT_FAIL;
    r.error_class = std::move(error_class);
    r.message = std::move(message);
    return r;
  }
  static StageResult error(std::string error_class, std::string message) {
    StageResult r;
    r.status = KF_VERDICT_ERROR;
    r.error_class = std::move(error_class);
    r.message = std::move(message);
    return r;
  }
  double metric(const std::string& name) const {  // NaN when absent
    for (const auto& [key, value] : metrics) {
      if (key == name) return value;
    }
    return std::numeric_limits<double>::quiet_NaN();
  }
  const std::string* attribute(const std::string& name) const {
    for (const auto& [key, value] : attributes) {
      if (key == name) return &value;
    }
    return nullptr;
  }
};

}  // namespace kforge::eval
