// The run store: schema and migrations, what a run records, the verdict cache, resume;
// and end to end, a kforge process killed with SIGKILL and resumed.
#include "run/recorder.hpp"
#include "store/schema.hpp"
#include "store/store.hpp"
#include "store/verdict_cache.hpp"
#include "report/report.hpp"
#include "support/hand_built_pipeline.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "kforge_process.hpp"
#include "support/store_view.hpp"
#include "engine/registry.hpp"

namespace {

namespace fs = std::filesystem;
using kforge_test::Db;
using kforge_test::TempDir;

// 6 tasks x k=2: judge fails task-0001 and errors task-0004; the rest go through a flaky
// stage that passes on its second visit (one retry round).
kforge::testing::PipelineSpec pipeline() {
  using namespace kforge::testing;
  StageSpec judge = stage("judge", "demo.judge", "flaky");
  judge.config.values["fail"] = string_list({"task-0001"});
  judge.config.values["error"] = string_list({"task-0004"});
  judge.config.values["throw"] = string_list({});
  judge.config.values["route"] = string_list({});
  judge.config.values["fail_class"] = scalar(KF_PARAM_STRING, "demo_fail");
  judge.config.values["error_class"] = scalar(KF_PARAM_STRING, "demo_error");
  judge.routes.push_back(route("special", kEndTarget));
  StageSpec flaky = stage("flaky", "demo.flaky");
  flaky.config.values["failures"] = scalar(KF_PARAM_INT, "1");
  set_route(flaky, "fail", "flaky", 3);
  PipelineSpec p = range_pipeline("store-test", 6, {judge, flaky}, 2);
  p.file = "/pipelines/store-test.yaml";
  return p;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { registry.load(std::string(KFORGE_TEST_PLUGIN_DIR) + "/libkforge_demo.so"); }

  kforge::Plan plan(const kforge::testing::PipelineSpec& p) { return kforge::testing::compile(registry, p); }

  // Runs the pipeline into `store` as a new run; returns the run id.
  int64_t record(kforge::Store& store, const kforge::testing::PipelineSpec& p, kforge::RunOptions options = {},
                 int64_t series = 0, kforge::RunSummary* summary = nullptr) {
    const kforge::Plan compiled = plan(p);
    kforge::RunRecord run = kforge::describe_run(compiled, "test");
    run.series = series;
    const int64_t id = store.begin_run(run);
    kforge::CancelToken cancel;
    kforge::RunRecorder recorder(store, id, cancel);
    kforge::Executor executor(compiled);
    const kforge::RunSummary s = executor.run(recorder, options);
    EXPECT_EQ(recorder.failure(), "");
    store.end_run(id, kforge::RunStatus::Finished);
    if (summary) *summary = s;
    return id;
  }

  kforge::Registry registry;
  TempDir dir;
};

TEST_F(StoreTest, FreshDatabaseIsAtTheCurrentSchemaInWalMode) {
  { kforge::Store store((dir / "kforge.db").string()); }
  Db db(dir / "kforge.db");
  EXPECT_EQ(db.number("PRAGMA user_version"), kforge::schema_migrations().back().to);
  EXPECT_EQ(db.rows("PRAGMA journal_mode")[0][0], "wal");
  for (const char* table : {"runs", "tasks", "attempts", "jobs", "artifacts", "verdict_cache"}) {
    EXPECT_EQ(db.number(std::string("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '") + table + "'"), 1)
        << table;
  }
}

TEST_F(StoreTest, OpeningAnExistingStoreWithoutCreateNeedsTheFile) {
  EXPECT_THROW(kforge::Store((dir / "missing.db").string(), kforge::StoreMode::ReadOnly), kforge::StoreError);
}

TEST_F(StoreTest, VersionZeroDatabaseIsMigrated) {
  // What an older kforge left behind: a database with user_version 0 (nothing of ours).
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "old.db").c_str(), &raw), SQLITE_OK);
    sqlite3_exec(raw, "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('kept');", nullptr, nullptr, nullptr);
    sqlite3_close(raw);
  }
  kforge::Store store((dir / "old.db").string());
  EXPECT_FALSE(store.latest_run());
  Db db(dir / "old.db");
  EXPECT_EQ(db.number("PRAGMA user_version"), kforge::schema_migrations().back().to);
  EXPECT_EQ(db.rows("SELECT text FROM notes")[0][0], "kept");
  EXPECT_EQ(db.number("SELECT count(*) FROM runs"), 0);
}

