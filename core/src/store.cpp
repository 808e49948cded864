#include "store.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "host.hpp"
#include <kforge/sha256.hpp>

namespace kforge {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kDiffKey = "fix.diff";  // the job attribute the fix stage leaves its diff in
constexpr int kBusyTimeoutMs = 10000;

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string now_iso() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", utc);
}

[[noreturn]] void fail(sqlite3* db, const std::string& path, const std::string& what) {
  const int code = sqlite3_extended_errcode(db);
  std::string hint;
  if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED) {
    hint = "; another kforge process may be writing to this output directory: wait for it or use another --out";
  } else if ((code & 0xff) == SQLITE_FULL) {
    hint = "; the disk is full: free space and run again with --resume";
  } else if ((code & 0xff) == SQLITE_READONLY || (code & 0xff) == SQLITE_CANTOPEN) {
    hint = "; check that the output directory exists and is writable";
  }
  throw StoreError(fmt::format("run store '{}': {}: {}{}", path, what, sqlite3_errmsg(db), hint));
}

void exec_sql(sqlite3* db, const std::string& path, const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw StoreError(fmt::format("run store '{}': {} (while running: {:.60}...)", path, message, sql));
  }
}

// A prepared statement, reused: bind, step, and reset after each use.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
      fail(db, path, fmt::format("cannot prepare '{:.60}'", sql));
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& text) {
    check(sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Statement& bind(int i, const std::string* text) { return text ? bind(i, *text) : bind_null(i); }
  Statement& bind(int i, int64_t value) {
    check(sqlite3_bind_int64(stmt_, i, value));
    return *this;
  }
  Statement& bind(int i, double value) {
    check(sqlite3_bind_double(stmt_, i, value));
    return *this;
  }
  Statement& bind(int i, std::optional<double> value) { return value ? bind(i, *value) : bind_null(i); }
  Statement& bind_blob(int i, const std::string& bytes) {
    check(sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Statement& bind_null(int i) {
    check(sqlite3_bind_null(stmt_, i));
    return *this;
  }

  // True while there is a row to read; resets itself at the end.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) {
      reset();
      return false;
    }
    const std::string sql = sqlite3_sql(stmt_);
    reset();
    fail(db_, path_, fmt::format("'{:.60}' failed", sql));
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::optional<double> optional_real(int col) const {
    return is_null(col) ? std::nullopt : std::optional<double>(real(col));
  }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, path_, "cannot bind a value");
  }
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

void create_schema_v1(sqlite3* db) {
  static const char* const kSchema = R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  series INTEGER NOT NULL,
  pipeline TEXT NOT NULL,
  strategy TEXT NOT NULL,
  pipeline_file TEXT NOT NULL,
  config TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  kforge_version TEXT NOT NULL,
  host TEXT NOT NULL,
  devices TEXT NOT NULL,
  expected_jobs INTEGER NOT NULL DEFAULT 0,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  status TEXT NOT NULL
);
CREATE TABLE tasks (
  id TEXT PRIMARY KEY,
  task_index INTEGER NOT NULL,
  name TEXT NOT NULL,
  level REAL,
  category TEXT NOT NULL,
  complexity TEXT NOT NULL,
  format TEXT NOT NULL,
  path TEXT NOT NULL,
  source_hash TEXT
);
CREATE TABLE artifacts (
  hash TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  size INTEGER NOT NULL,
  content BLOB NOT NULL
);
CREATE TABLE attempts (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  task_id TEXT NOT NULL,
  sample INTEGER NOT NULL,
  round INTEGER NOT NULL,
  step INTEGER NOT NULL,
  stage TEXT NOT NULL,
  kind TEXT NOT NULL,
  status TEXT NOT NULL,
  route TEXT NOT NULL,
  error_class TEXT NOT NULL,
  message TEXT NOT NULL,
  log_hash TEXT REFERENCES artifacts(hash),
  metrics TEXT NOT NULL,
  model TEXT,
  tokens_in REAL,
  tokens_out REAL,
  cost REAL,
  seconds REAL NOT NULL,
  cached INTEGER NOT NULL,
  code_hash TEXT REFERENCES artifacts(hash),
  diff_hash TEXT REFERENCES artifacts(hash),
  recorded_at TEXT NOT NULL
);
CREATE INDEX attempts_by_job ON attempts (run_id, task_id, sample);
CREATE TABLE jobs (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  task_id TEXT NOT NULL,
  sample INTEGER NOT NULL,
  job_index INTEGER NOT NULL,
  status TEXT NOT NULL,
  round INTEGER NOT NULL,
  stage TEXT NOT NULL,
  error_class TEXT NOT NULL,
  message TEXT NOT NULL,
  model TEXT,
  language TEXT,
  tokens_in REAL,
  tokens_out REAL,
  cost REAL,
  speedup REAL,
  code_hash TEXT REFERENCES artifacts(hash),
  attempts INTEGER NOT NULL,
  seconds REAL NOT NULL,
  finished_at TEXT NOT NULL,
  PRIMARY KEY (run_id, task_id, sample)
);
CREATE TABLE verdict_cache (
  key TEXT PRIMARY KEY,
  verdict TEXT NOT NULL,
  strings TEXT NOT NULL,
  numbers TEXT NOT NULL,
  created_at TEXT NOT NULL
);
)sql";
  char* error = nullptr;
  if (sqlite3_exec(db, kSchema, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw StoreError("creating the schema: " + message);
  }
}

