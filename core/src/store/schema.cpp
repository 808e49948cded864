#include "store/schema.hpp"

#include <fmt/format.h>

#include "store/sqlite.hpp"

namespace kforge {

using sql::exec_sql;
using sql::user_version;

namespace {

void run_script(sqlite3* db, const char* sql, const char* what) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw StoreError(fmt::format("{}: {}", what, message));
  }
}

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
  run_script(db, kSchema, "creating the schema");
}

// Version 2: roles instead of kind names, the facts of a job folded once when it finished,
// the device that ran it, and the run's secret seed.
void add_roles_and_job_facts_v2(sqlite3* db) {
  static const char* const kChanges = R"sql(
ALTER TABLE runs ADD COLUMN secret_seed TEXT;
ALTER TABLE attempts ADD COLUMN role TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN measured INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN device TEXT;
ALTER TABLE jobs ADD COLUMN compiled_rounds TEXT;
ALTER TABLE jobs ADD COLUMN eval_seconds REAL;
ALTER TABLE jobs ADD COLUMN gen_seconds REAL;
ALTER TABLE jobs ADD COLUMN cached_attempts INTEGER;
DELETE FROM verdict_cache;
)sql";
  // The verdict cache is emptied: entries cached before verdicts were marked measured may
  // hold timings that would otherwise be replayed.
  run_script(db, kChanges, "adding roles and job facts");
}

// Version 3: the environment that judged each job (run.environment), kept once per
// distinct content in artifacts (kind `environment`).
void add_job_environment_v3(sqlite3* db) {
  run_script(db, "ALTER TABLE jobs ADD COLUMN environment_hash TEXT REFERENCES artifacts(hash);",
             "adding job environments");
}

}  // namespace

const std::vector<Migration>& schema_migrations() {
  static const std::vector<Migration> steps = {
      {1, create_schema_v1}, {2, add_roles_and_job_facts_v2}, {3, add_job_environment_v3}};
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

}  // namespace kforge
