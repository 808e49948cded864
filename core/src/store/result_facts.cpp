// What the store records of each finished job's results.jsonl line (results.cpp writes the
// line): the run-end agreement check holds every line to it.
#include <nlohmann/json.hpp>
#include <tuple>

#include "store/statements.hpp"
#include "store/store.hpp"

namespace kforge {

using sql::Statement;

namespace {

using Json = nlohmann::json;  // sorted keys: one text for equal contents, whatever the order

// A REAL column as the line has it: SQLite keeps a NaN as NULL, and the line writes a
// non-finite number as null too.
Json real_or_null(const Statement& q, int col) { return q.is_null(col) ? Json() : Json(q.real(col)); }

}  // namespace

void Store::visit_result_facts(int64_t series, const ResultFactsVisitor& visit,
                               const std::pair<std::string, int>* only) {
  std::lock_guard lock(mutex_);
  const std::string filter = only ? " AND jobs.task_id = ?2 AND jobs.sample = ?3" : "";
  // Jobs and their verdicts come in the same order and are merged, so the whole series is
  // read in one pass of each table whatever its size.
  Statement jobs(db_, path_,
                 ("SELECT jobs.run_id, jobs.task_id, jobs.sample, jobs.job_index, tasks.task_index, jobs.round, "
                  "jobs.status, jobs.stage, jobs.error_class, jobs.message, jobs.model, jobs.language, jobs.device, "
                  "jobs.tokens_in, jobs.tokens_out, jobs.cost, "
                  "(SELECT content FROM artifacts WHERE artifacts.hash = jobs.environment_hash) "
                  "FROM jobs JOIN runs ON runs.id = jobs.run_id LEFT JOIN tasks ON tasks.id = jobs.task_id "
                  "WHERE runs.series = ?1" + filter + " ORDER BY jobs.task_id, jobs.sample, jobs.run_id")
                     .c_str());
  // The verdicts of the run that finished the job: a killed run's verdicts of a job a later
  // run redid are not on its line.
  Statement attempts(db_, path_,
                     ("SELECT attempts.run_id, attempts.task_id, attempts.sample, attempts.stage, attempts.kind, "
                      "attempts.status, attempts.route, attempts.error_class, attempts.message, attempts.round, "
                      "attempts.seconds, attempts.cached, attempts.metrics FROM attempts JOIN jobs ON "
                      "jobs.run_id = attempts.run_id AND jobs.task_id = attempts.task_id AND "
                      "jobs.sample = attempts.sample JOIN runs ON runs.id = jobs.run_id WHERE runs.series = ?1" +
                      filter +
                      " ORDER BY attempts.task_id, attempts.sample, attempts.run_id, attempts.step, attempts.id")
                         .c_str());
  for (Statement* q : {&jobs, &attempts}) {
    q->bind(1, series);
    if (only) q->bind(2, only->first).bind(3, static_cast<int64_t>(only->second));
  }
  bool more_attempts = attempts.step();
  while (jobs.step()) {
    const int64_t run = jobs.integer(0);
    const std::pair<std::string, int> job{jobs.text(1), static_cast<int>(jobs.integer(2))};
    // The keys and the omissions are result_line's.
    Json line;
    line["job"] = jobs.integer(3);
    line["task"] = job.first;
    if (!jobs.is_null(4)) line["task_index"] = jobs.integer(4);
    line["sample"] = job.second;
    line["round"] = jobs.integer(5);
    line["status"] = jobs.text(6);
    line["stage"] = jobs.text(7);
    line["error_class"] = jobs.text(8);
    line["message"] = jobs.text(9);
    for (const auto& [key, col] : {std::pair{"model", 10}, {"language", 11}, {"device", 12}}) {
      if (!jobs.is_null(col)) line[key] = jobs.text(col);
    }
    for (const auto& [key, col] : {std::pair{"tokens_in", 13}, {"tokens_out", 14}, {"cost", 15}}) {
      if (!jobs.is_null(col)) line[key] = real_or_null(jobs, col);
    }
    if (!jobs.is_null(16)) {
      auto environment = Json::parse(jobs.text(16), nullptr, false);
      if (environment.is_object()) line["environment"] = std::move(environment);
    }
    Json& stages = line["stages"] = Json::array();
    const auto key = std::make_tuple(job.first, job.second, run);
    while (more_attempts &&
           std::make_tuple(attempts.text(1), static_cast<int>(attempts.integer(2)), attempts.integer(0)) <= key) {
      if (std::make_tuple(attempts.text(1), static_cast<int>(attempts.integer(2)), attempts.integer(0)) == key) {
        Json s;
        s["stage"] = attempts.text(3);
        s["kind"] = attempts.text(4);
        s["status"] = attempts.text(5);
        if (const std::string route = attempts.text(6); !route.empty()) s["route"] = route;
        if (const std::string error = attempts.text(7); !error.empty()) s["error_class"] = error;
        if (const std::string message = attempts.text(8); !message.empty()) s["message"] = message;
        s["round"] = attempts.integer(9);
        s["seconds"] = real_or_null(attempts, 10);
        if (attempts.integer(11) != 0) s["cached"] = true;
        auto metrics = Json::parse(attempts.text(12), nullptr, false);
        if (metrics.is_object() && !metrics.empty()) s["metrics"] = std::move(metrics);
        stages.push_back(std::move(s));
      }
      more_attempts = attempts.step();
    }
    visit(job, run, line.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

}  // namespace kforge
