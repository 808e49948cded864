// What each candidate went through, verdict by verdict, as the run store keeps it: the
// detail views of the HTML report and `kforge show` render it. Store::load_candidates
// reads it; docs/reports.md shows both renderings.
#pragma once

#include <kforge/abi.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/metrics.hpp"

namespace kforge {

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

// The code a candidate had in one fix round, and the diff that made it.
struct RoundCode {
  int round = 0;
  std::string code_hash;  // empty when no verdict of the round carried code
  std::string diff_hash;  // the fix stage's diff that opened the round; empty for round 0
  bool code_changed = true;  // differs from the previous round's code
};

// One entry per round the candidate went through, 0..final round. A round's code is what
// its last verdict carried (a fix stage records the code it wrote); a diff is shown for the
// round whose fix stage set it, not again for later rounds that kept it.
std::vector<RoundCode> candidate_rounds(const CandidateRecord& candidate);

// The timing statistics a run stage records for each party (the ABI's KF_TIMING_*), in the
// order the reports show them. A metric's name is the party's name and the suffix:
// "reference_ms_mean", "candidate_timing_trials". Kept here once so that
// the HTML report's script, `kforge show`, report.json and report.md agree.
struct TimingStatistic {
  const char* key;      // report.json's name for it
  const char* heading;  // the column's heading
  const char* suffix;
  bool count = false;   // a number of calls (an integer in report.json), not milliseconds
};
inline constexpr TimingStatistic kTimingStatistics[] = {
    {"mean", "mean (ms)", KF_TIMING_MS_MEAN}, {"std", "std (ms)", KF_TIMING_MS_STD},
    {"min", "min (ms)", KF_TIMING_MS_MIN},    {"median", "median (ms)", KF_TIMING_MS},
    {"p90", "p90 (ms)", KF_TIMING_MS_P90},    {"max", "max (ms)", KF_TIMING_MS_MAX},
    {"trials", "trials", KF_TIMING_TRIALS, true}};
inline constexpr const char* kTimingParties[] = {KF_TIMING_REFERENCE, KF_TIMING_CANDIDATE};

// Whether `metric` is one of the timing statistics of a party: the timing table shows it,
// the list of the other metrics does not.
bool is_timing_statistic(const std::string& metric);

// The value `verdict` recorded for metric `name`; nullopt when it recorded none, or there
// is no verdict.
std::optional<double> recorded_metric(const StageRecord* verdict, const std::string& name);

// `verdict`'s value of each of kTimingStatistics for `party`, in that order; nullopt for
// one it did not record, and for all of them when there is no verdict: what was not
// measured is never filled in from what was.
std::vector<std::optional<double>> timing_statistics(const StageRecord* verdict, const std::string& party);

// The verdict whose metrics describe the candidate's correctness and timing: the last one of
// a run stage that reported metrics, else the last with any metrics; null when none has.
const StageRecord* measurement_verdict(const CandidateRecord& candidate);

}  // namespace kforge
