// A series' finished jobs held in memory, for small series and tests: what visit_tasks
// gives, collected.
#include "store/statements.hpp"
#include "store/store.hpp"

namespace kforge {

using sql::Statement;

Dataset Store::load_dataset(int64_t series) {
  std::lock_guard lock(mutex_);
  Dataset data;
  const std::vector<RunRecord> runs = read_series(series);
  if (!runs.empty()) data.label = runs.back().label;
  Statement tasks(db_, path_, "SELECT id, name, level, category, complexity, format FROM tasks");
  while (tasks.step()) {
    TaskInfo t{tasks.text(0), tasks.text(1), tasks.text(3), tasks.text(4), tasks.text(5), tasks.real(2)};
    data.tasks.emplace(t.id, std::move(t));
  }
  visit_tasks(series, false, [&](TaskJobs& task) {
    for (JobOutcome& job : task.jobs) data.jobs.push_back(std::move(job));
  });
  const InfraRetries retried = infra_retries(series);
  data.infra_retries = retried.retries;
  data.infra_retried_verdicts = retried.verdicts;
  return data;
}

InfraRetries Store::infra_retries(int64_t series) {
  std::lock_guard lock(mutex_);
  // From the verdicts' own metrics: a stage that redid work says so (KF_METRIC_INFRA_RETRIES).
  Statement retried(db_, path_,
                    "SELECT count(*), coalesce(sum(json_extract(a.metrics, '$." KF_METRIC_INFRA_RETRIES "')), 0) "
                    "FROM attempts a JOIN runs ON runs.id = a.run_id "
                    "WHERE runs.series = ?1 AND json_extract(a.metrics, '$." KF_METRIC_INFRA_RETRIES "') > 0");
  retried.bind(1, series);
  InfraRetries result;
  if (retried.step()) {
    result.verdicts = static_cast<uint64_t>(retried.integer(0));
    result.retries = static_cast<uint64_t>(retried.integer(1));
  }
  return result;
}

}  // namespace kforge
