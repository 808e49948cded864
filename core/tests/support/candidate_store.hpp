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
#include "run/store/store.hpp"

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

// A finished run of `tasks` x `candidates` in `store`; returns the run id.
inline int64_t write_run(kforge::Store& store, const std::vector<TaskSpec>& tasks,
                         const std::vector<CandidateSpec>& candidates, const std::string& label = "investigate", int k = 1) {
  kforge::RunRecord record;
  record.pipeline = label;
  record.label = label;
  record.pipeline_file = "/pipelines/" + label + ".yaml";
  record.config = "{}";
  record.config_hash = "0";
  record.kforge_version = "test";
  record.host = "test-host";
  const int64_t run = store.begin_run(record);
  std::map<std::string, std::shared_ptr<kforge::Task>> by_id;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto task = std::make_shared<kforge::Task>();
    task->index = i;
    task->strings[KF_KEY_TASK_ID] = tasks[i].id;
    task->strings[KF_KEY_TASK_CATEGORY] = tasks[i].category;
    task->strings[KF_KEY_TASK_COMPLEXITY] = tasks[i].complexity;
    task->strings[KF_KEY_TASK_FORMAT] = "kernelbench-torch";
    by_id[tasks[i].id] = task;
  }
  for (const CandidateSpec& c : candidates) {
    kforge::Job job;
    job.task = by_id.at(c.task);
    job.sample = c.sample;
    job.index = job.task->index * static_cast<uint64_t>(k) + static_cast<uint64_t>(c.sample);
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
  store.end_run(run, kforge::RunStatus::Finished);
  return run;
}

}  // namespace kforge_test
