// What reports are computed from: the finished jobs of one series of runs.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "run/store/statements.hpp"
#include "run/store/store.hpp"

namespace kforge {

using sql::Statement;

Dataset Store::load_dataset(int64_t series) {
  std::lock_guard lock(mutex_);
  const std::vector<RunRecord> runs = read_series(series);
  Dataset data;
  if (!runs.empty()) data.label = runs.back().label;

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

  // Jobs in job order, with the facts folded when each finished. A store of schema 1 has
  // none of them (its reports say nothing about compile rates, evaluation and generation
  // time); attempts of jobs a killed run left unfinished have no job row and never count.
  const std::string facts = schema_version_ >= 2 ? "device, compiled_rounds, eval_seconds, gen_seconds, cached_attempts"
                                                  : "NULL, NULL, NULL, NULL, NULL";
  // Schema 3 added the environment that judged each job.
  const std::string environment = schema_version_ >= 3
                                      ? "(SELECT content FROM artifacts WHERE artifacts.hash = jobs.environment_hash)"
                                      : "NULL";
  Statement jobs(db_, path_,
                 ("SELECT task_id, sample, jobs.status, round, error_class, message, model, tokens_in, tokens_out, cost, "
                  "speedup, job_index, stage, language, attempts, seconds, " + facts + ", " + environment +
                  " FROM jobs JOIN runs ON runs.id = jobs.run_id WHERE runs.series = ?1 ORDER BY job_index, jobs.run_id")
                     .c_str());
  jobs.bind(1, series);
  while (jobs.step()) {
    JobOutcome j;
    j.task_id = jobs.text(0);
    j.sample = static_cast<int>(jobs.integer(1));
    j.status = parse_status(jobs.text(2));
    j.round = static_cast<int>(jobs.integer(3));
    j.error_class = jobs.text(4);
    j.message = jobs.text(5);
    j.model = jobs.text(6);
    j.tokens_in = jobs.real(7);
    j.tokens_out = jobs.real(8);
    j.cost = jobs.real(9);
    j.speedup = jobs.optional_real(10);
    j.job_index = static_cast<uint64_t>(jobs.integer(11));
    j.stage = jobs.text(12);
    j.language = jobs.text(13);
    j.attempts = static_cast<int>(jobs.integer(14));
    j.seconds = jobs.real(15);
    j.device = jobs.text(16);
    if (!jobs.is_null(17)) {
      j.compile_evidence = true;
      const auto rounds = nlohmann::json::parse(jobs.text(17), nullptr, false);
      for (const auto& r : rounds.is_array() ? rounds : nlohmann::json::array()) {
        const size_t round = r.get<size_t>();
        if (j.compiled_in_round.size() <= round) j.compiled_in_round.resize(round + 1, 0);
        j.compiled_in_round[round] = 1;
      }
    }
    j.eval_seconds = jobs.real(18);
    j.gen_seconds = jobs.real(19);
    j.cached_attempts = static_cast<int>(jobs.integer(20));
    if (!jobs.is_null(21)) j.environment = jobs.text(21);
    data.jobs.push_back(std::move(j));
  }

  // Work the infrastructure lost and a stage redid, from the verdicts' own metrics.
  Statement retried(db_, path_,
                    "SELECT count(*), coalesce(sum(json_extract(a.metrics, '$." KF_METRIC_INFRA_RETRIES "')), 0) "
                    "FROM attempts a JOIN runs ON runs.id = a.run_id "
                    "WHERE runs.series = ?1 AND json_extract(a.metrics, '$." KF_METRIC_INFRA_RETRIES "') > 0");
  retried.bind(1, series);
  if (retried.step()) {
    data.infra_retried_verdicts = static_cast<uint64_t>(retried.integer(0));
    data.infra_retries = static_cast<uint64_t>(retried.integer(1));
  }
  return data;
}

}  // namespace kforge
