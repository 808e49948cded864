// What reports, exports and `kforge show` read: the finished jobs of a series, a task at a
// time, with their verdicts and the artifacts those name.
#include <nlohmann/json.hpp>

#include "store/statements.hpp"
#include "store/store.hpp"

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

// The rounds whose code compiled, as jobs.compiled_rounds holds them (a JSON list).
void read_compiled_rounds(const std::string& text, JobOutcome& job) {
  job.compile_evidence = true;
  const auto rounds = nlohmann::json::parse(text, nullptr, false);
  for (const auto& r : rounds.is_array() ? rounds : nlohmann::json::array()) {
    if (!r.is_number_unsigned()) continue;
    const size_t round = r.get<size_t>();
    if (job.compiled_in_round.size() <= round) job.compiled_in_round.resize(round + 1, 0);
    job.compiled_in_round[round] = 1;
  }
}

// Environments are few and each is shared by many jobs: their contents are read once.
class EnvironmentCache {
 public:
  EnvironmentCache(Store& store) : store_(store) {}
  const std::string& content(const std::string& hash) {
    auto it = contents_.find(hash);
    if (it != contents_.end()) return it->second;
    if (contents_.size() >= kMax) contents_.clear();  // a run with this many is no common run: bounded anyway
    return contents_.emplace(hash, store_.artifact(hash).value_or("")).first->second;
  }

 private:
  static constexpr size_t kMax = 64;
  Store& store_;
  std::map<std::string, std::string> contents_;
};

}  // namespace

