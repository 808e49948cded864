// What the detail views read: every verdict of the series' finished jobs, with the code,
// diffs and logs they name.
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "run/store/statements.hpp"
#include "run/store/store.hpp"

namespace kforge {

using sql::Statement;

namespace {

std::vector<std::pair<std::string, double>> parse_metrics(const std::string& text) {
  std::vector<std::pair<std::string, double>> metrics;
  const auto parsed = nlohmann::ordered_json::parse(text, nullptr, false);
  if (!parsed.is_object()) return metrics;
  for (const auto& [name, value] : parsed.items()) {
    if (value.is_number()) metrics.emplace_back(name, value.get<double>());
  }
  return metrics;
}

}  // namespace

CandidateRecords Store::load_candidates(int64_t series, const std::string* task_id) {
  std::lock_guard lock(mutex_);
  CandidateRecords out;
  Statement tasks(db_, path_, "SELECT id, name, level, category, complexity, format FROM tasks");
  while (tasks.step()) {
    TaskInfo t{tasks.text(0), tasks.text(1), tasks.text(3), tasks.text(4), tasks.text(5), tasks.real(2)};
    out.tasks.emplace(t.id, std::move(t));
  }
  const std::string task_filter = task_id ? " AND jobs.task_id = ?2" : "";
  // Schema 1 has no roles, no measured flags and no job facts.
  const bool v2 = schema_version_ >= 2;
  const std::string job_facts = v2 ? "jobs.device, jobs.eval_seconds, jobs.gen_seconds" : "NULL, NULL, NULL";
  Statement jobs(db_, path_,
                 ("SELECT jobs.run_id, jobs.task_id, jobs.sample, jobs.job_index, jobs.status, jobs.round, jobs.stage, "
                  "jobs.error_class, jobs.message, jobs.model, jobs.language, jobs.tokens_in, jobs.tokens_out, jobs.cost, "
                  "jobs.speedup, jobs.seconds, jobs.finished_at, " + job_facts +
                  " FROM jobs JOIN runs ON runs.id = jobs.run_id WHERE runs.series = ?1" + task_filter +
                  " ORDER BY jobs.job_index, jobs.run_id")
                     .c_str());
  jobs.bind(1, series);
  if (task_id) jobs.bind(2, *task_id);
  std::map<std::tuple<int64_t, std::string, int>, size_t> by_job;
  while (jobs.step()) {
    CandidateRecord c;
    c.run_id = jobs.integer(0);
    c.task_id = jobs.text(1);
    c.sample = static_cast<int>(jobs.integer(2));
    c.job_index = static_cast<uint64_t>(jobs.integer(3));
    c.status = jobs.text(4);
    c.round = static_cast<int>(jobs.integer(5));
    c.stage = jobs.text(6);
    c.error_class = jobs.text(7);
    c.message = jobs.text(8);
    c.model = jobs.text(9);
    c.language = jobs.text(10);
    c.tokens_in = jobs.optional_real(11);
    c.tokens_out = jobs.optional_real(12);
    c.cost = jobs.optional_real(13);
    c.speedup = jobs.optional_real(14);
    c.seconds = jobs.real(15);
    c.finished_at = jobs.text(16);
    c.device = jobs.text(17);
    c.eval_seconds = jobs.optional_real(18);
    c.gen_seconds = jobs.optional_real(19);
    by_job.emplace(std::make_tuple(c.run_id, c.task_id, c.sample), out.candidates.size());
    out.candidates.push_back(std::move(c));
  }

  // The verdicts of the run that finished each job: a killed run's verdicts of a job that a
  // later run redid never count, here as in the metrics.
  const std::string stage_facts = v2 ? "attempts.role, attempts.measured" : "'', 0";
  Statement attempts(db_, path_,
                     ("SELECT attempts.run_id, attempts.task_id, attempts.sample, attempts.round, attempts.step, "
                      "attempts.stage, attempts.kind, attempts.status, attempts.route, attempts.error_class, "
                      "attempts.message, attempts.metrics, attempts.model, attempts.tokens_in, attempts.tokens_out, "
                      "attempts.cost, attempts.seconds, attempts.cached, attempts.code_hash, attempts.diff_hash, "
                      "attempts.log_hash, " + stage_facts +
                      " FROM attempts JOIN jobs ON jobs.run_id = attempts.run_id AND jobs.task_id = attempts.task_id "
                      "AND jobs.sample = attempts.sample JOIN runs ON runs.id = jobs.run_id WHERE runs.series = ?1" +
                      task_filter + " ORDER BY attempts.id")
                         .c_str());
  attempts.bind(1, series);
  if (task_id) attempts.bind(2, *task_id);
  std::set<std::string> hashes;
  while (attempts.step()) {
    auto it = by_job.find(std::make_tuple(attempts.integer(0), attempts.text(1), static_cast<int>(attempts.integer(2))));
    if (it == by_job.end()) continue;
    StageRecord s;
    s.round = static_cast<int>(attempts.integer(3));
    s.step = static_cast<int>(attempts.integer(4));
    s.stage = attempts.text(5);
    s.kind = attempts.text(6);
    s.status = attempts.text(7);
    s.route = attempts.text(8);
    s.error_class = attempts.text(9);
    s.message = attempts.text(10);
    s.metrics = parse_metrics(attempts.text(11));
    s.model = attempts.text(12);
    s.tokens_in = attempts.optional_real(13);
    s.tokens_out = attempts.optional_real(14);
    s.cost = attempts.optional_real(15);
    s.seconds = attempts.real(16);
    s.cached = attempts.integer(17) != 0;
    s.code_hash = attempts.text(18);
    s.diff_hash = attempts.text(19);
    s.log_hash = attempts.text(20);
    s.role = attempts.text(21);
    s.measured = attempts.integer(22) != 0;
    for (const std::string* hash : {&s.code_hash, &s.diff_hash, &s.log_hash}) {
      if (!hash->empty()) hashes.insert(*hash);
    }
    out.candidates[it->second].stages.push_back(std::move(s));
  }

  Statement artifact(db_, path_, "SELECT content FROM artifacts WHERE hash = ?1");
  for (const std::string& hash : hashes) {
    artifact.bind(1, hash);
    while (artifact.step()) out.artifacts[hash] = artifact.text(0);
  }
  return out;
}

}  // namespace kforge
