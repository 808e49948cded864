// What the run store reads back: the tasks and finished jobs of a series, each job with
// its verdicts when asked for. Store::visit_tasks, load_dataset and load_candidates fill
// them; the reports (report/), exports and `kforge show` read them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/outcome.hpp"

namespace kforge {

struct TaskInfo {
  std::string id;
  std::string name;
  std::string category;    // empty when the source gave none
  std::string complexity;  // C1..C4, empty when unknown
  std::string format;
  double level = 0;
};

// Work lost to the infrastructure and redone (KF_METRIC_INFRA_RETRIES): how many times,
// over how many verdicts.
struct InfraRetries {
  uint64_t retries = 0;
  uint64_t verdicts = 0;
};

// One run series' finished jobs in job order, held in memory (tests, small series); a
// report of a run directory reads its store a task at a time instead (Store::visit_tasks).
struct Dataset {
  std::string label;  // the pipeline's label, else its name: the "strategy" of reports
  std::map<std::string, TaskInfo> tasks;
  std::vector<JobOutcome> jobs;
  // Work lost to the infrastructure and redone (KF_METRIC_INFRA_RETRIES): how many times,
  // over how many verdicts of the series.
  uint64_t infra_retries = 0;
  uint64_t infra_retried_verdicts = 0;
};

// One stage verdict (a row of `attempts`). Code, diff and log are artifact hashes, empty
// when the verdict had none; their contents are in CandidateRecords::artifacts.
struct StageRecord {
  int round = 0;  // the job's fix round when the stage ran (a fix stage runs in the round it opens)
  int step = 0;   // position in the job
  std::string stage;
  std::string kind;
  std::string role;  // generate, check, compile, run, fix, other; empty in a schema-1 store
  std::string status;
  std::string route;
  std::string error_class;
  std::string message;
  std::vector<std::pair<std::string, double>> metrics;  // as the stage reported them
  std::string model;
  std::optional<double> tokens_in;
  std::optional<double> tokens_out;
  std::optional<double> cost;  // the candidate's cost so far
  double seconds = 0;
  bool cached = false;
  bool measured = false;
  std::string code_hash;
  std::string diff_hash;
  std::string log_hash;
};

// One finished job of the series (a row of `jobs`) and its verdicts in order.
struct CandidateRecord {
  std::string task_id;
  int sample = 0;
  int64_t run_id = 0;
  uint64_t job_index = 0;
  std::string status;  // pass, fail, error
  int round = 0;       // the final fix round
  std::string stage;   // the last stage
  std::string error_class;
  std::string message;
  std::string model;
  std::string language;
  std::string device;
  std::optional<double> tokens_in;
  std::optional<double> tokens_out;
  std::optional<double> cost;
  std::optional<double> speedup;
  double seconds = 0;
  std::optional<double> eval_seconds;  // NULL in a schema-1 store
  std::optional<double> gen_seconds;
  std::string finished_at;
  std::vector<StageRecord> stages;
};

struct CandidateRecords {
  std::vector<CandidateRecord> candidates;       // in job order
  std::map<std::string, std::string> artifacts;  // content by hash: every one the stages name
  std::map<std::string, TaskInfo> tasks;         // the tasks of the candidates, by id
};

// One task of a run series and its finished jobs, as Store::visit_tasks reads them.
struct TaskJobs {
  TaskInfo info;       // the store's row of the task; only its id when the store has none
  bool known = false;  // the store has a row for the task
  std::vector<JobOutcome> jobs;             // in job order
  std::vector<CandidateRecord> candidates;  // the same jobs with their verdicts, when asked for
};

}  // namespace kforge
