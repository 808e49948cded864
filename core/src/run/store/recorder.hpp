// Records a run into a Store as it happens: each verdict and each finished job.
#pragma once

#include "api.hpp"

#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

#include "engine/executor.hpp"
#include "run/store/store.hpp"

namespace kforge {

// A store failure never throws into the executor (verdict() runs on worker threads): it is
// logged, the run is cancelled through `cancel`, and failure() says what went wrong.
class RunRecorder : public RunObserver {
 public:
  RunRecorder(Store& store, int64_t run, CancelToken& cancel) : store_(store), run_(run), cancel_(cancel) {}
  void run_started(uint64_t expected_jobs) override;
  void verdict(const Job& job, const Verdict& verdict) override;
  void job_finished(const Job& job, const JobOutcome& outcome) override;
  std::string failure() const;

 private:
  void fail(const std::exception& e);
  Store& store_;
  int64_t run_;
  CancelToken& cancel_;
  mutable std::mutex mutex_;
  std::string failure_;
};

}  // namespace kforge
