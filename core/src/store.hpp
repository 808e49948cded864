// The run store: one SQLite database (kforge.db) per output directory, in WAL mode, with
// runs, tasks, attempts (one row per stage verdict), jobs (one row per finished job),
// artifacts by content hash, and the verdict cache. docs/reports.md describes the tables.
//
// Writes are serialised by one mutex and each is its own transaction, committed before
// the call returns: a verdict is on disk before its job moves on, so a killed runner loses
// only work in flight.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "executor.hpp"
#include "metrics.hpp"
#include "pipeline.hpp"

struct sqlite3;

namespace kforge {

inline constexpr const char* kStoreFileName = "kforge.db";

// SQLite failed; the message says which database and what to do.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One schema step: brings a database at version `to - 1` to version `to`.
struct Migration {
  int to = 0;
  std::function<void(sqlite3*)> apply;
};

// The steps from an empty database (version 0) to the current schema, in order.
const std::vector<Migration>& schema_migrations();

// Applies every step above the database's PRAGMA user_version, each in its own
// transaction together with the new version number. Throws StoreError when the database
// is newer than the last step or a step fails (that step is rolled back).
void migrate(sqlite3* db, const std::vector<Migration>& steps, const std::string& path);

// The resolved pipeline as JSON (what `runs.config` holds; its hash decides whether a run
// may be resumed with this pipeline).
std::string pipeline_config_json(const PipelineSpec& pipeline);

enum class RunStatus { Running, Finished, Interrupted, Failed };
const char* to_string(RunStatus status);

struct RunRecord {
  int64_t id = 0;
  int64_t series = 0;  // the fresh run this one resumes (its own id when fresh)
  std::string pipeline;
  std::string strategy;  // the pipeline's `strategy` variable, else its name
  std::string pipeline_file;
  std::string config;  // pipeline_config_json()
  std::string config_hash;
  std::string kforge_version;
  std::string host;
  std::string devices;
  uint64_t expected_jobs = 0;
  std::string started_at;  // ISO 8601, UTC
  std::string ended_at;
  std::string status;  // to_string(RunStatus)
};

// A RunRecord for `pipeline`, with the host name and the devices the environment names.
RunRecord describe_run(const PipelineSpec& pipeline, const std::string& kforge_version);

class Store {
 public:
  // Opens the database at `path`, creating it when `create` (else it must exist), and
  // migrates it to the current schema. Throws StoreError.
  explicit Store(const std::string& path, bool create = true);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }

  // ---- runs
  std::optional<RunRecord> latest_run();
  // Inserts the run (id assigned; series 0 means a fresh run) and returns its id.
  int64_t begin_run(RunRecord run);
  void set_expected_jobs(int64_t run, uint64_t jobs);
  void end_run(int64_t run, RunStatus status);
  std::vector<RunRecord> series_runs(int64_t series);

  // ---- what a run writes (thread-safe)
  void record_attempt(int64_t run, const Job& job, const Verdict& verdict);
  void record_job(int64_t run, const Job& job);

  // (task id, sample) of every job finished in the series: what --resume skips.
  std::set<std::pair<std::string, int>> finished_jobs(int64_t series);

  // ---- verdict cache (thread-safe)
  std::optional<CachedVerdict> find_cached(const std::string& key);
  void put_cached(const std::string& key, const CachedVerdict& entry);

  // ---- reports: the finished jobs of a series, in job order.
  Dataset load_dataset(int64_t series);

 private:
  struct Statements;
  std::vector<RunRecord> read_series(int64_t series);  // with the mutex held
  void upsert_task(const Task& task);
  void put_artifact(const std::string& hash, const char* kind, const std::string& content);

  std::string path_;
  sqlite3* db_ = nullptr;
  std::mutex mutex_;
  std::unique_ptr<Statements> statements_;
  std::string last_task_;  // the task upserted last: the k jobs of a task come together
};

// Records a run into a Store: each verdict and each finished job. A store failure never
// throws into the executor (verdict() runs on worker threads): it is logged, the run is
// cancelled, and failure() says what went wrong.
class RunRecorder : public RunObserver {
 public:
  RunRecorder(Store& store, int64_t run) : store_(store), run_(run) {}
  void run_started(uint64_t expected_jobs) override;
  void verdict(const Job& job, const Verdict& verdict) override;
  void job_finished(const Job& job) override;
  std::string failure() const;

 private:
  void fail(const std::exception& e);
  Store& store_;
  int64_t run_;
  mutable std::mutex mutex_;
  std::string failure_;
};

// The verdict cache on the store's database. A lookup that fails counts as a miss.
class StoredVerdictCache : public VerdictCache {
 public:
  explicit StoredVerdictCache(Store& store) : store_(store) {}
  std::optional<CachedVerdict> find(const std::string& key) override;
  void put(const std::string& key, const CachedVerdict& entry) override;

 private:
  Store& store_;
};

}  // namespace kforge
