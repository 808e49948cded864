#include "run/session.hpp"

#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <set>
#include <utility>
#include <vector>

#include "engine/registry.hpp"
#include "run/agreement.hpp"
#include "run/fan_out_observer.hpp"
#include "run/out_dir_lock.hpp"
#include "run/results.hpp"
#include "run/recorder.hpp"
#include "store/store.hpp"
#include "store/verdict_cache.hpp"

namespace kforge {

namespace fs = std::filesystem;

struct RunSession::Impl {
  const Plan& plan;
  SessionOptions options;
  Executor executor;  // first: a pipeline whose stages cannot be created touches no directory
  CancelToken cancel;
  std::unique_ptr<OutDirLock> lock;
  std::unique_ptr<Store> store;
  RunRecord record;
  bool continues = false;  // resumes an earlier run of the series
  uint64_t done = 0;       // jobs the series finished before this run: the store says which

  Impl(const Plan& p, SessionOptions o) : plan(p), options(std::move(o)), executor(p) {
    // As a stage that cannot be created: a stage that cannot run here touches no directory.
    executor.preflight();
    // A filter that matches nothing would otherwise look like a run that went well.
    if (!executor.has_tasks()) {
      throw ConfigError({Diagnostic::at(plan.source.where,
                                        fmt::format("the task source '{}' gave no tasks, so nothing ran and "
                                                    "nothing was written: check its filter (with: here, or --set "
                                                    "tasks.PARAM=...)",
                                                    plan.source.kind->name))});
    }
    prepare_out_dir();
    lock = std::make_unique<OutDirLock>(options.out_dir);
    store = std::make_unique<Store>((fs::path(options.out_dir) / kStoreFileName).string());
    // With the lock held no other run is alive here: a `running` run was killed.
    if (const int abandoned = store->mark_abandoned_runs(); abandoned > 0) {
      spdlog::warn("{} held {} run{} left running by a kforge that was killed; marked interrupted", options.out_dir,
                   abandoned, abandoned == 1 ? "" : "s");
    }
    record = describe_run(plan, options.kforge_version);
    const std::optional<RunRecord> latest = store->latest_run();
    if (options.resume && !latest && results_saved()) {
      throw RunSetupError(fmt::format("--resume: {} holds no run to continue ({} has none, yet results.jsonl holds "
                                      "results: the store was emptied or replaced by another process); run without "
                                      "--resume to start over, or give the --out of the run to continue",
                                      options.out_dir, kStoreFileName));
    } else if (options.resume && !latest) {
      // A kforge killed after it made the store and before its run began (its first tens of
      // milliseconds) saved nothing: the run starts from the start.
      spdlog::warn("--resume: {} holds no run to continue ({} holds none and results.jsonl no results: the kforge "
                   "that made it stopped before its run began); starting the run from the start",
                   options.out_dir, kStoreFileName);
    } else if (options.resume) {
      if (latest->config_hash != record.config_hash) {
        throw RunSetupError(fmt::format(
            "--resume: the pipeline differs from that of run {} in {} (resolved configuration changed); resume "
            "with the same pipeline and --set values, or run without --resume to start over",
            latest->id, options.out_dir));
      }
      continues = true;
      record.series = latest->series;
      record.secret_seed = latest->secret_seed;
      // The store decides what is done; results.jsonl is made to agree with it. A job whose
      // line was lost (a kill or a full disk between the two writes) or is not the store's
      // (written by someone else) runs again.
      const ResultsCheck kept = reconcile_results(results_path(), *store, latest->series);
      if (kept.disagreeing > 0) {
        spdlog::warn("--resume: dropping the lines that disagree: {}", kept.describe());
      }
      const std::set<std::pair<std::string, int>> missing(kept.unmatched.begin(), kept.unmatched.end());
      if (!missing.empty()) {
        store->forget_jobs(latest->series, missing);
        spdlog::warn("--resume: {} job{} finished in the store had no line in results.jsonl that agrees with it; "
                     "running {} again",
                     missing.size(), missing.size() == 1 ? "" : "s", missing.size() == 1 ? "it" : "them");
      }
      done = store->count_finished(latest->series);
      spdlog::info("resuming run {} ({}): {} jobs already finished", latest->id, latest->status, done);
    } else if (latest && latest->status != to_string(RunStatus::Finished)) {
      spdlog::info("{} holds an unfinished run ({}, {}); starting a fresh run. Pass --resume to continue it instead",
                   options.out_dir, latest->id, latest->status);
    }
    // A series keeps one seed: a resumed run's inputs are those the interrupted one used.
    if (!record.secret_seed) record.secret_seed = draw_secret_seed();
  }