TEST_F(StoreTest, MigrationsRunInOrderOnceAndRollBackOnFailure) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "m.db").c_str(), &raw), SQLITE_OK);
  std::vector<int> applied;
  std::vector<kforge::Migration> steps = {
      {1, [&](sqlite3* db) { applied.push_back(1); sqlite3_exec(db, "CREATE TABLE a (x)", nullptr, nullptr, nullptr); }},
      {2, [&](sqlite3* db) { applied.push_back(2); sqlite3_exec(db, "ALTER TABLE a ADD COLUMN y", nullptr, nullptr, nullptr); }},
  };
  kforge::migrate(raw, steps, "m.db");
  kforge::migrate(raw, steps, "m.db");  // nothing left to do
  EXPECT_EQ(applied, (std::vector<int>{1, 2}));

  // A failing step 3 leaves the database at version 2, without its half-done change.
  steps.push_back({3, [](sqlite3* db) {
                     sqlite3_exec(db, "CREATE TABLE b (x)", nullptr, nullptr, nullptr);
                     throw std::runtime_error("step 3 broke");
                   }});
  try {
    kforge::migrate(raw, steps, "m.db");
    ADD_FAILURE() << "a failing migration must throw";
  } catch (const kforge::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("step 3 broke"), std::string::npos) << e.what();
  }
  sqlite3_close(raw);
  Db db(dir / "m.db");
  EXPECT_EQ(db.number("PRAGMA user_version"), 2);
  EXPECT_EQ(db.number("SELECT count(*) FROM sqlite_master WHERE name = 'b'"), 0);
}

TEST_F(StoreTest, NewerDatabaseIsRefused) {
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "new.db").c_str(), &raw), SQLITE_OK);
    sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
    sqlite3_close(raw);
  }
  try {
    kforge::Store store((dir / "new.db").string());
    ADD_FAILURE() << "a database from a newer kforge must be refused";
  } catch (const kforge::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
}

// A store as kforge 0.1 left it: schema 1, one finished run of two jobs.
void write_schema_1_store(const fs::path& path) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  kforge::migrate(raw, {kforge::schema_migrations().front()}, path.string());
  const char* rows = R"sql(
INSERT INTO runs VALUES (1, 1, 'old', 'old-strategy', '/p/old.yaml', '{}', 'h', '0.1.0', 'host', '', 2,
                         '2026-01-01T00:00:00Z', '2026-01-01T00:01:00Z', 'finished');
