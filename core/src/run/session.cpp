#include "run/session.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <set>
#include <utility>

#include "run/fan_out_observer.hpp"
#include "run/results.hpp"
#include "run/store/recorder.hpp"
#include "run/store/store.hpp"
#include "run/store/verdict_cache.hpp"

namespace kforge {

namespace fs = std::filesystem;

struct RunSession::Impl {
  const Plan& plan;
  SessionOptions options;
  Executor executor;  // first: a pipeline whose stages cannot be created touches no directory
  CancelToken cancel;
  std::unique_ptr<Store> store;
  RunRecord record;
  bool continues = false;  // resumes an earlier run of the series
  std::set<std::pair<std::string, int>> done;

  Impl(const Plan& p, SessionOptions o) : plan(p), options(std::move(o)), executor(p) {
    fs::create_directories(options.out_dir);
    store = std::make_unique<Store>((fs::path(options.out_dir) / kStoreFileName).string());
    record = describe_run(plan, options.kforge_version);
    const std::optional<RunRecord> latest = store->latest_run();
    if (options.resume && !latest) {
      spdlog::warn("--resume: {} holds no earlier run; starting a fresh one", options.out_dir);
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
      done = store->finished_jobs(latest->series);
      spdlog::info("resuming run {} ({}): {} jobs already finished", latest->id, latest->status, done.size());
    } else if (latest && latest->status != to_string(RunStatus::Finished)) {
      spdlog::info("{} holds an unfinished run ({}, {}); starting a fresh run. Pass --resume to continue it instead",
                   options.out_dir, latest->id, latest->status);
    }
    // A series keeps one seed: a resumed run's inputs are those the interrupted one used.
    if (!record.secret_seed) record.secret_seed = draw_secret_seed();
  }
};

RunSession::RunSession(const Plan& plan, SessionOptions options)
    : impl_(std::make_unique<Impl>(plan, std::move(options))) {}

RunSession::~RunSession() = default;

CancelToken& RunSession::cancel_token() { return impl_->cancel; }

uint64_t RunSession::already_done() const { return impl_->done.size(); }

int64_t RunSession::series() const { return impl_->record.series; }

SessionResult RunSession::run(RunObserver* observer) {
  Impl& impl = *impl_;
  // A resumed run adds its jobs to the file the interrupted run left.
  ResultsWriter results((fs::path(impl.options.out_dir) / "results.jsonl").string(),
                        impl.continues ? ResultsWriter::Mode::Append : ResultsWriter::Mode::Truncate);
  SessionResult result;
  result.run_id = impl.store->begin_run(impl.record);
  if (impl.record.series == 0) impl.record.series = result.run_id;
  RunRecorder recorder(*impl.store, result.run_id, impl.cancel);
  StoredVerdictCache cache(*impl.store);
  // The store first: a job it has committed is never run again, so a kill between the
  // two writes can cost a results.jsonl line but never a job done twice.
  RunObserver none;
  FanOutObserver observers{&recorder, &results, observer != nullptr ? observer : &none};

  RunOptions run_options;
  run_options.max_in_flight = impl.options.max_in_flight;
  if (!impl.done.empty()) {
    run_options.skip = [&impl](const Task& task, int sample) { return impl.done.count({task.id(), sample}) > 0; };
  }
  run_options.cache = impl.options.use_cache ? &cache : nullptr;
  run_options.replay_measurements = impl.options.replay_measurements;
  run_options.cancel = &impl.cancel;
  run_options.run_seed = impl.record.secret_seed;
  spdlog::info("running '{}' ({} stages, k={}) into {} (run {})", impl.plan.name, impl.plan.stages.size(), impl.plan.k,
               impl.options.out_dir, result.run_id);
  result.summary = impl.executor.run(observers, run_options);

  result.store_failure = recorder.failure();
  result.status = !result.store_failure.empty() || !result.summary.source_error.empty() ? RunStatus::Failed
                  : result.summary.cancelled                                             ? RunStatus::Interrupted
                                                                                         : RunStatus::Finished;
  impl.store->end_run(result.run_id, result.status);
  return result;
}

}  // namespace kforge
