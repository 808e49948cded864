// The stages that ask the harness: L1 check, Triton compile, L3 run. Each turns a job
// into one protocol request and the response into a verdict (harness/PROTOCOL.md).
#pragma once

#include "eval_job.hpp"
#include "harness_pool.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kforge::eval {

// Limits for the child that runs one request (PROTOCOL.md `limits`).
struct ChildLimits {
  double timeout_seconds = 60;
  int64_t memory_mb = 16384;
  int64_t cpu_seconds = 300;
};

// The comparison rule of a tolerance preset: default (allclose, fp32 atol 1e-4 rtol 3e-4,
// fp16/bf16 1e-2, plus the whole-output checks max_rel_l2, max_centered_rel_error and
// max_coarse_share: the harness's DEFAULT_RULE), seed000
// (max_abs_diff 1e-3), kernelbench-v0 (allclose 1e-2 for every dtype): the last two as
// their benchmarks judged. Throws std::invalid_argument for other names.
nlohmann::json tolerance_rule(const std::string& preset);
// Checks a user-given rule object (kind and its numbers) so that typos fail at load.
void validate_rule(const nlohmann::json& rule);

// A response as a verdict: status and class as the harness said, findings, flags and the
// harness' log tail in the log tail, numeric metrics as metrics (null ones, which stand
// for NaN or infinity, are named in the log tail instead).
StageResult result_from_response(const HarnessResponse& response);

class CheckStage {
 public:
  struct Options {
    std::string language;    // empty: the job's candidate.language
    std::string rules_file;  // extra rules (absolute path), empty for the built-in ones only
    ChildLimits limits;
  };
  CheckStage(std::shared_ptr<HarnessPool> pool, Options options);
  // Pass: job attributes check.cpp_source / check.cuda_source carry the extracted sources.
  StageResult process(const EvalJob& job) const;

 private:
  std::shared_ptr<HarnessPool> pool_;
  Options options_;
};

class TritonCompileStage {
 public:
  TritonCompileStage(std::shared_ptr<HarnessPool> pool, ChildLimits limits);
  StageResult process(const EvalJob& job) const;

 private:
  std::shared_ptr<HarnessPool> pool_;
  ChildLimits limits_;
};

class RunStage {
 public:
  struct Options {
    int64_t trials = 5;
    // The seed the harness derives every seed of a request from: set, it reproduces a
    // recorded run; unset, the job's run seed (the run's secret), else one drawn at random
    // for this stage.
    std::optional<uint64_t> seed;
    nlohmann::json rule = tolerance_rule("default");
    bool timing = false;
    int64_t warmup = 3;
    int64_t timing_trials = 20;
    std::string baseline = "eager";
    double reference_max_age_s = 600;  // the reference's timing is measured again when older
    bool inputs_on_device = true;
    ChildLimits limits;
  };
  RunStage(std::shared_ptr<HarnessPool> pool, Options options);
  // Without candidate code, the task's reference runs as its own candidate. Sets
  // candidate.device and run.task_sizes.
  StageResult process(const EvalJob& job) const;
  // The verdict cache's key material: what judges (HarnessPool::judge_identity).
  std::string judge_identity() const { return pool_->judge_identity(); }
  // The harness request for `job` (before the client adds its id).
  nlohmann::json request(const EvalJob& job) const;

 private:
  std::shared_ptr<HarnessPool> pool_;
  Options options_;
  uint64_t unseeded_;  // the seed of jobs without a run seed (outside a run): drawn once
};

// The request body shared by all actions (the client adds the id and cuts
// limits.timeout_s to the stage's time left).
nlohmann::json harness_request(const std::string& action, const EvalJob& job, const std::string& language,
                               const ChildLimits& limits);
// The budget of a request for `job` under `limits`.
CallBudget call_budget(const EvalJob& job, const ChildLimits& limits);
// What identifies `job`'s task at its sizes for memory admission (one measured need each).
std::string admission_key(const EvalJob& job);

}  // namespace kforge::eval
