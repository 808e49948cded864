// A series' finished jobs held in memory, for small series and tests: what visit_tasks
// gives, collected.
#include "run/store/statements.hpp"
#include "run/store/store.hpp"

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
  return data;
}

}  // namespace kforge
