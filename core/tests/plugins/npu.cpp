// A third-party plugin the engine has never heard of: a generator and a compile / run / fix
// ladder for an "NPU", with kind names that share nothing with the bundled plugins. Its
// roles and the ABI's well-known names are all the reports may go by.
//
// Built twice: as "npu" with its own names, and as "lookalike" with the names of the
// bundled kinds (NPU_* defined), so a test can show the same behaviour gets the same report
// whatever the kinds are called.
#include <kforge/sdk.hpp>

#ifndef NPU_PLUGIN
#define NPU_PLUGIN "npu"
#define NPU_TASKS "npu.tasks"
#define NPU_GENERATE "vllm.generate"
#define NPU_COMPILE "npu.compile"
#define NPU_RUN "npu.run"
#define NPU_FIX "npu.fix"
// The names two of its kinds had before a rename (the registry finds them by these too).
#define NPU_FORMER_TASKS "npu.graph_tasks"
#define NPU_FORMER_FIX "npu.repair"
#endif

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using kforge::sdk::Config;
using kforge::sdk::Job;
using kforge::sdk::Param;

bool listed(const std::vector<std::string>& ids, std::string_view id) {
  for (const auto& candidate : ids) {
    if (candidate == id) return true;
  }
  return false;
}

// Tasks npu-0 .. npu-(count-1), of one task format and category when given.
class Tasks : public kforge::sdk::Source {
 public:
  static constexpr const char* kName = NPU_TASKS;
  static constexpr const char* kDoc = "Tasks npu-0, npu-1, ...";
  static std::vector<std::string> former_names() { return {NPU_FORMER_TASKS}; }
  static std::vector<Param> params() {
    return {Param{"count", KF_PARAM_INT, "3", false, "How many."}.at_least(0),
            {"format", KF_PARAM_STRING, "", false, "Their task.format."},
            {"category", KF_PARAM_STRING, "", false, "Their task.category."}};
  }
  explicit Tasks(const Config& cfg)
      : count_(cfg.integer("count")), format_(cfg.string("format")), category_(cfg.string("category")) {}
  bool next(kforge::sdk::Task& task) override {
    if (next_ >= count_) return false;
    task.set(KF_KEY_TASK_ID, "npu-" + std::to_string(next_++));
    if (!format_.empty()) task.set(KF_KEY_TASK_FORMAT, format_);
    if (!category_.empty()) task.set(KF_KEY_TASK_CATEGORY, category_);
    return true;
  }
  std::optional<uint64_t> count() const override { return static_cast<uint64_t>(count_); }

 private:
  int64_t count_;
  std::string format_;
  std::string category_;
  int64_t next_ = 0;
};

// Writes the candidate as a recorded model answer would: replayed in no time, recorded
// taking 2 s. Leaves what it saw of the run's secret seed in npu.seed.
class Generate : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = NPU_GENERATE;
  static constexpr const char* kDoc = "Writes candidate.code for the task, as a replayed model answer.";
  static constexpr kf_stage_role kRole = KF_ROLE_GENERATE;
  explicit Generate(const Config&) {}
  void process(Job& job) override {
    job.set(KF_KEY_CANDIDATE_CODE, "kernel for " + job.get_or(KF_KEY_TASK_ID));
    job.set(KF_KEY_CANDIDATE_LANGUAGE, "ascendc");
    job.set(KF_KEY_CANDIDATE_MODEL, "vllm-7b");
    job.set_number(KF_KEY_CANDIDATE_TOKENS_IN, 100);
    job.set_number(KF_KEY_CANDIDATE_COST, 0.5);
    const auto seed = job.run_seed();
    job.set("npu.seed", seed ? std::to_string(*seed) : "none");
    job.metric(KF_METRIC_RECORDED_SECONDS, 2.0);
    job.pass();
  }
};

// Fails the listed tasks with a compile error in round 0; they compile once fixed.
class Compile : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = NPU_COMPILE;
  static constexpr const char* kDoc = "Compiles for the NPU; fails the listed tasks until they are fixed.";
  static constexpr kf_stage_role kRole = KF_ROLE_COMPILE;
  static std::vector<Param> params() {
    return {{"broken", KF_PARAM_STRING_LIST, "[]", false, "Task ids whose first candidate does not build."}};
  }
  explicit Compile(const Config& cfg) : broken_(cfg.list("broken")) {}
  void process(Job& job) override {
    if (listed(broken_, job.get_or(KF_KEY_TASK_ID)) && job.get_or(KF_KEY_CANDIDATE_DIFF).empty()) {
      return job.fail(KF_ERROR_COMPILE, "npu-cc: error: no such intrinsic");
    }
    job.pass();
  }

 private:
  std::vector<std::string> broken_;
};

