// The numbers a report shows, computed from the finished jobs of one output directory.
// docs/metrics.md defines every one of them; the definitions live here and nowhere else.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/outcome.hpp"
#include "report/environment.hpp"

namespace kforge {

struct TaskInfo {
  std::string id;
  std::string name;
  std::string category;    // empty when the source gave none
  std::string complexity;  // C1..C4, empty when unknown
  std::string format;
  double level = 0;
};

// Everything a report is computed from: one run series' finished jobs in job order.
struct Dataset {
  std::string label;  // the pipeline's label, else its name: the "strategy" of reports
  std::map<std::string, TaskInfo> tasks;
  std::vector<JobOutcome> jobs;
};

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

// KernelBenchX's rates for one category, over the candidates with a verdict on them
// (pass or fail; an error verdict blames the task, the harness or the machine instead).
struct CategoryRates {
  std::string name;        // "(none)" for tasks without a category
  Share called;            // ran to the end: passed, or failed only by the comparison
  Share correct;           // passed (execution accuracy)
  Share faster;            // of the correct timed candidates: speedup above 1
  std::optional<double> mean_speedup;  // arithmetic mean over the correct timed candidates
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
  // Only for task sets of format kernelbenchx (a task.format value), else empty.
  std::vector<CategoryRates> category_rates;
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
  std::vector<SelectionRow> selection;
  std::vector<TaskResult> per_task;  // in task order of first appearance
  std::vector<EnvironmentUse> environments;  // what judged the jobs (environment.hpp)
};

inline constexpr double kFastPThresholds[] = {0, 0.5, 0.8, 1, 1.5, 2};

// The unbiased pass@k estimator 1 - C(n-c, k) / C(n, k), as a product so that it does not
// overflow: 1 - prod_{i=n-c+1..n} (1 - k/i). Requires 0 <= c <= n and 1 <= k <= n.
double pass_at_k(int n, int c, int k);

// fast_p over tasks: correct, and for p > 0 a best speedup above p (KernelBench's fast_0
// is correctness itself, timed or not).
Share fast_p(const std::vector<TaskResult>& tasks, double p);

Metrics compute_metrics(const Dataset& data);

}  // namespace kforge