INSERT INTO tasks VALUES ('t', 0, 't', 1, 'Activation', 'C1', 'kernelbench-torch', '/t.py', NULL);
INSERT INTO jobs VALUES (1, 't', 0, 0, 'pass', 0, 'run', '', '', 'm', 'cpp', 1, 2, 0.5, 1.5, NULL, 3, 0.3, 'x');
INSERT INTO jobs VALUES (1, 't', 1, 1, 'fail', 1, 'run', 'numerical_mismatch', 'off', 'm', 'cpp', 1, 2, 0.5, NULL, NULL, 5, 0.4, 'x');
INSERT INTO verdict_cache VALUES ('k', '{}', '[]', '[]', 'x');
)sql";
  ASSERT_EQ(sqlite3_exec(raw, rows, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
  sqlite3_close(raw);
}

// `kforge report` reads a store an older kforge wrote as it is: no migration, no write.
TEST_F(StoreTest, AReadOnlyStoreReadsAnOlderSchemaWithoutMigratingIt) {
  write_schema_1_store(dir / "kforge.db");
  const kforge::Report report = kforge::load_report(dir.path().string());
  EXPECT_EQ(report.metrics.label, "old-strategy");
  EXPECT_EQ(report.metrics.candidates.total, 2u);
  EXPECT_EQ(report.metrics.candidates.count, 1u);
  EXPECT_FALSE(report.metrics.compile_known) << "schema 1 has no job facts";
  ASSERT_TRUE(report.metrics.geomean_speedup);
  EXPECT_DOUBLE_EQ(*report.metrics.geomean_speedup, 1.5);
  Db db(dir / "kforge.db");
  EXPECT_EQ(db.number("PRAGMA user_version"), 1);

  kforge::Store store((dir / "kforge.db").string(), kforge::StoreMode::ReadOnly);
  try {
    store.begin_run(kforge::RunRecord{});
    ADD_FAILURE() << "a read-only store must refuse writes";
  } catch (const kforge::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
  }
}

TEST_F(StoreTest, OpeningAnOlderStoreForARunMigratesItKeepingItsRows) {
  write_schema_1_store(dir / "kforge.db");
  { kforge::Store store((dir / "kforge.db").string()); }
  Db db(dir / "kforge.db");
  EXPECT_EQ(db.number("PRAGMA user_version"), kforge::schema_migrations().back().to);
  EXPECT_EQ(db.number("SELECT count(*) FROM jobs"), 2);
  EXPECT_EQ(db.number("SELECT count(*) FROM jobs WHERE compiled_rounds IS NULL"), 2);
  EXPECT_EQ(db.number("SELECT count(*) FROM verdict_cache"), 0) << "entries of before measured verdicts are dropped";
}

TEST_F(StoreTest, RecordsEveryVerdictAndEveryFinishedJob) {
  kforge::Store store((dir / "kforge.db").string());
  const int64_t run = record(store, pipeline());
  Db db(dir / "kforge.db");
  EXPECT_EQ(db.number("SELECT count(*) FROM jobs"), 12);
  EXPECT_EQ(db.number("SELECT count(*) FROM tasks"), 6);
  // judge once per job; flaky twice (fail, then pass in round 1) for the 8 that pass judge.
  EXPECT_EQ(db.number("SELECT count(*) FROM attempts"), 12 + 8 * 2);
  EXPECT_EQ(db.number("SELECT sum(attempts) FROM jobs"), 12 + 8 * 2);
  const auto failed = db.rows("SELECT status, round, stage, error_class FROM jobs WHERE task_id = 'task-0001' AND sample = 1");
  EXPECT_EQ(failed.at(0), (std::vector<std::string>{"fail", "0", "judge", "demo_fail"}));
  const auto erred = db.rows("SELECT status, error_class FROM jobs WHERE task_id = 'task-0004' AND sample = 0");
  EXPECT_EQ(erred.at(0), (std::vector<std::string>{"error", "demo_error"}));
  const auto retried = db.rows(
      "SELECT step, round, stage, status, metrics FROM attempts WHERE task_id = 'task-0002' AND sample = 0 ORDER BY step");
  ASSERT_EQ(retried.size(), 3u);
  EXPECT_EQ(retried[1], (std::vector<std::string>{"1", "0", "flaky", "fail", "{\"visit\":1.0}"}));
  EXPECT_EQ(retried[2], (std::vector<std::string>{"2", "1", "flaky", "pass", "{\"visit\":2.0}"}));
  const auto runs = db.rows("SELECT id, series, pipeline, strategy, status, expected_jobs, kforge_version FROM runs");
  EXPECT_EQ(runs.at(0), (std::vector<std::string>{std::to_string(run), std::to_string(run), "store-test", "store-test",
                                                  "finished", "12", "test"}));
}

// Another process that truncates the database, or deletes its log, is found before the
// store writes again (and by a watcher between writes); a store that found its database
// changed leaves no log of its own beside it for the next opener to apply.
TEST_F(StoreTest, FilesChangedBehindItsBackAreNamedBeforeItWritesAgain) {
  const std::string path = (dir / "kforge.db").string();
  {
    kforge::Store store(path);
    const int64_t id = store.begin_run(kforge::describe_run(plan(pipeline()), "test"));
    EXPECT_NO_THROW(store.check_untouched());
    store.set_expected_jobs(id, 12);
    EXPECT_NO_THROW(store.check_untouched()) << "its own writes are no change";
    fs::resize_file(path, 0);  // by path: no descriptor of the database opened in this process
    try {
      store.check_untouched();
      ADD_FAILURE() << "a truncated database went unnoticed";
    } catch (const kforge::StoreError& e) {
      EXPECT_NE(std::string(e.what()).find("was truncated by another process (from "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("its write-ahead log is not applied to what is there now"),
                std::string::npos)
          << e.what();
    }
    EXPECT_THROW(store.set_expected_jobs(id, 13), kforge::StoreError);
  }
  EXPECT_EQ(fs::file_size(path), 0u) << "the log was applied to the truncated file";
  EXPECT_FALSE(fs::exists(path + "-wal"));

  const std::string other = (dir / "other.db").string();
  {
    kforge::Store store(other);
    const int64_t id = store.begin_run(kforge::describe_run(plan(pipeline()), "test"));
    fs::remove(other + "-wal");
    try {
      store.check_untouched();
      ADD_FAILURE() << "a deleted log went unnoticed";
    } catch (const kforge::StoreError& e) {
      EXPECT_NE(std::string(e.what()).find("its write-ahead log '" + other + "-wal' was deleted"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("`--resume` continues"), std::string::npos) << e.what();
    }
    store.end_run(id, kforge::RunStatus::Failed);  // written still, into the log it holds open
  }
  Db db(other);
  EXPECT_EQ(db.rows("PRAGMA integrity_check")[0][0], "ok");
  EXPECT_EQ(db.rows("SELECT status FROM runs")[0][0], "failed") << "the open log's commits went into the database";
}

TEST_F(StoreTest, ArtifactsAreStoredOncePerContent) {
  kforge::Store store((dir / "kforge.db").string());
  const int64_t run = store.begin_run(kforge::describe_run(plan(pipeline()), "test"));
  auto task = std::make_shared<kforge::Task>();
  task->strings[KF_KEY_TASK_ID] = "t";
  task->strings[KF_KEY_TASK_COMPLEXITY] = "C2";
  task->strings[KF_KEY_TASK_SOURCE] = "reference";
  kforge::Job job;
  job.task = task;
  job.strings[KF_KEY_CANDIDATE_CODE] = "def kernel(): pass";
  job.strings[KF_KEY_CANDIDATE_MODEL] = "m";
  job.strings[KF_KEY_CANDIDATE_DIFF] = "-a\n+b\n";
  job.numbers[KF_KEY_CANDIDATE_COST] = 0.25;
  kforge::Verdict v;
  v.stage = "run";
  v.kind = "npu.run";
  v.role = KF_ROLE_RUN;
  v.status = kforge::VerdictStatus::Pass;
  v.log_tail = "same log";
  v.metrics = {{"speedup", 1.5}};
  for (int i = 0; i < 3; ++i) {
    store.record_attempt(run, job, v);
    job.verdicts.push_back(v);
  }
  store.record_job(run, kforge::outcome_of(job));
  Db db(dir / "kforge.db");
  EXPECT_EQ(db.number("SELECT count(*) FROM attempts"), 3);
  EXPECT_EQ(db.rows("SELECT DISTINCT role FROM attempts")[0][0], "run");
  EXPECT_EQ(db.rows("SELECT kind, size FROM artifacts ORDER BY kind"),
            (std::vector<std::vector<std::string>>{{"code", "18"}, {"diff", "6"}, {"log", "8"}}));
  EXPECT_EQ(db.number("SELECT count(DISTINCT code_hash) FROM attempts"), 1);
  EXPECT_EQ(db.rows("SELECT content FROM artifacts JOIN attempts ON attempts.code_hash = artifacts.hash LIMIT 1")[0][0],
            "def kernel(): pass");
  EXPECT_EQ(db.rows("SELECT model, cost, speedup FROM jobs")[0], (std::vector<std::string>{"m", "0.25", "1.5"}));
  EXPECT_EQ(db.rows("SELECT complexity, source_hash IS NOT NULL FROM tasks")[0], (std::vector<std::string>{"C2", "1"}));
}

TEST_F(StoreTest, VerdictCacheRoundTripsAndSecondRunIsAnsweredFromIt) {
  kforge::Store store((dir / "kforge.db").string());
  kforge::CachedVerdict entry;
  entry.verdict.status = kforge::VerdictStatus::Fail;
  entry.verdict.route = "special";
  entry.verdict.error_class = "numerical_mismatch";
  entry.verdict.message = "max diff 0.5";
  entry.verdict.log_tail = "log";
  entry.verdict.metrics = {{"max_abs_diff", 0.5}, {"speedup", 2.0}};
  entry.strings = {{"eval.note", "x"}};
  entry.numbers = {{"eval.n", 3}};
  store.put_cached("k1", entry);
  const auto hit = store.find_cached("k1");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->verdict.status, kforge::VerdictStatus::Fail);
  EXPECT_EQ(hit->verdict.route, "special");
  EXPECT_EQ(hit->verdict.error_class, "numerical_mismatch");
  EXPECT_EQ(hit->verdict.message, "max diff 0.5");
  EXPECT_EQ(hit->verdict.log_tail, "log");
  EXPECT_EQ(hit->verdict.metrics, entry.verdict.metrics);
  EXPECT_EQ(hit->strings, entry.strings);
  EXPECT_EQ(hit->numbers, entry.numbers);
  EXPECT_FALSE(store.find_cached("k2"));

  // demo.judge is cacheable. The first run fills the cache (its second samples may hit it
  // too); a second run with the cache answers every judge call from it but those of
  // task-0004, whose error verdicts are not cached (errors are trouble of the moment).
  kforge::StoredVerdictCache cache(store);
  kforge::RunOptions options;
  options.cache = &cache;
  record(store, pipeline(), options);
  const int64_t second = record(store, pipeline(), options);
  Db db(dir / "kforge.db");
  EXPECT_EQ(db.number("SELECT count(*) FROM attempts WHERE run_id = " + std::to_string(second) +
                      " AND stage = 'judge' AND cached = 1"),
            10);
  EXPECT_EQ(db.number("SELECT count(*) FROM attempts WHERE stage = 'flaky' AND cached = 1"), 0);  // not cacheable
  // Results from the cache are the same results.
  EXPECT_EQ(db.rows("SELECT task_id, sample, status, round, error_class FROM jobs WHERE run_id = 1 ORDER BY job_index"),
            db.rows("SELECT task_id, sample, status, round, error_class FROM jobs WHERE run_id = " + std::to_string(second) +
                    " ORDER BY job_index"));
  const kforge::Metrics m = kforge::compute_metrics(store.load_dataset(second));
  EXPECT_EQ(m.cache_hits, 10u);

  // Without the cache (--no-cache) nothing is answered from it.
  const int64_t third = record(store, pipeline());
  EXPECT_EQ(db.number("SELECT count(*) FROM attempts WHERE run_id = " + std::to_string(third) + " AND cached = 1"), 0);
}

TEST_F(StoreTest, ResumeSkipsFinishedJobsOfTheSeries) {
  kforge::Store store((dir / "kforge.db").string());
  // A first run that only got through tasks 0-2 (count 3), then the full pipeline resumed.
  kforge::testing::PipelineSpec partial = pipeline();
  partial.source_config.values["count"] = kforge::testing::scalar(KF_PARAM_INT, "3");
  const int64_t first = record(store, partial);
  EXPECT_EQ(store.count_finished(first), 6u);
  EXPECT_TRUE(store.finished(first, "task-0002", 1));
  EXPECT_FALSE(store.finished(first, "task-0003", 0));
  kforge::RunOptions options;
  options.skip = [&](const kforge::Task& task, int sample) { return store.finished(first, task.id(), sample); };
  kforge::RunSummary summary;
  const int64_t second = record(store, pipeline(), options, first, &summary);
  EXPECT_EQ(summary.skipped, 6u);
  EXPECT_EQ(summary.jobs, 6u);
  EXPECT_EQ(store.count_finished(first), 12u);
  const auto runs = store.series_runs(first);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].id, second);
  EXPECT_EQ(store.latest_run()->id, second);
  // The series' dataset has every job once, in job order.
  const kforge::Dataset data = store.load_dataset(first);
  ASSERT_EQ(data.jobs.size(), 12u);
  for (size_t i = 0; i < data.jobs.size(); ++i) {
    EXPECT_EQ(data.jobs[i].task_id, "task-000" + std::to_string(i / 2));
    EXPECT_EQ(data.jobs[i].sample, static_cast<int>(i % 2));
  }
  // A fresh run (series 0) starts a new series: nothing of the old one is skipped.
  const int64_t fresh = record(store, pipeline());
  EXPECT_EQ(store.count_finished(fresh), 12u);
  EXPECT_EQ(store.latest_run()->series, fresh);
}

