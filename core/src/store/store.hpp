// The run store: one SQLite database (kforge.db) per output directory, in WAL mode, with
// runs, tasks, attempts (one row per stage verdict), jobs (one row per finished job),
// artifacts by content hash, and the verdict cache. docs/reports.md describes the tables.
//
// Writes are serialised by one mutex and each is its own transaction, committed before
// the call returns: a verdict is on disk before its job moves on, so a killed runner loses
// only work in flight.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/executor.hpp"
#include "store/records.hpp"
#include "store/run_record.hpp"
#include "store/store_error.hpp"

struct sqlite3;

namespace kforge {

class StoreFiles;

inline constexpr const char* kStoreFileName = "kforge.db";

// How a Store opens its database.
enum class StoreMode {
  // Creates the database when missing and migrates it to the current schema: `kforge run`.
  ReadWrite,
  // The database must exist; it is neither written nor migrated (a store an older kforge
  // wrote is read as it is): `kforge report`, `kforge compare`.
  ReadOnly,
};

class Store {
 public:
  // Opens the database at `path`. Throws StoreError (a missing file in ReadOnly mode, a
  // schema newer than this kforge's, SQLite's own errors).
  explicit Store(const std::string& path, StoreMode mode = StoreMode::ReadWrite);
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
  // Marks runs still `running` as interrupted: called with the output directory's lock
  // held, when no run can be alive there (they were killed). Returns how many.
  int mark_abandoned_runs();
  std::vector<RunRecord> series_runs(int64_t series);

  // Throws StoreError saying what changed when the database or its log is no longer as
  // this Store's last write left it (another process truncated, overwrote, replaced or
  // deleted it); every write checks it first, and a run's watcher calls it between
  // writes. A Store that found such a change never applies its log to what is there.
  void check_untouched();

  // ---- what a run writes (thread-safe)
  void record_attempt(int64_t run, const Job& job, const Verdict& verdict);
  void record_job(int64_t run, const JobOutcome& outcome);

  // Whether the job (task id, sample) finished in the series: what --resume skips. One
  // indexed look-up, so a resumed run holds nothing per finished job.
  bool finished(int64_t series, const std::string& task_id, int sample);
  // How many jobs finished in the series.
  uint64_t count_finished(int64_t series);
  // Removes the job rows of `jobs` from the series, so --resume runs them again: jobs whose
  // results.jsonl line was lost (their verdict rows stay, as an unfinished job's do).
  void forget_jobs(int64_t series, const std::set<std::pair<std::string, int>>& jobs);
  // Job rows the run wrote, by final status ("pass", "fail", "error").
  std::map<std::string, uint64_t> count_jobs(int64_t run);

  // ---- the run-end agreement check (result_facts.cpp). Per finished job of a series, in
  // (task id, sample, run) order: its run and what its results.jsonl line says as far as
  // the store records it, as canonical JSON text shaped as the line (sorted keys, invalid
  // UTF-8 replaced as the line has it). Only the job `only` names, when given.
  using ResultFactsVisitor =
      std::function<void(const std::pair<std::string, int>& job, int64_t run, const std::string& facts)>;
  void visit_result_facts(int64_t series, const ResultFactsVisitor& visit,
                          const std::pair<std::string, int>* only = nullptr);

  // ---- verdict cache (thread-safe)
  std::optional<CachedVerdict> find_cached(const std::string& key);
  void put_cached(const std::string& key, const CachedVerdict& entry);

  // ---- reports, exports and `kforge show` (tasks.cpp): the series' finished jobs a task
  // at a time, in task order (that of each task's first job in job order), each task's
  // jobs in job order; with every verdict of each job when `verdicts`; only `task_id`'s
  // when given. Memory holds one task's jobs, whatever the size of the series: the store
  // sorts, spilling to a temporary file. The visitor may call artifact() and may move
  // from its argument.
  using TaskVisitor = std::function<void(TaskJobs& task)>;
  void visit_tasks(int64_t series, bool verdicts, const TaskVisitor& visit, const std::string* task_id = nullptr);
  // The content of the artifact (code, diff, log, environment) with this hash; nullopt when
  // the store has none.
  std::optional<std::string> artifact(const std::string& hash);
  // Whether any task of the store has this task.format (report sections choose their runs by it).
  bool has_task_format(const std::string& format);
  // Every task id the store knows, in no particular order (`kforge show`'s suggestions).
  void visit_task_ids(const std::function<void(const std::string& id)>& visit);
  // The finished jobs of a series held in memory, in the order visit_tasks gives them, and
  // every task the store knows (dataset.cpp): for small series and tests.
  Dataset load_dataset(int64_t series);
  // Work the infrastructure lost and a stage redid over a series: how many times
  // (KF_METRIC_INFRA_RETRIES summed), over how many verdicts.
  InfraRetries infra_retries(int64_t series);
  // The same with every verdict and the artifacts they name, and the tasks they belong to;
  // only `task_id`'s when given (candidates.cpp).
  CandidateRecords load_candidates(int64_t series, const std::string* task_id = nullptr);

 private:
  struct Statements;
  std::vector<RunRecord> read_series(int64_t series);  // with the mutex held
  void upsert_task(const Task& task);
  void put_artifact(const std::string& hash, const char* kind, const std::string& content);
  Statements& writes();  // throws in ReadOnly mode
  // Throws StoreError when the database or its log at path() is no longer as this Store
  // last left it (deleted, replaced, truncated, written by another process): writing on
  // would go where nobody reads, or mix with someone else's writes. With mutex_ held.
  void check_still_there();
  // Around each write, with mutex_ held: checks the files first (unless told not to),
  // records them as this write left them after.
  class OwnWrite {
   public:
    explicit OwnWrite(Store& store, bool check = true);
    ~OwnWrite();
    OwnWrite(const OwnWrite&) = delete;
    OwnWrite& operator=(const OwnWrite&) = delete;

   private:
    Store& store_;
  };

  std::string path_;
  sqlite3* db_ = nullptr;
  std::unique_ptr<StoreFiles> files_;  // ReadWrite mode only
  bool tampered_ = false;  // check_still_there() found the files changed by someone else
  int schema_version_ = 0;  // what the database holds: older than current only in ReadOnly mode
  // Recursive: a report's visitor reads artifacts while visit_tasks holds it.
  std::recursive_mutex mutex_;
  std::unique_ptr<Statements> statements_;  // ReadWrite mode only
  std::string last_task_;  // the task upserted last: the k jobs of a task come together
};

// The store of a run's output directory, opened read-only: what `kforge report`, `compare`
// and `show` read. Works in a directory this process cannot write (a read-only mount).
// Throws StoreError when `out_dir` holds no store, saying what to do.
std::unique_ptr<Store> open_store_read_only(const std::string& out_dir);

}  // namespace kforge
