// The store's prepared statements, shared by the files that implement Store by concern.
#pragma once

#include "store/sqlite.hpp"
#include "store/store.hpp"

namespace kforge {

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
                "code_hash, diff_hash, recorded_at, role, measured) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)"),
        job(db, path,
            "INSERT INTO jobs (run_id, task_id, sample, job_index, status, round, stage, error_class, message, "
            "model, language, tokens_in, tokens_out, cost, speedup, code_hash, attempts, seconds, finished_at, "
            "device, compiled_rounds, eval_seconds, gen_seconds, cached_attempts, environment_hash) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
            "?22, ?23, ?24, ?25)"),
        find_cached(db, path, "SELECT verdict, strings, numbers FROM verdict_cache WHERE key = ?1"),
        put_cached(db, path,
                   "INSERT OR REPLACE INTO verdict_cache (key, verdict, strings, numbers, created_at) "
                   "VALUES (?1, ?2, ?3, ?4, ?5)"),
        // By the jobs' primary key, once per run of the series: asked once per job --resume skips.
        finished(db, path,
                 "SELECT 1 FROM jobs WHERE run_id IN (SELECT id FROM runs WHERE series = ?1) AND task_id = ?2 "
                 "AND sample = ?3 LIMIT 1") {}

  sql::Statement begin, commit, rollback, artifact, task, attempt, job, find_cached, put_cached, finished;
};

}  // namespace kforge