int user_version(sqlite3* db, const std::string& path) {
  Statement q(db, path, "PRAGMA user_version");
  int version = 0;
  while (q.step()) version = static_cast<int>(q.integer(0));
  return version;
}

VerdictStatus parse_status(const std::string& text) {
  if (text == "pass") return VerdictStatus::Pass;
  if (text == "fail") return VerdictStatus::Fail;
  return VerdictStatus::Error;
}

json param_json(const ParamValue& value) {
  if (!value.json.empty()) {
    json parsed = json::parse(value.json, nullptr, false);
    if (!parsed.is_discarded()) return parsed;
  }
  if (value.type == KF_PARAM_STRING_LIST) return value.items;
  return value.text;
}

json config_json(const StageConfig& config) {
  json with = json::object();
  for (const auto& [name, value] : config.values) with[name] = param_json(value);
  return with;
}

std::optional<double> final_speedup(const Job& job) {
  for (auto v = job.verdicts.rbegin(); v != job.verdicts.rend() && v->round == job.round; ++v) {
    for (const auto& [name, value] : v->metrics) {
      if (name == "speedup") return value;
    }
  }
  return std::nullopt;
}

}  // namespace

// ---------------------------------------------------------------- schema and migrations

const std::vector<Migration>& schema_migrations() {
  static const std::vector<Migration> steps = {{1, create_schema_v1}};
  return steps;
}

void migrate(sqlite3* db, const std::vector<Migration>& steps, const std::string& path) {
  const int current = user_version(db, path);
  const int newest = steps.empty() ? 0 : steps.back().to;
  if (current > newest) {
    throw StoreError(fmt::format(
        "run store '{}' has schema version {}, newer than this kforge knows ({}): use a newer kforge, "
        "or another --out directory",
        path, current, newest));
  }
  for (const Migration& step : steps) {
    if (step.to <= current) continue;
    exec_sql(db, path, "BEGIN IMMEDIATE");
    try {
      step.apply(db);
      exec_sql(db, path, fmt::format("PRAGMA user_version = {}", step.to).c_str());
      exec_sql(db, path, "COMMIT");
    } catch (const std::exception& e) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw StoreError(fmt::format("run store '{}': migrating to schema version {} failed: {}", path, step.to, e.what()));
    }
  }
}

