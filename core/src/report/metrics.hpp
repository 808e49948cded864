// The numbers a report shows, computed from the finished jobs of one output directory.
// docs/metrics.md defines every one of them; the definitions live here and nowhere else.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/outcome.hpp"
#include "report/environment.hpp"
#include "store/records.hpp"

namespace kforge {

// count out of total; rate() is 0 for an empty total.
struct Share {
  uint64_t count = 0;
  uint64_t total = 0;
  double rate() const { return total == 0 ? 0.0 : static_cast<double>(count) / static_cast<double>(total); }
};

// Seed 000 tables 5.1-5.3: one model's row.
struct ModelMetrics {
  std::string model;       // "(none)" for candidates without candidate.model
  Share solved;            // tasks with a passing candidate of this model / tasks it had candidates for
  Share candidates;        // passing candidates / candidates
  uint64_t first_pass = 0;     // tasks it solved with a candidate that passed in round 0
  uint64_t solved_by_fix = 0;  // tasks it solved only after fix rounds
  uint64_t fix_rounds = 0;     // fix rounds its candidates went through (sum of final rounds)
  std::map<std::string, Share> by_complexity;  // solved, per complexity class
};

// A row per complexity class or category: correctness beside compile rate.
struct GroupMetrics {
  std::string name;  // "(none)" for tasks without the attribute
  Share solved;      // tasks
  Share compiled;    // tasks with a candidate that compiled
  std::optional<double> mean_speedup;  // arithmetic mean of the tasks' best speedups
};

struct ErrorShare {
  std::string error_class;  // "(unclassified)" when the verdict had none
  uint64_t count = 0;
  double share = 0;  // of the candidates in its list (failed, or not judged)
};

// KernelBenchX's refinement curve: every candidate's state after round r.
struct RoundMetrics {
  int round = 0;
  uint64_t reached = 0;  // candidates that went through round r
  Share compiled;        // candidates compiled after round r, of all candidates
  Share passed;          // candidates passed after round r, of all candidates
  std::optional<double> mean_speedup;  // over candidates passed after round r with a speedup
};

struct FastP {
  double p = 0;
  Share tasks;  // tasks with a correct candidate faster than p x the baseline
};

struct PassAtK {
  int k = 0;
  double value = 0;
};

// Seed 000 table 6.3: how often a model was chosen and how its candidates did.
struct SelectionRow {
  std::string model;
  uint64_t chosen = 0;  // candidates
  double share = 0;     // of candidates that name a model
  Share passed;         // passing candidates / chosen
};

// A candidate of an unsolved task, as it ended.
struct CandidateFailure {
  int sample = 0;
  int round = 0;
  std::string error_class;  // "(unclassified)" when the verdict had none
  std::string message;
  std::string describe() const;  // "sample 0 round 2: numerical_mismatch: max diff 0.03"
};

struct TaskResult {
  std::string task_id;
  std::string category;
  std::string complexity;
  Share candidates;  // passing / all
  bool solved = false;
  std::optional<int> best_sample;     // fastest correct candidate (best-of-k)
  std::optional<double> best_speedup;
  std::vector<CandidateFailure> failures;  // of an unsolved task, in job order
  bool only_errors = false;  // every failed candidate ended in an error verdict
  double seconds = 0;        // stage time of all its candidates
};

struct Metrics {
  std::string label;  // the run's label: what the reports call its strategy
  uint64_t tasks = 0;
  Share solved;      // tasks with a passing candidate: the headline pass rate
  Share candidates;  // passing candidates
  uint64_t first_pass = 0;
  uint64_t solved_by_fix = 0;
  uint64_t fix_rounds = 0;
  bool compile_known = false;  // some verdict could tell whether code compiled
  Share compiled;              // tasks
  std::vector<ModelMetrics> models;
  std::vector<std::string> complexity_classes;  // sorted, the columns of by_complexity
  std::vector<GroupMetrics> by_complexity;
  std::vector<GroupMetrics> by_category;
  // Candidates judged wrong (final status fail), by final error class.
  std::vector<ErrorShare> errors;
  uint64_t failed_candidates = 0;
  // Candidates not judged (final status error: the harness's, the machine's or the task's
  // fault, never the candidate's), by final error class. They count as not passed.
  std::vector<ErrorShare> not_judged;
  uint64_t not_judged_candidates = 0;
  std::vector<RoundMetrics> rounds;
  std::vector<FastP> fast_p;
  std::optional<double> geomean_speedup;  // over correct tasks with a speedup
  uint64_t speedup_tasks = 0;             // correct tasks with a speedup
  std::vector<PassAtK> pass_at_k;
  double eval_seconds = 0;
  double gen_seconds = 0;
  double tokens_in = 0;
  double tokens_out = 0;
  double cost = 0;
  std::optional<double> cost_per_pass;  // cost per solved task
  uint64_t attempts = 0;
  uint64_t cache_hits = 0;
  uint64_t infra_retries = 0;           // requests redone after their server was lost
  uint64_t infra_retried_verdicts = 0;  // verdicts that needed it
  std::vector<SelectionRow> selection;
  std::vector<EnvironmentUse> environments;  // what judged the jobs (environment.hpp)
  uint64_t error_tasks = 0;  // unsolved tasks whose every candidate ended in an error verdict
  double seconds = 0;        // stage time of every candidate
  // Tasks whose best speedup is below each of kSpeedupBinEdges and not below the one
  // before; empty when no task has a best speedup. Per-task rows are not kept here: a
  // report reads them task by task (report.hpp).
  std::vector<uint64_t> best_speedup_bins;
};

inline constexpr double kFastPThresholds[] = {0, 0.5, 0.8, 1, 1.5, 2};
// The upper edges of the bins of the tasks' best speedups: the fast_p thresholds above 0,
// then 4x and beyond.
inline constexpr double kSpeedupBinEdges[] = {0.5, 0.8, 1, 1.5, 2, 4, HUGE_VAL};

// The unbiased pass@k estimator 1 - C(n-c, k) / C(n, k), as a product so that it does not
// overflow: 1 - prod_{i=n-c+1..n} (1 - k/i). Requires 0 <= c <= n and 1 <= k <= n.
double pass_at_k(int n, int c, int k);

// Whether a task counts for fast_p: correct, and for p > 0 a best speedup above p
// (KernelBench's fast_0 is correctness itself, timed or not).
bool fast_at(const TaskResult& task, double p);

// fast_p over the run's tasks at one of kFastPThresholds (the share in `m.fast_p`).
Share fast_p_of(const Metrics& m, double p);

// A task's row, from all its jobs in job order; `task` gives its id, category and class.
TaskResult task_result(const TaskInfo& task, const std::vector<JobOutcome>& jobs);

// The metrics of a run series, computed a task at a time: add() each task with all its
// jobs in job order, tasks in task order, then finish(). What it keeps grows with the
// models, classes, categories, error classes, fix rounds and environments, never with the
// tasks or jobs.
class MetricsFold {
 public:
  explicit MetricsFold(std::string label);
  ~MetricsFold();
  MetricsFold(const MetricsFold&) = delete;
  MetricsFold& operator=(const MetricsFold&) = delete;

  // Folds one task in; returns its row.
  TaskResult add(const TaskInfo& task, const std::vector<JobOutcome>& jobs);
  // Work the infrastructure lost and a stage redid, over the series (InfraRetries).
  void count_infra_retries(uint64_t retries, uint64_t verdicts);
  Metrics finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Calls `visit` with each task of `data` (its row, or only its id when `data` has none)
// and its jobs, in order of the tasks' first jobs.
void for_each_task(const Dataset& data,
                   const std::function<void(const TaskInfo& task, const std::vector<JobOutcome>& jobs)>& visit);

// The metrics of an in-memory series: its tasks through a MetricsFold.
Metrics compute_metrics(const Dataset& data);

}  // namespace kforge