// Reports read a task's jobs together, where its first job comes in job order: also when
// a resumed series' source numbered the tasks differently, so that one task's jobs are not
// next to each other in job order (a task added before it in the source shifted it).
TEST_F(StoreTest, TasksAreReadWithAllTheirJobsWhereTheirFirstJobComes) {
  kforge::Store store((dir / "kforge.db").string());
  kforge::RunRecord record = kforge::describe_run(plan(pipeline()), "test");
  const int64_t first = store.begin_run(record);
  auto finished = [&](int64_t run, const std::string& task, int sample, uint64_t index, kforge::VerdictStatus status) {
    kforge::JobOutcome o;
    o.task_id = task;
    o.sample = sample;
    o.job_index = index;
    o.status = status;
    store.record_job(run, o);
  };
  finished(first, "a", 0, 0, kforge::VerdictStatus::Pass);
  finished(first, "b", 0, 2, kforge::VerdictStatus::Fail);
  store.end_run(first, kforge::RunStatus::Interrupted);
  record.series = first;
  const int64_t resumed = store.begin_run(record);
  finished(resumed, "b", 1, 1, kforge::VerdictStatus::Pass);  // b is task 0 now, a task 1
  finished(resumed, "a", 1, 3, kforge::VerdictStatus::Fail);
  finished(resumed, "c", 0, 4, kforge::VerdictStatus::Pass);
  store.end_run(resumed, kforge::RunStatus::Finished);

  // Job order: a/0 (0), b/1 (1), b/0 (2), a/1 (3), c/0 (4). Task order: a, b, c.
  std::vector<std::string> seen;
  store.visit_tasks(first, true, [&](kforge::TaskJobs& task) {
    std::string jobs;
    for (const auto& j : task.jobs) jobs += " " + std::to_string(j.sample) + "@" + std::to_string(j.job_index);
    seen.push_back(task.info.id + ":" + jobs);
    ASSERT_EQ(task.candidates.size(), task.jobs.size());
    EXPECT_FALSE(task.known);  // these jobs came with no task row
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"a: 0@0 1@3", "b: 1@1 0@2", "c: 0@4"}));
  const std::string only = "b";
  seen.clear();
  store.visit_tasks(first, false, [&](kforge::TaskJobs& task) { seen.push_back(task.info.id); }, &only);
  EXPECT_EQ(seen, std::vector<std::string>{"b"});

  // The metrics see one row per task: a and b solved, once each.
  const kforge::Report report = kforge::load_report(dir.path().string());
  EXPECT_EQ(report.metrics.tasks, 3u);
  EXPECT_EQ(report.metrics.solved.count, 3u);
  std::vector<std::string> rows;
  report.tasks(false, [&](const kforge::ReportTask& task) {
    rows.push_back(task.result.task_id + " " + kforge::format_share(task.result.candidates));
  });
  EXPECT_EQ(rows, (std::vector<std::string>{"a 1/2 (50.0%)", "b 1/2 (50.0%)", "c 1/1 (100.0%)"}));
}

