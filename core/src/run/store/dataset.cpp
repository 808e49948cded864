// What reports are computed from: the finished jobs of one series of runs.
#include <fmt/format.h>

#include <unordered_map>

#include "run/store/statements.hpp"
#include "run/store/store.hpp"

namespace kforge {

using sql::Statement;

Dataset Store::load_dataset(int64_t series) {
  std::lock_guard lock(mutex_);
  const std::vector<RunRecord> runs = read_series(series);
  Dataset data;
  if (!runs.empty()) data.strategy = runs.back().strategy;

  Statement tasks(db_, path_, "SELECT id, name, level, category, complexity, format FROM tasks");
  while (tasks.step()) {
    TaskInfo t;
    t.id = tasks.text(0);
    t.name = tasks.text(1);
    t.level = tasks.real(2);
    t.category = tasks.text(3);
    t.complexity = tasks.text(4);
    t.format = tasks.text(5);
    data.tasks.emplace(t.id, std::move(t));
  }

  // Jobs in job order; attempts are matched to them by (run, task, sample): attempts of
  // jobs a killed run left unfinished have no job row and do not count.
  auto job_key = [](int64_t run, const std::string& task, int64_t sample) {
    return fmt::format("{}\n{}\n{}", run, task, sample);
  };
  std::unordered_map<std::string, size_t> slot;
  Statement jobs(db_, path_,
                 "SELECT jobs.run_id, task_id, sample, jobs.status, round, error_class, message, model, tokens_in, "
                 "tokens_out, cost, speedup FROM jobs JOIN runs ON runs.id = jobs.run_id WHERE runs.series = ?1 "
                 "ORDER BY job_index, jobs.run_id");
  jobs.bind(1, series);
  while (jobs.step()) {
    JobRecord j;
    j.task_id = jobs.text(1);
    j.sample = static_cast<int>(jobs.integer(2));
    j.status = parse_status(jobs.text(3));
    j.round = static_cast<int>(jobs.integer(4));
    j.error_class = jobs.text(5);
    j.message = jobs.text(6);
    j.model = jobs.text(7);
    j.tokens_in = jobs.real(8);
    j.tokens_out = jobs.real(9);
    j.cost = jobs.real(10);
    j.speedup = jobs.optional_real(11);
    slot.emplace(job_key(jobs.integer(0), j.task_id, j.sample), data.jobs.size());
    data.jobs.push_back(std::move(j));
  }

  Statement attempts(db_, path_,
                     "SELECT attempts.run_id, task_id, sample, kind, attempts.status, error_class, round, seconds, cached, "
                     "json_extract(metrics, '$.llm_recorded_seconds') "
                     "FROM attempts JOIN runs ON runs.id = attempts.run_id WHERE runs.series = ?1 ORDER BY attempts.id");
  attempts.bind(1, series);
  while (attempts.step()) {
    auto it = slot.find(job_key(attempts.integer(0), attempts.text(1), attempts.integer(2)));
    if (it == slot.end()) continue;
    AttemptFacts a;
    a.kind = attempts.text(3);
    a.status = parse_status(attempts.text(4));
    a.error_class = attempts.text(5);
    a.round = static_cast<int>(attempts.integer(6));
    a.seconds = attempts.real(7);
    a.cached = attempts.integer(8) != 0;
    a.recorded_seconds = attempts.optional_real(9);
    add_attempt(data.jobs[it->second], a);
  }
  return data;
}


}  // namespace kforge