  std::string results_path() const { return (fs::path(options.out_dir) / "results.jsonl").string(); }

  // Whether results.jsonl holds anything: with it, a store without a run lost one.
  bool results_saved() const {
    std::error_code ec;
    const uintmax_t size = fs::file_size(results_path(), ec);
    return !ec && size > 0;
  }

  // The output directory, created when missing; with --resume it must hold a store.
  void prepare_out_dir() {
    std::error_code ec;
    const fs::file_status status = fs::status(options.out_dir, ec);
    if (fs::exists(status) && !fs::is_directory(status)) {
      throw RunSetupError(fmt::format("--out '{}' is not a directory: give a directory for the run's results (it is "
                                      "created when missing)",
                                      options.out_dir));
    }
    const std::string store_path = (fs::path(options.out_dir) / kStoreFileName).string();
    const bool store_exists = fs::exists(store_path, ec);
    if (options.resume && (!store_exists || (fs::file_size(store_path, ec) == 0 && results_saved()))) {
      throw RunSetupError(fmt::format("--resume: {} holds no run to continue ({} {}); run without --resume to "
                                      "start one, or give the --out of the run to continue",
                                      options.out_dir, kStoreFileName,
                                      store_exists ? "is empty, yet results.jsonl holds results" : "does not exist"));
    }
    fs::create_directories(options.out_dir, ec);
    if (ec) {
      throw RunSetupError(fmt::format("cannot create the output directory '{}': {}", options.out_dir, ec.message()));
    }
  }
};

namespace {

// Looks at the store's files and results.jsonl a few times a second while the run goes:
// another process that changes them (truncates, overwrites, replaces, deletes, appends)
// stops the run within a second, whether or not jobs are finishing and writing. Each
// write checks too; this covers the time between writes.
class FileWatch {
 public:
  FileWatch(Store& store, const ResultsWriter& results, RunRecorder& recorder)
      : store_(store), results_(results), recorder_(recorder), thread_([this] { watch(); }) {}
  ~FileWatch() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

 private:
  static constexpr std::chrono::milliseconds kInterval{250};

  void watch() {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, kInterval, [this] { return stopping_; })) {
      std::string changed;
      try {
        store_.check_untouched();
      } catch (const StoreError& e) {
        changed = e.what();
      }
      if (changed.empty()) changed = results_.untouched();
      if (!changed.empty()) {
        recorder_.stop(changed);
        return;
      }
    }
  }

  Store& store_;
  const ResultsWriter& results_;
  RunRecorder& recorder_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the rest is ready
};