TEST_F(StoreTest, AttemptsOfUnfinishedJobsDoNotCount) {
  kforge::Store store((dir / "kforge.db").string());
  const int64_t run = record(store, pipeline());
  // What a killed run leaves: a verdict of a job that never finished.
  auto task = std::make_shared<kforge::Task>();
  task->strings[KF_KEY_TASK_ID] = "task-0009";
  kforge::Job orphan;
  orphan.task = task;
  kforge::Verdict v;
  v.stage = "judge";
  v.kind = "npu.run";
  v.role = KF_ROLE_RUN;
  v.seconds = 100;
  store.record_attempt(run, orphan, v);
  const kforge::Dataset data = store.load_dataset(run);
  EXPECT_EQ(data.jobs.size(), 12u);
  const kforge::Metrics m = kforge::compute_metrics(data);
  EXPECT_EQ(m.attempts, 12u + 8u * 2u);
  EXPECT_EQ(m.eval_seconds, 0.0);
}

TEST_F(StoreTest, ConfigHashIgnoresConcurrencyButNotWhatChangesResults) {
  kforge::testing::PipelineSpec p = pipeline();
  const auto base = kforge::describe_run(plan(p), "test");
  p.max_in_flight = 3;
  p.stages[0].concurrency = 7;
  EXPECT_EQ(kforge::describe_run(plan(p), "test").config_hash, base.config_hash);
  p.k = 3;
  EXPECT_NE(kforge::describe_run(plan(p), "test").config_hash, base.config_hash);
  const auto config = nlohmann::json::parse(base.config);
  EXPECT_EQ(config["stages"][0]["with"]["fail"], nlohmann::json::array({"task-0001"}));
  EXPECT_EQ(config["stages"][1]["on"]["fail"]["max_rounds"], 3);
  EXPECT_EQ(config["tasks"]["with"]["count"], 6);
}

