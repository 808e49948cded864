#include "harness_stages.hpp"

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <stdexcept>

namespace kforge::eval {
namespace {
using nlohmann::json;


json dtype_table(double fp32, double low_precision) {
  return {{"float64", fp32}, {"float32", fp32}, {"float16", low_precision}, {"bfloat16", low_precision}};
}

std::string findings_text(const json& findings) {
  std::string text;
  for (const json& finding : findings) {
    if (!finding.is_object()) continue;
    text += "line ";
    text += finding.contains("line") ? finding["line"].dump() : std::string("?");
    text += " [" + finding.value("rule", std::string("?")) + "]: " + finding.value("message", std::string());
    const std::string hint = finding.value("hint", std::string());
    if (!hint.empty()) text += "\n  fix: " + hint;
    text += "\n";
  }
  return text;
}

}  // namespace

json tolerance_rule(const std::string& preset) {
  if (preset == "default") {
    // The harness's DEFAULT_RULE (kforge_harness/protocol/__init__.py says why; a test
    // holds the two equal).
    return {{"kind", "allclose"},
            {"atol", dtype_table(1e-4, 1e-2)},
            {"rtol", dtype_table(3e-4, 1e-2)},
            {"max_rel_l2", {{"float64", 1e-11}, {"float32", 5e-4}, {"float16", 1e-3}, {"bfloat16", 1e-2}}},
            {"max_centered_rel_error", 0.25},
            {"max_coarse_share", 0.01}};
  }
  if (preset == "seed000") return {{"kind", "max_abs_diff"}, {"limit", 1e-3}};
  if (preset == "kernelbench-v0") {
    return {{"kind", "allclose"}, {"atol", dtype_table(1e-2, 1e-2)}, {"rtol", dtype_table(1e-2, 1e-2)}};
  }
  // KernelBenchX's torch.testing.assert_close tolerances (EVAL/1_exe_acc.py).
  if (preset == "kernelbenchx") {
    return {{"kind", "allclose"}, {"atol", dtype_table(1e-5, 5e-3)}, {"rtol", dtype_table(1e-5, 5e-3)}};
  }
  throw std::invalid_argument("unknown tolerance preset '" + preset +
                              "': use default (allclose 1e-4 plus whole-output checks), seed000 (max_abs_diff 1e-3), "
                              "kernelbench-v0 (allclose 1e-2) or kernelbenchx (allclose 1e-5, fp16/bf16 5e-3), "
                              "or give a rule object");
}

void validate_rule(const json& rule) {
  if (!rule.is_object() || !rule.contains("kind") || !rule["kind"].is_string()) {
    throw std::invalid_argument("rule must be an object with a kind (allclose, max_abs_diff, share_over_limit)");
  }
  const std::string kind = rule["kind"];
  // Every kind takes the whole-output checks, as numbers or per-dtype maps.
  static const std::initializer_list<const char*> whole_output = {"max_rel_l2", "max_centered_rel_error",
                                                                  "coarse_atol", "coarse_rtol", "max_coarse_share"};
  auto numbers_only = [&](std::initializer_list<const char*> allowed) {
    for (const auto& [key, value] : rule.items()) {
      if (key == "kind") continue;
      bool known = false, whole = false;
      for (const char* name : allowed) known = known || key == name;
      for (const char* name : whole_output) whole = whole || key == name;
      if (!known && !whole) throw std::invalid_argument("rule kind " + kind + " takes no '" + key + "'");
      const bool per_dtype = value.is_object();
      const bool maps_allowed = kind == "allclose" || whole;
      if (!value.is_number() && !per_dtype) {
        throw std::invalid_argument("rule field '" + key + "' must be a number" +
                                    std::string(maps_allowed ? " or a map dtype -> number" : ""));
      }
      if (per_dtype && !maps_allowed) throw std::invalid_argument("rule field '" + key + "' must be a number");
      // A negative bound fails every candidate, however close (max abs diff 0 included): a
      // mistake of the pipeline's, refused here rather than blamed on the candidates. A
      // max_abs_diff limit of 0 fails exact outputs too (the rule is diff < limit).
      const double least = key == "limit" ? std::nextafter(0.0, 1.0) : 0.0;
      auto check_sign = [&](const json& number, const std::string& field) {
        if (!number.is_number()) throw std::invalid_argument("rule field '" + field + "' must be a number");
        if (number.get<double>() < least) {
          throw std::invalid_argument("rule field '" + field + "' must be " + (least > 0 ? "> 0" : ">= 0") +
                                      ", got " + number.dump() +
                                      ": a candidate is compared against it, so no output could pass");
        }
      };
      if (per_dtype) {
        for (const auto& [dtype, number] : value.items()) check_sign(number, key + "." + dtype);
      } else {
        check_sign(value, key);
      }
    }
  };
  if (kind == "allclose") {
    numbers_only({"atol", "rtol"});
  } else if (kind == "max_abs_diff") {
    numbers_only({"limit"});
  } else if (kind == "share_over_limit") {
    numbers_only({"rtol", "atol", "max_share"});
  } else {
    throw std::invalid_argument("rule kind must be allclose, max_abs_diff or share_over_limit, got '" + kind + "'");
  }
}

StageResult result_from_response(const HarnessResponse& response) {
  StageResult result;
  if (response.status == "pass") {
    result.status = KF_VERDICT_PASS;
  } else if (response.status == "fail") {
    result.status = KF_VERDICT_FAIL;
  } else {
    result.status = KF_VERDICT_ERROR;
  }
  result.error_class = response.error_class;
  if (result.status == KF_VERDICT_ERROR && result.error_class.empty()) result.error_class = "harness_error";
  result.message = response.message;

  std::string tail = findings_text(response.findings);
  if (result.message.empty() && result.status != KF_VERDICT_PASS && !tail.empty()) {
    result.message = tail.substr(0, tail.find('\n'));
  }
  for (const auto& [name, value] : response.metrics.items()) {
    if (value.is_number()) {
      result.metrics.emplace_back(name, value.get<double>());
    } else if (value.is_null()) {
      tail += "metric " + name + ": not finite (NaN or infinity)\n";
    }
  }
  for (const std::string& flag : response.flags) {
    if (flag == "retried_alone") {
      result.metrics.emplace_back("retried_alone", 1);
      tail += "flag retried_alone: out of memory while other jobs shared the device; this is the verdict of a "
              "second run with the device to itself\n";
    } else if (flag == "speedup_over_10x") {
      result.metrics.emplace_back(KF_METRIC_SUSPICIOUS_SPEEDUP, 1);
      tail += "flag speedup_over_10x: the candidate is more than 10x faster than the reference; "
              "check it for a cheat before trusting the number\n";
    } else {
      tail += "flag " + flag + "\n";
    }
  }
  if (result.status == KF_VERDICT_PASS && !response.message.empty()) {
    // A pass keeps no message (Job::pass): what the harness says of it, such as the
    // kernelbenchx calls it did not time and why, goes to the log.
    tail += "harness: " + response.message + "\n";
  }
  if (!response.log_tail.empty()) {
    if (!tail.empty()) tail += "--- harness log ---\n";
    tail += response.log_tail;
  }
  result.log_tail = std::move(tail);
  return result;
}

CallBudget call_budget(const EvalJob& job, const ChildLimits& limits) {
  return CallBudget::of(limits.timeout_seconds, job.seconds_left(), job.cancelled);
}

std::string admission_key(const EvalJob& job) {
  return job.task_path + '\n' + job.task_format + '\n' +
         (job.task_sizes.is_object() ? job.task_sizes.dump() : std::string("{}")) + '\n' +
         std::to_string(job.task_size_scale) + '\n' + std::to_string(job.task_fit_memory_mb);
}

json harness_request(const std::string& action, const EvalJob& job, const std::string& language,
                     const ChildLimits& limits) {
  json request = {{"action", action}};
  if (!job.task_path.empty()) {
    request["task"] = {{"id", job.task_id},
                       {"path", job.task_path},
                       {"format", job.task_format},
                       {"sizes", job.task_sizes.is_object() ? job.task_sizes : json::object()},
                       {"size_scale", job.task_size_scale},
                       {"fit_memory_mb", job.task_fit_memory_mb}};
  }
  json candidate = {{"language", language}};
  if (job.code) candidate["code"] = *job.code;
  request["candidate"] = candidate;
  request["limits"] = {{"timeout_s", limits.timeout_seconds},
                       {"memory_mb", limits.memory_mb},
                       {"cpu_s", limits.cpu_seconds},
                       {"network", false}};
  return request;
}

namespace {

// The run.environment attribute of a server's environment: its facts, with the one that
// says which card judged listed as placement (kforge/abi.h, KF_ENV_PLACEMENT).
std::string environment_attribute(json environment) {
  if (environment.contains(kEnvironmentCard)) environment[KF_ENV_PLACEMENT] = json::array({kEnvironmentCard});
  return environment.dump();
}

std::string language_of(const EvalJob& job, const std::string& fixed) {
  if (!fixed.empty()) return fixed;
  return job.language.empty() ? std::string(kLanguagePython) : job.language;
}

}  // namespace

CheckStage::CheckStage(std::shared_ptr<HarnessPool> pool, Options options)
    : pool_(std::move(pool)), options_(std::move(options)) {}

StageResult CheckStage::process(const EvalJob& job) const {
  if (!job.code) return StageResult::fail(KF_ERROR_NO_CANDIDATE, "the job has no candidate.code to check");
  json request = harness_request("check", job, language_of(job, options_.language), options_.limits);
  if (!options_.rules_file.empty()) request["options"] = {{"rules_file", options_.rules_file}};
  const HarnessResponse response = pool_->call(request, DeviceUse::None, call_budget(job, options_.limits));
  StageResult result = result_from_response(response);
  for (const auto& [field, attribute] : {std::pair{"cpp_source", kAttrCppSource}, std::pair{"cuda_source", kAttrCudaSource}}) {
    auto it = response.extracted.find(field);
    if (it != response.extracted.end() && it->is_string()) result.attributes.emplace_back(attribute, it->get<std::string>());
  }
  return result;
}

TritonCompileStage::TritonCompileStage(std::shared_ptr<HarnessPool> pool, ChildLimits limits)
    : pool_(std::move(pool)), limits_(limits) {}

StageResult TritonCompileStage::process(const EvalJob& job) const {
  if (!job.code) return StageResult::fail(KF_ERROR_NO_CANDIDATE, "the job has no candidate.code to compile");
  const json request = harness_request("compile", job, kLanguageTriton, limits_);
  return result_from_response(pool_->call(request, DeviceUse::Shared, call_budget(job, limits_), admission_key(job)));
}

RunStage::RunStage(std::shared_ptr<HarnessPool> pool, Options options)
    : pool_(std::move(pool)), options_(std::move(options)) {
  std::random_device entropy;
  unseeded_ = (static_cast<uint64_t>(entropy()) << 32) ^ entropy();
  validate_rule(options_.rule);
}

json RunStage::request(const EvalJob& job) const {
  json request = harness_request("run", job, language_of(job, ""), options_.limits);
  if (const std::string* artifact = job.attribute(kAttrArtifact)) {
    std::error_code ec;
    if (std::filesystem::exists(*artifact, ec)) request["candidate"]["artifact"] = *artifact;
  }
  // The harness derives the model, weight and input seeds from this and the task id:
  // the run's secret unless the pipeline pins a seed to reproduce a run.
  const uint64_t seed = options_.seed ? *options_.seed : job.run_seed.value_or(unseeded_);
  request["options"] = {{"trials", options_.trials},
                        {"seed", seed},
                        {"rule", options_.rule},
                        {"timing",
                         {{"enabled", options_.timing},
                          {"warmup", options_.warmup},
                          {"trials", options_.timing_trials},
                          {"baseline", options_.baseline},
                          {"reference_max_age_s", options_.reference_max_age_s}}},
                        {"inputs_on_device", options_.inputs_on_device}};
  return request;
}

StageResult RunStage::process(const EvalJob& job) const {
  const json request = this->request(job);
  std::string note;
  if (const std::string* artifact = job.attribute(kAttrArtifact); artifact && !request["candidate"].contains("artifact")) {
    // A verdict cache can outlive the artifact cache; the harness then compiles itself.
    note = "compile.artifact " + *artifact + " no longer exists; the harness compiled the source itself\n";
  }
  const DeviceUse use = options_.timing ? DeviceUse::Timed : DeviceUse::Shared;
  const HarnessResponse response = pool_->call(request, use, call_budget(job, options_.limits), admission_key(job));
  StageResult result = result_from_response(response);
  if (!response.device.empty()) result.attributes.emplace_back(kAttrRunDevice, response.device);
  if (!response.task_sizes.empty()) result.attributes.emplace_back(kAttrRunTaskSizes, response.task_sizes.dump());
  if (response.environment.is_object()) {
    result.attributes.emplace_back(kAttrRunEnvironment, environment_attribute(response.environment));
  }
  if (!note.empty()) result.log_tail = note + result.log_tail;
  return result;
}

}  // namespace kforge::eval