// Runs on "npu:3" of an "Ascend 910B" and times the candidate at 2.5x, with the ABI's
// well-known names only: its environment, correctness evidence and per-call timings; the
// listed tasks' outputs do not match. Cacheable: the verdict depends on the code, and on
// the NPU's model, which the host cannot know: the stage adds it to the key
// (NPU_TEST_DEVICE_MODEL, read at call time). With timing, the verdict is measured. It
// warms up (its server starts) when the run starts, and says in each job (npu.warm_ups)
// how often that had happened by then; `lost` tasks' work was lost once to the
// infrastructure and redone (KF_METRIC_INFRA_RETRIES).
class Run : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = NPU_RUN;
  static constexpr const char* kDoc = "Runs on the NPU and compares with the reference; times it when asked.";
  static constexpr kf_stage_role kRole = KF_ROLE_RUN;
  static constexpr uint32_t kFlags = KF_STAGE_CACHEABLE;
  static std::vector<Param> params() {
    return {{"timing", KF_PARAM_BOOL, "true", false, "Time the candidate."},
            Param{"budget", KF_PARAM_DURATION, "30s", false, "How long a run may take."}.above(0),
            {"mismatched", KF_PARAM_STRING_LIST, "[]", false, "Task ids whose outputs do not match."},
            {"lost", KF_PARAM_STRING_LIST, "[]", false, "Task ids whose work was lost once and redone."}};
  }
  explicit Run(const Config& cfg)
      : timing_(cfg.boolean("timing")),
        budget_(cfg.number("budget")),
        mismatched_(cfg.list("mismatched")),
        lost_(cfg.list("lost")) {}
  void warm_up() { ++warm_ups_; }
  void process(Job& job) override {
    job.set("npu.warm_ups", std::to_string(warm_ups_.load()));
    if (listed(lost_, job.get_or(KF_KEY_TASK_ID))) job.metric(KF_METRIC_INFRA_RETRIES, 1);
    job.set(KF_KEY_CANDIDATE_DEVICE, "npu:3");
    job.set(KF_KEY_RUN_ENVIRONMENT, R"({"npu":"Ascend 910B","cann":"8.0"})");
    job.metric("budget_seconds", budget_);
    job.metric(KF_METRIC_TRIALS, 5);
    if (listed(mismatched_, job.get_or(KF_KEY_TASK_ID))) {
      job.metric(KF_METRIC_MAX_ABS_DIFF, 0.5);
      return job.fail(KF_ERROR_NUMERICAL_MISMATCH, "output 0 differs by up to 0.5");
    }
    job.metric(KF_METRIC_MAX_ABS_DIFF, 0.0);
    if (timing_) {
      for (const auto& [party, median] : {std::pair{KF_TIMING_REFERENCE, 5.0}, {KF_TIMING_CANDIDATE, 2.0}}) {
        const std::string name = party;
        job.metric((name + KF_TIMING_MS).c_str(), median);
        job.metric((name + KF_TIMING_MS_MEAN).c_str(), median + 0.1);
        job.metric((name + KF_TIMING_MS_STD).c_str(), 0.05);
        job.metric((name + KF_TIMING_MS_MIN).c_str(), median - 0.5);
        job.metric((name + KF_TIMING_MS_P90).c_str(), median + 0.5);
        job.metric((name + KF_TIMING_MS_MAX).c_str(), median + 1.0);
        job.metric((name + KF_TIMING_TRIALS).c_str(), 10);
      }
      job.metric(KF_METRIC_SPEEDUP, 2.5);
      job.mark_measured();
    }
    job.pass();
  }
  std::string cache_key(const Job&) const {
    const char* model = std::getenv("NPU_TEST_DEVICE_MODEL");
    return std::string("device-model=") + (model ? model : "unknown");
  }

 private:
  bool timing_;
  double budget_;
  std::vector<std::string> mismatched_;
  std::vector<std::string> lost_;
  std::atomic<int> warm_ups_{0};
};

class Fix : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = NPU_FIX;
  static constexpr const char* kDoc = "Rewrites a failing candidate and leaves the diff.";
  static std::vector<std::string> former_names() { return {NPU_FORMER_FIX}; }
  static constexpr kf_stage_role kRole = KF_ROLE_FIX;
  explicit Fix(const Config&) {}
  void process(Job& job) override {
    const std::string code = job.get_or(KF_KEY_CANDIDATE_CODE);
    job.set(KF_KEY_CANDIDATE_CODE, code + " (fixed)");
    job.set(KF_KEY_CANDIDATE_DIFF, "-" + code + "\n+" + code + " (fixed)\n");
    job.metric(KF_METRIC_RECORDED_SECONDS, 1.0);
    job.pass();
  }
};

}  // namespace

KFORGE_PLUGIN(NPU_PLUGIN, "1.0.0", Tasks, Generate, Compile, Run, Fix)