TEST_F(StoreTest, TheRunIsNamedByThePipelinesLabel) {
  kforge::testing::PipelineSpec p = pipeline();
  EXPECT_EQ(kforge::describe_run(plan(p), "test").label, "store-test");
  p.label = "smart-selection";
  EXPECT_EQ(kforge::describe_run(plan(p), "test").label, "smart-selection");
}

// Whatever runtime reads it, a *_VISIBLE_DEVICES variable names the devices the run saw.
TEST(RunRecord, TheVisibleDevicesAreEveryVisibleDevicesVariable) {
  const char* environment[] = {"PATH=/bin", "ZZ_VISIBLE_DEVICES=3", "CUDA_VISIBLE_DEVICES=0,1",
                               "VISIBLE_DEVICES_NOTE=x", "BROKEN_VISIBLE_DEVICES", nullptr};
  EXPECT_EQ(kforge::visible_devices(environment), "CUDA_VISIBLE_DEVICES=0,1; ZZ_VISIBLE_DEVICES=3");
  const char* none[] = {"HOME=/root", nullptr};
  EXPECT_EQ(kforge::visible_devices(none), "");
}

// ---- end to end: kill -9 in the middle of a run, resume, compare with a clean run.

// The report without what depends on timing: run records, seconds, cache hits (whether the
// second sample of a task finds the first one's verdict in the cache is a race).
nlohmann::json comparable_report(const fs::path& dir) {
  auto report = nlohmann::json::parse(kforge_test::slurp(dir / "report.json"));
  report.erase("runs");
  for (const char* key : {"eval_seconds", "gen_seconds", "cache_hits"}) report["summary"].erase(key);
  for (auto& task : report["tasks"]) task.erase("seconds");
  return report;
}