void Store::visit_tasks(int64_t series, bool verdicts, const TaskVisitor& visit, const std::string* task_id) {
  std::lock_guard lock(mutex_);
  // A store of schema 1 has no folded job facts (its reports say nothing about compile
  // rates, evaluation and generation time) and no roles; schema 3 added the environment.
  const bool v2 = schema_version_ >= 2;
  const std::string facts = v2 ? "jobs.device, jobs.compiled_rounds, jobs.eval_seconds, jobs.gen_seconds, jobs.cached_attempts"
                               : "NULL, NULL, NULL, NULL, NULL";
  const std::string environment = schema_version_ >= 3 ? "jobs.environment_hash" : "NULL";
  const std::string filter = task_id ? " AND jobs.task_id = ?2" : "";
  // Job order is (job index, run); a task comes where its first job does, with all its jobs.
  // They are together in job order anyway (a job's index is task index x k + sample) unless
  // the source numbered its tasks differently across the runs of a resumed series.
  // Attempts of jobs a killed run left unfinished have no job row and never count.
  Statement jobs(db_, path_,
                 ("WITH positioned AS (SELECT jobs.rowid AS job, jobs.task_id AS task, "
                  "ROW_NUMBER() OVER (ORDER BY jobs.job_index, jobs.run_id) AS position "
                  "FROM jobs JOIN runs ON runs.id = jobs.run_id WHERE runs.series = ?1" + filter + "), "
                  "ordered AS (SELECT job, position, MIN(position) OVER (PARTITION BY task) AS first FROM positioned) "
                  "SELECT jobs.run_id, jobs.task_id, jobs.sample, jobs.job_index, jobs.status, jobs.round, jobs.stage, "
                  "jobs.error_class, jobs.message, jobs.model, jobs.language, jobs.tokens_in, jobs.tokens_out, jobs.cost, "
                  "jobs.speedup, jobs.seconds, jobs.finished_at, jobs.attempts, " + facts + ", " + environment +
                  ", tasks.id IS NOT NULL, tasks.name, tasks.level, tasks.category, tasks.complexity, tasks.format "
                  "FROM ordered JOIN jobs ON jobs.rowid = ordered.job LEFT JOIN tasks ON tasks.id = jobs.task_id "
                  "ORDER BY ordered.first, ordered.position")
                     .c_str());
  jobs.bind(1, series);
  if (task_id) jobs.bind(2, *task_id);
  // The verdicts of the run that finished the job: a killed run's verdicts of a job that a
  // later run redid never count, here as in the metrics.
  const std::string stage_facts = v2 ? "role, measured" : "'', 0";
  Statement attempts(db_, path_,
                     ("SELECT round, step, stage, kind, status, route, error_class, message, metrics, model, tokens_in, "
                      "tokens_out, cost, seconds, cached, code_hash, diff_hash, log_hash, " + stage_facts +
                      " FROM attempts WHERE run_id = ?1 AND task_id = ?2 AND sample = ?3 ORDER BY id")
                         .c_str());
  EnvironmentCache environments(*this);

  TaskJobs task;
  auto flush = [&] {
    if (task.jobs.empty()) return;
    visit(task);
    task = TaskJobs();
  };
  while (jobs.step()) {
    std::string id = jobs.text(1);
    if (task.jobs.empty() || id != task.info.id) {
      flush();
      task.info.id = id;
      task.known = jobs.integer(24) != 0;
      task.info.name = jobs.text(25);
      task.info.level = jobs.real(26);
      task.info.category = jobs.text(27);
      task.info.complexity = jobs.text(28);
      task.info.format = jobs.text(29);
    }
    JobOutcome j;
    j.task_id = std::move(id);
    j.sample = static_cast<int>(jobs.integer(2));
    j.job_index = static_cast<uint64_t>(jobs.integer(3));
    j.status = parse_status(jobs.text(4));
    j.round = static_cast<int>(jobs.integer(5));
    j.stage = jobs.text(6);
    j.error_class = jobs.text(7);
    j.message = jobs.text(8);
    j.model = jobs.text(9);
    j.language = jobs.text(10);
    j.tokens_in = jobs.real(11);
    j.tokens_out = jobs.real(12);
    j.cost = jobs.real(13);
    j.speedup = jobs.optional_real(14);
    j.seconds = jobs.real(15);
    j.attempts = static_cast<int>(jobs.integer(17));
    j.device = jobs.text(18);
    if (!jobs.is_null(19)) read_compiled_rounds(jobs.text(19), j);
    j.eval_seconds = jobs.real(20);
    j.gen_seconds = jobs.real(21);
    j.cached_attempts = static_cast<int>(jobs.integer(22));
    if (!jobs.is_null(23)) j.environment = environments.content(jobs.text(23));

    if (verdicts) {
      CandidateRecord c;
      c.run_id = jobs.integer(0);
      c.task_id = j.task_id;
      c.sample = j.sample;
      c.job_index = j.job_index;
      c.status = jobs.text(4);
      c.round = j.round;
      c.stage = j.stage;
      c.error_class = j.error_class;
      c.message = j.message;
      c.model = j.model;
      c.language = j.language;
      c.device = j.device;
      c.tokens_in = jobs.optional_real(11);
      c.tokens_out = jobs.optional_real(12);
      c.cost = jobs.optional_real(13);
      c.speedup = j.speedup;
      c.seconds = j.seconds;
      c.finished_at = jobs.text(16);
      c.eval_seconds = jobs.optional_real(20);
      c.gen_seconds = jobs.optional_real(21);
      attempts.bind(1, c.run_id).bind(2, c.task_id).bind(3, static_cast<int64_t>(c.sample));
      while (attempts.step()) {
        StageRecord s;
        s.round = static_cast<int>(attempts.integer(0));
        s.step = static_cast<int>(attempts.integer(1));
        s.stage = attempts.text(2);
        s.kind = attempts.text(3);
        s.status = attempts.text(4);
        s.route = attempts.text(5);
        s.error_class = attempts.text(6);
        s.message = attempts.text(7);
        s.metrics = parse_metrics(attempts.text(8));
        s.model = attempts.text(9);
        s.tokens_in = attempts.optional_real(10);
        s.tokens_out = attempts.optional_real(11);
        s.cost = attempts.optional_real(12);
        s.seconds = attempts.real(13);
        s.cached = attempts.integer(14) != 0;
        s.code_hash = attempts.text(15);
        s.diff_hash = attempts.text(16);
        s.log_hash = attempts.text(17);
        s.role = attempts.text(18);
        s.measured = attempts.integer(19) != 0;
        c.stages.push_back(std::move(s));
      }
      task.candidates.push_back(std::move(c));
    }
    task.jobs.push_back(std::move(j));
  }
  flush();
}

std::optional<std::string> Store::artifact(const std::string& hash) {
  std::lock_guard lock(mutex_);
  Statement q(db_, path_, "SELECT content FROM artifacts WHERE hash = ?1");
  q.bind(1, hash);
  std::optional<std::string> content;
  while (q.step()) content = q.text(0);
  return content;
}

bool Store::has_task_format(const std::string& format) {
  std::lock_guard lock(mutex_);
  Statement q(db_, path_, "SELECT EXISTS (SELECT 1 FROM tasks WHERE format = ?1)");
  q.bind(1, format);
  bool found = false;
  while (q.step()) found = q.integer(0) != 0;
  return found;
}

void Store::visit_task_ids(const std::function<void(const std::string& id)>& visit) {
  std::lock_guard lock(mutex_);
  Statement q(db_, path_, "SELECT id FROM tasks");
  while (q.step()) visit(q.text(0));
}

}  // namespace kforge
