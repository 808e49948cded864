// Writes candidates into a real run store through the Store API, verdict by verdict and job
// by job, as a run records them (fix rounds, code, diffs, logs, metrics, model, cost): the
// data of the report's detail views, `kforge show` and the browser test, without a run.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/outcome.hpp"
#include "store/store.hpp"

namespace kforge_test {

struct StepSpec {
  std::string stage;
  kf_stage_role role = KF_ROLE_OTHER;
  kforge::VerdictStatus status = kforge::VerdictStatus::Pass;
  std::string error_class;
  std::string message;
  std::string log;
  std::vector<std::pair<std::string, double>> metrics;
  std::optional<std::string> code;  // the candidate's code once this stage ran (generate and fix set it)
  std::optional<std::string> diff;  // candidate.diff once this stage ran (fix sets it)
  bool to_fix = false;              // the verdict takes a back edge: the next stage runs in a new fix round
};

struct CandidateSpec {
  std::string task;
  int sample = 0;
  std::string model;
  std::string language = "cpp";
  double tokens_in = 0;
  double tokens_out = 0;
  double cost = 0;
  std::vector<StepSpec> steps;
};

struct TaskSpec {
  std::string id;
  std::string category;
  std::string complexity;
};

// A run started in `store` as write_run starts it; returns its id.
inline int64_t begin_test_run(kforge::Store& store, const std::string& label) {
  kforge::RunRecord record;
  record.pipeline = label;
  record.label = label;
  record.pipeline_file = "/pipelines/" + label + ".yaml";
  record.config = "{}";
  record.config_hash = "0";
  record.kforge_version = "test";
  record.host = "test-host";
  return store.begin_run(record);
}

// A task as the store's task source would give it: task `index` of the run.
inline std::shared_ptr<kforge::Task> make_task(const TaskSpec& spec, size_t index) {
  auto task = std::make_shared<kforge::Task>();
  task->index = index;
  task->strings[KF_KEY_TASK_ID] = spec.id;
  task->strings[KF_KEY_TASK_CATEGORY] = spec.category;
  task->strings[KF_KEY_TASK_COMPLEXITY] = spec.complexity;
  task->strings[KF_KEY_TASK_FORMAT] = "kernelbench-torch";
  return task;
}

// One candidate of `task`, verdict by verdict, then its job, as a run records them.
inline void record_candidate(kforge::Store& store, int64_t run, const std::shared_ptr<kforge::Task>& task,
                             const CandidateSpec& c, int k) {
  kforge::Job job;
  job.task = task;
  job.sample = c.sample;
  job.index = task->index * static_cast<uint64_t>(k) + static_cast<uint64_t>(c.sample);
  job.strings[KF_KEY_CANDIDATE_MODEL] = c.model;
  job.strings[KF_KEY_CANDIDATE_LANGUAGE] = c.language;
  job.numbers[KF_KEY_CANDIDATE_TOKENS_IN] = c.tokens_in;
  job.numbers[KF_KEY_CANDIDATE_TOKENS_OUT] = c.tokens_out;
  job.numbers[KF_KEY_CANDIDATE_COST] = c.cost;
  for (const StepSpec& s : c.steps) {
    if (s.code) job.strings[KF_KEY_CANDIDATE_CODE] = *s.code;
    if (s.diff) job.strings[KF_KEY_CANDIDATE_DIFF] = *s.diff;
    kforge::Verdict v;
    v.stage = s.stage;
    v.kind = "test." + s.stage;
    v.role = s.role;
    v.status = s.status;
    v.error_class = s.error_class;
    v.message = s.message;
    v.log_tail = s.log;
    v.metrics = s.metrics;
    v.round = job.round;
    v.seconds = 0.25;
    v.measured = !s.metrics.empty();
    store.record_attempt(run, job, v);
    job.verdicts.push_back(v);
    if (s.to_fix) ++job.round;
  }
  store.record_job(run, kforge::outcome_of(job));
}

// A finished run of `tasks` x `candidates` in `store`; returns the run id.
inline int64_t write_run(kforge::Store& store, const std::vector<TaskSpec>& tasks,
                         const std::vector<CandidateSpec>& candidates, const std::string& label = "investigate", int k = 1) {
  const int64_t run = begin_test_run(store, label);
  std::map<std::string, std::shared_ptr<kforge::Task>> by_id;
  for (size_t i = 0; i < tasks.size(); ++i) by_id[tasks[i].id] = make_task(tasks[i], i);
  for (const CandidateSpec& c : candidates) record_candidate(store, run, by_id.at(c.task), c, k);
  store.end_run(run, kforge::RunStatus::Finished);
  return run;
}

}  // namespace kforge_test
