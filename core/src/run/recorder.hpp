// Records a run as it happens: each verdict into the Store, and each finished job into the
// Store and then results.jsonl.
#pragma once

#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

#include "engine/executor.hpp"
#include "run/results.hpp"
#include "store/store.hpp"

namespace kforge {

// A write failure never throws into the executor (verdict() runs on worker threads): it is
// logged, the run is cancelled through `cancel`, failure() says what went wrong, and
// nothing more is written, so the store and results.jsonl keep the same jobs.
class RunRecorder : public RunObserver {
 public:
  // `results` (may be null) gets a job's line once the store has committed the job.
  RunRecorder(Store& store, int64_t run, CancelToken& cancel, ResultsWriter* results = nullptr)
      : store_(store), run_(run), cancel_(cancel), results_(results) {}
  void run_started(uint64_t expected_jobs) override;
  void verdict(const Job& job, const Verdict& verdict) override;
  void job_finished(const Job& job, const JobOutcome& outcome) override;
  std::string failure() const;
  // Jobs this run committed to the store.
  uint64_t saved_jobs() const;
  // Stops the run as a failed write does: `why` (the store or results.jsonl changed by
  // another process) becomes failure(), nothing more is written. The first reason stays.
  void stop(const std::string& why) { fail(why); }

 private:
  bool failed() const;
  void fail(const std::string& why);
  Store& store_;
  int64_t run_;
  CancelToken& cancel_;
  ResultsWriter* results_;
  mutable std::mutex mutex_;
  std::string failure_;
  uint64_t saved_ = 0;
};

}  // namespace kforge
