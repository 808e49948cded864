// `kforge export --format kernelbench`: KernelBench's eval_results.json and a baseline
// timing file in its results/timing shape, so KernelBench's own scripts read kforge's
// results (docs/kernelbench.md). Reads the tasks the host hands an exporter
// (kf_exporter_kind in kforge/abi.h).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace kforge::kernelbench {

// The leading problem id of a KernelBench task name ("19_ReLU" -> 19); nullopt without one.
std::optional<int> problem_id_of(const std::string& task_name);

// KernelBench's entry for one candidate (a job of an exporter's task): {sample_id,
// compiled, correctness, metadata, runtime, runtime_stats}, runtimes in milliseconds as
// KernelBench's timing.py measures them.
nlohmann::ordered_json kernelbench_entry(const nlohmann::json& job);

// One export. Options: {"level": L}, the level to export when the run has several.
// Every refusal (several levels without one chosen, a task that is no KernelBench
// problem, two tasks with one problem id) is thrown before finish writes anything.
class KernelBenchExport {
 public:
  explicit KernelBenchExport(std::string_view options_json);
  void task(std::string_view task_json);
  // The two documents: eval_results.json, then baseline_time_torch.json.
  std::pair<std::string, std::string> finish() const;

 private:
  struct Problem {
    std::string task;
    std::string name;
    nlohmann::ordered_json entries;               // array, by sample
    std::optional<nlohmann::ordered_json> baseline;  // the reference's statistics
  };
  std::optional<int> level_;
  // Per level, per problem id, in id order; a task without an id waits in unnumbered.
  std::map<int, std::map<int, Problem>> problems_;
  std::map<int, std::string> unnumbered_;  // level -> the first task without a problem id
  std::map<int, std::string> duplicate_;   // level -> why two tasks share an id
};

}  // namespace kforge::kernelbench