std::string pipeline_config_json(const PipelineSpec& pipeline) {
  json config;
  config["pipeline"] = pipeline.name;
  config["file"] = pipeline.file;
  config["vars"] = pipeline.vars;
  config["tasks"] = {{"uses", pipeline.source.uses}, {"with", config_json(pipeline.source.config)}};
  config["k"] = pipeline.k;
  config["max_in_flight"] = pipeline.max_in_flight;
  auto& stages = config["stages"] = json::array();
  for (const StageSpec& s : pipeline.stages) {
    json stage;
    stage["id"] = s.id;
    stage["uses"] = s.uses;
    stage["with"] = config_json(s.config);
    stage["concurrency"] = s.concurrency;
    stage["timeout"] = s.timeout_seconds;
    auto& on = stage["on"] = json::object();
    for (const RouteSpec& r : s.routes) {
      json route = {{"to", r.target}};
      if (r.max_rounds > 0) {
        route["max_rounds"] = r.max_rounds;
        route["then"] = r.exhausted_target;
      }
      on[r.on] = route;
    }
    stages.push_back(std::move(stage));
  }
  return dump(config);
}

namespace {

// The hash --resume compares: the config without what cannot change a result (how many
// jobs run at once), so that a resumed run may use other concurrency settings.
std::string config_hash(const std::string& config_text) {
  json config = json::parse(config_text);
  config.erase("max_in_flight");
  for (auto& stage : config["stages"]) stage.erase("concurrency");
  return sha256_hex(dump(config));
}

}  // namespace

const char* to_string(RunStatus status) {
  switch (status) {
    case RunStatus::Running:
      return "running";
    case RunStatus::Finished:
      return "finished";
    case RunStatus::Interrupted:
      return "interrupted";
    case RunStatus::Failed:
      return "failed";
  }
  return "failed";
}

RunRecord describe_run(const PipelineSpec& pipeline, const std::string& kforge_version) {
  RunRecord run;
  run.pipeline = pipeline.name;
  auto strategy = pipeline.vars.find("strategy");
  run.strategy = strategy != pipeline.vars.end() && !strategy->second.empty() ? strategy->second : pipeline.name;
  run.pipeline_file = pipeline.file;
  run.config = pipeline_config_json(pipeline);
  run.config_hash = config_hash(run.config);
  run.kforge_version = kforge_version;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) run.host = host;
  // Devices as far as the pipeline and the environment say; kforge itself does not probe.
  std::vector<std::string> devices;
  if (auto device = pipeline.vars.find("device"); device != pipeline.vars.end()) {
    devices.push_back("device=" + device->second);
  }
  for (const char* name : {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES"}) {
    if (const char* value = std::getenv(name)) devices.push_back(fmt::format("{}={}", name, value));
  }
  run.devices = fmt::format("{}", fmt::join(devices, "; "));
  return run;
}

// ---------------------------------------------------------------- the store

struct Store::Statements {
  Statements(sqlite3* db, const std::string& path)
      : begin(db, path, "BEGIN IMMEDIATE"),
        commit(db, path, "COMMIT"),
        rollback(db, path, "ROLLBACK"),
        artifact(db, path, "INSERT OR IGNORE INTO artifacts (hash, kind, size, content) VALUES (?1, ?2, ?3, ?4)"),
        task(db, path,
             "INSERT INTO tasks (id, task_index, name, level, category, complexity, format, path, source_hash) "
             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (id) DO UPDATE SET "
             "task_index = excluded.task_index, name = excluded.name, level = excluded.level, "
             "category = excluded.category, complexity = excluded.complexity, format = excluded.format, "
             "path = excluded.path, source_hash = excluded.source_hash"),
        attempt(db, path,
                "INSERT INTO attempts (run_id, task_id, sample, round, step, stage, kind, status, route, "
                "error_class, message, log_hash, metrics, model, tokens_in, tokens_out, cost, seconds, cached, "
                "code_hash, diff_hash, recorded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                "?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)"),
        job(db, path,
            "INSERT INTO jobs (run_id, task_id, sample, job_index, status, round, stage, error_class, message, "
            "model, language, tokens_in, tokens_out, cost, speedup, code_hash, attempts, seconds, finished_at) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"),
        find_cached(db, path, "SELECT verdict, strings, numbers FROM verdict_cache WHERE key = ?1"),
        put_cached(db, path,
                   "INSERT OR REPLACE INTO verdict_cache (key, verdict, strings, numbers, created_at) "
                   "VALUES (?1, ?2, ?3, ?4, ?5)") {}