std::map<std::pair<std::string, int>, std::vector<std::string>> jobs_with_attempts(const Db& db) {
  std::map<std::pair<std::string, int>, std::vector<std::string>> jobs;
  for (const auto& row : db.rows(
           "SELECT jobs.task_id, jobs.sample, jobs.status, jobs.round, jobs.error_class, "
           "(SELECT count(*) FROM attempts a WHERE a.run_id = jobs.run_id AND a.task_id = jobs.task_id AND "
           "a.sample = jobs.sample) FROM jobs")) {
    jobs[{row[0], std::stoi(row[1])}] = {row[2], row[3], row[4], row[5]};
  }
  return jobs;
}

TEST(ResumeEndToEnd, KilledRunResumedEqualsUninterruptedRun) {
  TempDir dir;
  const std::string pipeline = std::string(KFORGE_TEST_DATA_DIR) + "/store/resume.yaml";
  const fs::path killed = dir / "killed";
  const fs::path clean = dir / "clean";
  const int total_jobs = 60;  // 30 tasks x k=2

  // Start, wait until some jobs are on disk, kill -9.
  fs::create_directories(killed);
  const pid_t pid = kforge_test::start_kforge({"run", pipeline, "--out", killed.string(), "--progress", "off"},
                                              (dir / "killed.out").string(), (dir / "killed.err").string());
  int64_t finished_before_kill = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(killed / "kforge.db")) {
      try {
        Db db(killed / "kforge.db");
        finished_before_kill = db.number("SELECT count(*) FROM jobs");
      } catch (const std::exception&) {
        finished_before_kill = 0;  // created but not yet migrated
      }
      if (finished_before_kill >= 10) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  EXPECT_EQ(kforge_test::wait_exit_code(pid), -1);
  ASSERT_GE(finished_before_kill, 10) << kforge_test::slurp(dir / "killed.err");

  std::map<std::pair<std::string, int>, std::vector<std::string>> before;
  {
    Db db(killed / "kforge.db");
    const int64_t on_disk = db.number("SELECT count(*) FROM jobs");
    ASSERT_LT(on_disk, total_jobs) << "the run ended before it was killed: make resume.yaml slower";
    EXPECT_EQ(db.rows("SELECT status FROM runs")[0][0], "running");  // never got to say otherwise
    before = jobs_with_attempts(db);
  }
  // A job the kill caught between its store commit and its results.jsonl line is taken out
  // of the store by --resume and runs again: only jobs with a line count as finished.
  {
    std::set<std::pair<std::string, int>> with_line;
    std::istringstream lines(kforge_test::slurp(killed / "results.jsonl"));
    for (std::string line; std::getline(lines, line);) {
      const auto job = nlohmann::json::parse(line, nullptr, false);
      if (!job.is_discarded()) with_line.emplace(job["task"].get<std::string>(), job["sample"].get<int>());
    }
    std::erase_if(before, [&](const auto& entry) { return with_line.count(entry.first) == 0; });
  }

  const auto resumed =
      kforge_test::run_kforge({"run", pipeline, "--out", killed.string(), "--resume", "--progress", "off"}, dir / "resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming run 1"), std::string::npos) << resumed.err;
  EXPECT_NE(resumed.out.find(std::to_string(before.size()) + " skipped"), std::string::npos) << resumed.out;

  const auto uninterrupted = kforge_test::run_kforge({"run", pipeline, "--out", clean.string(), "--progress", "off"}, dir / "clean-run");
  ASSERT_EQ(uninterrupted.exit_code, 0) << uninterrupted.err;

  Db after(killed / "kforge.db");
  Db reference(clean / "kforge.db");
  // Every job exactly once: no (task, sample) finished twice, none missing.
  EXPECT_EQ(after.number("SELECT count(*) FROM jobs"), total_jobs);
  EXPECT_EQ(after.number("SELECT count(*) FROM (SELECT DISTINCT task_id, sample FROM jobs)"), total_jobs);
  // Nothing finished before the kill was done again: no run-2 attempt for those jobs.
  EXPECT_EQ(after.number("SELECT count(*) FROM attempts a JOIN jobs j ON j.task_id = a.task_id AND j.sample = a.sample "
                         "AND j.run_id = 1 WHERE a.run_id = 2"),
            0);
  // Nothing finished was lost: the first run's rows are all still there, unchanged.
  const auto after_jobs = jobs_with_attempts(after);
  for (const auto& [key, row] : before) EXPECT_EQ(after_jobs.at(key), row) << key.first << " " << key.second;
  // Same jobs, same outcomes and the same number of stage verdicts per job as a clean run.
  EXPECT_EQ(after_jobs, jobs_with_attempts(reference));
  EXPECT_EQ(comparable_report(killed), comparable_report(clean));
  // Nobody held the directory's lock: the killed run was marked interrupted.
  EXPECT_EQ(after.rows("SELECT status FROM runs ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"interrupted"}, {"finished"}}));
  // results.jsonl holds every job once: the killed run's whole lines, then the resumed run's.
  const std::string results = kforge_test::slurp(killed / "results.jsonl");
  EXPECT_EQ(static_cast<size_t>(std::count(results.begin(), results.end(), '\n')), total_jobs);
  EXPECT_EQ(results.back(), '\n');
}

TEST(ResumeEndToEnd, ResumeWithAChangedPipelineIsRefused) {
  TempDir dir;
  const std::string pipeline = std::string(KFORGE_TEST_DATA_DIR) + "/store/resume.yaml";
  const auto first = kforge_test::run_kforge(
      {"run", pipeline, "--out", (dir / "out").string(), "--set", "tasks=4", "--set", "sleep=0", "--progress", "off"},
      dir / "first");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto changed = kforge_test::run_kforge({"run", pipeline, "--out", (dir / "out").string(), "--set", "tasks=5",
                                                "--set", "sleep=0", "--resume", "--progress", "off"},
                                               dir / "changed");
  EXPECT_EQ(changed.exit_code, 2) << changed.err;
  EXPECT_NE(changed.err.find("differs"), std::string::npos) << changed.err;
}

}  // namespace