// The run-end check. The jobs this run committed to the store, saved as it went and
// counted in its summary must be the same, status by status; and results.jsonl, read back
// whole, must hold exactly the series' finished jobs as the store has them (agreement.hpp):
// a line someone else wrote, changed or removed during the run is found here. After a
// write failure only the store is held to what the run saved: the jobs after the failure
// were not written, and the failure and the true numbers are reported instead.
std::string check_agreement(Store& store, const SessionResult& result, const std::string& results_path,
                            int64_t series) {
  std::vector<std::string> problems;
  try {
    std::map<std::string, uint64_t> stored = store.count_jobs(result.run_id);
    uint64_t total = 0;
    for (const auto& [status, count] : stored) total += count;
    const RunSummary& s = result.summary;
    const uint64_t passed = stored["pass"], failed = stored["fail"], errors = stored["error"];
    const bool counts_agree =
        total == result.saved_jobs &&
        (!result.write_failure.empty() || (passed == s.passed && failed == s.failed && errors == s.errors &&
                                           passed + failed + errors == total));
    if (!counts_agree) {
      problems.push_back(fmt::format(
          "this run's jobs disagree: {} in the store (kforge.db: {} passed, {} failed, {} errors), {} saved as the run "
          "went, {} finished ({} passed, {} failed, {} errors)",
          total, passed, failed, errors, result.saved_jobs, s.passed + s.failed + s.errors, s.passed, s.failed,
          s.errors));
    }
    if (result.write_failure.empty()) {
      const ResultsCheck check = check_results(results_path, store, series);
      if (!check.agrees()) problems.push_back(check.describe());
    }
  } catch (const std::exception& e) {
    problems.push_back(fmt::format("the store and results.jsonl cannot be read back to check this run's jobs: {}",
                                   e.what()));
  }
  return fmt::format("{}", fmt::join(problems, "\n"));
}

}  // namespace

RunSession::RunSession(const Plan& plan, SessionOptions options)
    : impl_(std::make_unique<Impl>(plan, std::move(options))) {}

RunSession::~RunSession() = default;

CancelToken& RunSession::cancel_token() { return impl_->cancel; }

uint64_t RunSession::already_done() const { return impl_->done; }

int64_t RunSession::series() const { return impl_->record.series; }

SessionResult RunSession::run(RunObserver* observer) {
  Impl& impl = *impl_;
  // A resumed run adds its jobs to the file the interrupted run left.
  ResultsWriter results(impl.results_path(),
                        impl.continues ? ResultsWriter::Mode::Append : ResultsWriter::Mode::Truncate);
  SessionResult result;
  result.run_id = impl.store->begin_run(impl.record);
  if (impl.record.series == 0) impl.record.series = result.run_id;
  // The store first, then the job's line: results.jsonl never holds a job the store does
  // not; a kill between the two writes leaves a job without a line, which --resume runs
  // again (reconcile_results).
  RunRecorder recorder(*impl.store, result.run_id, impl.cancel, &results);
  StoredVerdictCache cache(*impl.store);
  RunObserver none;
  FanOutObserver observers{&recorder, observer != nullptr ? observer : &none};

  RunOptions run_options;
  run_options.max_in_flight = impl.options.max_in_flight;
  if (impl.continues) {
    const int64_t series = impl.record.series;
    run_options.skip = [&impl, series](const Task& task, int sample) { return impl.store->finished(series, task.id(), sample); };
  }
  run_options.cache = impl.options.use_cache ? &cache : nullptr;
  run_options.replay_measurements = impl.options.replay_measurements;
  run_options.cancel = &impl.cancel;
  run_options.run_seed = impl.record.secret_seed;
  spdlog::info("running '{}' ({} stages, k={}) into {} (run {})", impl.plan.name, impl.plan.stages.size(), impl.plan.k,
               impl.options.out_dir, result.run_id);
  {
    const FileWatch watch(*impl.store, results, recorder);
    result.summary = impl.executor.run(observers, run_options);
  }

  result.write_failure = recorder.failure();
  result.saved_jobs = recorder.saved_jobs();
  result.results_lines = results.lines_written();
  result.disagreement = check_agreement(*impl.store, result, impl.results_path(), impl.record.series);
  const bool failed = !result.write_failure.empty() || !result.disagreement.empty() ||
                      !result.summary.source_error.empty();
  result.status = failed                     ? RunStatus::Failed
                  : result.summary.cancelled ? RunStatus::Interrupted
                                             : RunStatus::Finished;
  try {
    impl.store->end_run(result.run_id, result.status);
  } catch (const StoreError& e) {
    if (result.write_failure.empty()) result.write_failure = e.what();
  }
  return result;
}

}  // namespace kforge