  Statement begin, commit, rollback, artifact, task, attempt, job, find_cached, put_cached;
};

namespace {

// BEGIN IMMEDIATE ... COMMIT, rolled back when left by an exception.
class Transaction {
 public:
  Transaction(Statement& begin, Statement& commit, Statement& rollback) : commit_(commit), rollback_(rollback) {
    begin.run();
  }
  ~Transaction() {
    if (!done_) {
      try {
        rollback_.run();
      } catch (const StoreError&) {
        // The transaction is gone either way; the error that brought us here is reported.
      }
    }
  }
  void commit() {
    commit_.run();
    done_ = true;
  }

 private:
  Statement& commit_;
  Statement& rollback_;
  bool done_ = false;
};

}  // namespace

Store::Store(const std::string& path, bool create) : path_(path) {
  if (!create && !std::filesystem::exists(path)) {
    throw StoreError(fmt::format("no run store at '{}': is this a kforge output directory (run `kforge run ... --out DIR`)?", path));
  }
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(fmt::format("cannot open the run store '{}': {}; check that the output directory exists and is writable",
                                 path, message));
  }
  try {
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    exec_sql(db_, path_, "PRAGMA journal_mode = WAL");
    exec_sql(db_, path_, "PRAGMA synchronous = NORMAL");
    migrate(db_, schema_migrations(), path_);
    statements_ = std::make_unique<Statements>(db_, path_);
  } catch (...) {
    statements_.reset();
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Store::~Store() {
  statements_.reset();
  if (db_ != nullptr) sqlite3_close(db_);
}

std::optional<RunRecord> Store::latest_run() {
  std::lock_guard lock(mutex_);
  Statement q(db_, path_, "SELECT series FROM runs ORDER BY id DESC LIMIT 1");
  std::optional<int64_t> series;
  while (q.step()) series = q.integer(0);
  if (!series) return std::nullopt;
  return read_series(*series).back();
}

std::vector<RunRecord> Store::series_runs(int64_t series) {
  std::lock_guard lock(mutex_);
  return read_series(series);
}

std::vector<RunRecord> Store::read_series(int64_t series) {
  Statement q(db_, path_,
              "SELECT id, series, pipeline, strategy, pipeline_file, config, config_hash, kforge_version, host, "
              "devices, expected_jobs, started_at, ended_at, status FROM runs WHERE series = ?1 ORDER BY id");
  q.bind(1, series);
  std::vector<RunRecord> runs;
  while (q.step()) {
    RunRecord r;
    r.id = q.integer(0);
    r.series = q.integer(1);
    r.pipeline = q.text(2);
    r.strategy = q.text(3);
    r.pipeline_file = q.text(4);
    r.config = q.text(5);
    r.config_hash = q.text(6);
    r.kforge_version = q.text(7);
    r.host = q.text(8);
    r.devices = q.text(9);
    r.expected_jobs = static_cast<uint64_t>(q.integer(10));
    r.started_at = q.text(11);
    r.ended_at = q.text(12);
    r.status = q.text(13);
    runs.push_back(std::move(r));
  }
  return runs;
}

int64_t Store::begin_run(RunRecord run) {
  std::lock_guard lock(mutex_);
  Transaction tx(statements_->begin, statements_->commit, statements_->rollback);
  Statement insert(db_, path_,
                   "INSERT INTO runs (series, pipeline, strategy, pipeline_file, config, config_hash, kforge_version, "
                   "host, devices, expected_jobs, started_at, status) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  insert.bind(1, run.series)
      .bind(2, run.pipeline)
      .bind(3, run.strategy)
      .bind(4, run.pipeline_file)
      .bind(5, run.config)
      .bind(6, run.config_hash)
      .bind(7, run.kforge_version)
      .bind(8, run.host)
      .bind(9, run.devices)
      .bind(10, static_cast<int64_t>(run.expected_jobs))
      .bind(11, run.started_at.empty() ? now_iso() : run.started_at)
      .bind(12, std::string(to_string(RunStatus::Running)));
  insert.run();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  if (run.series == 0) {
    Statement own(db_, path_, "UPDATE runs SET series = id WHERE id = ?1");
    own.bind(1, id).run();
  }
  tx.commit();
  return id;
}

void Store::set_expected_jobs(int64_t run, uint64_t jobs) {
  std::lock_guard lock(mutex_);
  Statement update(db_, path_, "UPDATE runs SET expected_jobs = ?2 WHERE id = ?1");
  update.bind(1, run).bind(2, static_cast<int64_t>(jobs)).run();
}

void Store::end_run(int64_t run, RunStatus status) {
  std::lock_guard lock(mutex_);
  Statement update(db_, path_, "UPDATE runs SET status = ?2, ended_at = ?3 WHERE id = ?1");
  update.bind(1, run).bind(2, std::string(to_string(status))).bind(3, now_iso()).run();
}

void Store::put_artifact(const std::string& hash, const char* kind, const std::string& content) {
  statements_->artifact.bind(1, hash)
      .bind(2, std::string(kind))
      .bind(3, static_cast<int64_t>(content.size()))
      .bind_blob(4, content)
      .run();
}

void Store::upsert_task(const Task& task) {
  auto text = [&](const char* key) {
    auto it = task.strings.find(key);
    return it == task.strings.end() ? std::string() : it->second;
  };
  auto level = task.numbers.find(KF_KEY_TASK_LEVEL);
  auto source = task.strings.find(KF_KEY_TASK_SOURCE);
  Statement& s = statements_->task;
  s.bind(1, task.id())
      .bind(2, static_cast<int64_t>(task.index))
      .bind(3, text(KF_KEY_TASK_NAME))
      .bind(4, level == task.numbers.end() ? std::nullopt : std::optional<double>(level->second))
      .bind(5, text(KF_KEY_TASK_CATEGORY))
      .bind(6, text(KF_KEY_TASK_COMPLEXITY))
      .bind(7, text(KF_KEY_TASK_FORMAT))
      .bind(8, text(KF_KEY_TASK_PATH));
  if (source != task.strings.end()) {
    s.bind(9, sha256_hex(source->second));
  } else {
    s.bind_null(9);
  }
  s.run();
}

void Store::record_attempt(int64_t run, const Job& job, const Verdict& v) {
  // Hash outside the lock: it is the costly part and needs nothing shared.
  const std::string* code = job.find_string(KF_KEY_CANDIDATE_CODE);
  const std::string* diff = job.find_string(kDiffKey);
  if (code != nullptr && code->empty()) code = nullptr;
  if (diff != nullptr && diff->empty()) diff = nullptr;
  const std::string code_hash = code ? sha256_hex(*code) : "";
  const std::string diff_hash = diff ? sha256_hex(*diff) : "";
  const std::string log_hash = v.log_tail.empty() ? "" : sha256_hex(v.log_tail);
  json metrics = json::object();
  for (const auto& [name, value] : v.metrics) metrics[name] = value;
  const std::string metrics_text = dump(metrics);

  std::lock_guard lock(mutex_);
  Transaction tx(statements_->begin, statements_->commit, statements_->rollback);
  if (code) put_artifact(code_hash, "code", *code);
  if (diff) put_artifact(diff_hash, "diff", *diff);
  if (!log_hash.empty()) put_artifact(log_hash, "log", v.log_tail);
  Statement& s = statements_->attempt;
  s.bind(1, run)
      .bind(2, job.task->id())
      .bind(3, static_cast<int64_t>(job.sample))
      .bind(4, static_cast<int64_t>(v.round))
      .bind(5, static_cast<int64_t>(job.verdicts.size()))
      .bind(6, v.stage)
      .bind(7, v.kind)
      .bind(8, std::string(to_string(v.status)))
      .bind(9, v.route)
      .bind(10, v.error_class)
      .bind(11, v.message)
      .bind(12, log_hash.empty() ? nullptr : &log_hash)
      .bind(13, metrics_text)
      .bind(14, job.find_string(KF_KEY_CANDIDATE_MODEL))
      .bind(15, job.find_number(KF_KEY_CANDIDATE_TOKENS_IN))
      .bind(16, job.find_number(KF_KEY_CANDIDATE_TOKENS_OUT))
      .bind(17, job.find_number(KF_KEY_CANDIDATE_COST))
      .bind(18, v.seconds)
      .bind(19, static_cast<int64_t>(v.cached ? 1 : 0))
      .bind(20, code ? &code_hash : nullptr)
      .bind(21, diff ? &diff_hash : nullptr)
      .bind(22, now_iso());
  s.run();
  tx.commit();
}

void Store::record_job(int64_t run, const Job& job) {
  const std::string* code = job.find_string(KF_KEY_CANDIDATE_CODE);
  if (code != nullptr && code->empty()) code = nullptr;
  const std::string code_hash = code ? sha256_hex(*code) : "";
  const Verdict* last = job.last();
  double seconds = 0;
  for (const Verdict& v : job.verdicts) seconds += v.seconds;

  std::lock_guard lock(mutex_);
  Transaction tx(statements_->begin, statements_->commit, statements_->rollback);
  const std::string task_id = job.task->id();
  if (task_id != last_task_) {
    upsert_task(*job.task);
    last_task_ = task_id;
  }
  if (code) put_artifact(code_hash, "code", *code);
  Statement& s = statements_->job;
  s.bind(1, run)
      .bind(2, task_id)
      .bind(3, static_cast<int64_t>(job.sample))
      .bind(4, static_cast<int64_t>(job.index))
      .bind(5, std::string(to_string(job.final_status())))
      .bind(6, static_cast<int64_t>(job.round))
      .bind(7, last ? last->stage : std::string())
      .bind(8, last ? last->error_class : std::string())
      .bind(9, last ? last->message : std::string())
      .bind(10, job.find_string(KF_KEY_CANDIDATE_MODEL))
      .bind(11, job.find_string(KF_KEY_CANDIDATE_LANGUAGE))
      .bind(12, job.find_number(KF_KEY_CANDIDATE_TOKENS_IN))
      .bind(13, job.find_number(KF_KEY_CANDIDATE_TOKENS_OUT))
      .bind(14, job.find_number(KF_KEY_CANDIDATE_COST))
      .bind(15, final_speedup(job))
      .bind(16, code ? &code_hash : nullptr)
      .bind(17, static_cast<int64_t>(job.verdicts.size()))
      .bind(18, seconds)
      .bind(19, now_iso());
  s.run();
  tx.commit();
}

std::set<std::pair<std::string, int>> Store::finished_jobs(int64_t series) {
  std::lock_guard lock(mutex_);
  Statement q(db_, path_,
              "SELECT jobs.task_id, jobs.sample FROM jobs JOIN runs ON runs.id = jobs.run_id WHERE runs.series = ?1");
  q.bind(1, series);
  std::set<std::pair<std::string, int>> done;
  while (q.step()) done.emplace(q.text(0), static_cast<int>(q.integer(1)));
  return done;
}

std::optional<CachedVerdict> Store::find_cached(const std::string& key) {
  std::string verdict_text, strings_text, numbers_text;
  {
    std::lock_guard lock(mutex_);
    Statement& q = statements_->find_cached;
    q.bind(1, key);
    bool found = false;
    while (q.step()) {
      verdict_text = q.text(0);
      strings_text = q.text(1);
      numbers_text = q.text(2);
      found = true;
    }
    if (!found) return std::nullopt;
  }
  const json verdict = json::parse(verdict_text, nullptr, false);
  const json strings = json::parse(strings_text, nullptr, false);
  const json numbers = json::parse(numbers_text, nullptr, false);
  if (verdict.is_discarded() || strings.is_discarded() || numbers.is_discarded()) {
    throw StoreError(fmt::format("run store '{}': verdict cache entry {} is not valid JSON", path_, key));
  }
  CachedVerdict entry;
  Verdict& v = entry.verdict;
  v.status = parse_status(verdict.value("status", "error"));
  v.route = verdict.value("route", "");
  v.error_class = verdict.value("error_class", "");
  v.message = verdict.value("message", "");
  v.log_tail = verdict.value("log_tail", "");
  for (const auto& metric : verdict.value("metrics", json::array())) {
    v.metrics.emplace_back(metric.at(0).get<std::string>(), metric.at(1).get<double>());
  }
  for (const auto& s : strings) entry.strings.emplace_back(s.at(0).get<std::string>(), s.at(1).get<std::string>());
  for (const auto& n : numbers) entry.numbers.emplace_back(n.at(0).get<std::string>(), n.at(1).get<double>());
  return entry;
}

void Store::put_cached(const std::string& key, const CachedVerdict& entry) {
  const Verdict& v = entry.verdict;
  json verdict = {{"status", to_string(v.status)},
                  {"route", v.route},
                  {"error_class", v.error_class},
                  {"message", v.message},
                  {"log_tail", v.log_tail}};
  auto& metrics = verdict["metrics"] = json::array();
  for (const auto& [name, value] : v.metrics) metrics.push_back({name, value});
  json strings = json::array();
  for (const auto& [name, text] : entry.strings) strings.push_back({name, text});
  json numbers = json::array();
  for (const auto& [name, value] : entry.numbers) numbers.push_back({name, value});

  std::lock_guard lock(mutex_);
  statements_->put_cached.bind(1, key).bind(2, dump(verdict)).bind(3, dump(strings)).bind(4, dump(numbers)).bind(5, now_iso()).run();
}

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

// ---------------------------------------------------------------- observer and cache

void RunRecorder::run_started(uint64_t expected_jobs) {
  try {
    store_.set_expected_jobs(run_, expected_jobs);
  } catch (const std::exception& e) {
    fail(e);
  }
}

void RunRecorder::verdict(const Job& job, const Verdict& verdict) {
  try {
    store_.record_attempt(run_, job, verdict);
  } catch (const std::exception& e) {
    fail(e);
  }
}

void RunRecorder::job_finished(const Job& job) {
  try {
    store_.record_job(run_, job);
  } catch (const std::exception& e) {
    fail(e);
  }
}

std::string RunRecorder::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void RunRecorder::fail(const std::exception& e) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return;
  failure_ = e.what();
  // Going on would compute results nobody can see: stop intake, let in-flight work end.
  spdlog::error("{}; stopping the run", failure_);
  request_cancel();
}

std::optional<CachedVerdict> StoredVerdictCache::find(const std::string& key) {
  try {
    return store_.find_cached(key);
  } catch (const std::exception& e) {
    spdlog::warn("verdict cache lookup failed, evaluating instead: {}", e.what());
    return std::nullopt;
  }
}

void StoredVerdictCache::put(const std::string& key, const CachedVerdict& entry) {
  try {
    store_.put_cached(key, entry);
  } catch (const std::exception& e) {
    spdlog::warn("verdict cache write failed (the result is recorded, only not cached): {}", e.what());
  }
}

}  // namespace kforge
