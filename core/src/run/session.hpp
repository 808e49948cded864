// One `kforge run` as a library call: the output directory, its store and results.jsonl,
// resuming a series, the verdict cache, the run's secret seed and cancellation token. The
// kforge command, the store and report tests and an embedding program all run pipelines
// through it.
#pragma once

#include "api.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "engine/cancel.hpp"
#include "engine/executor.hpp"
#include "engine/plan.hpp"
#include "store/run_record.hpp"

namespace kforge {

// The run cannot start as asked (--resume with a changed pipeline); nothing ran.
class KFORGE_API RunSetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SessionOptions {
  std::string out_dir;  // created when missing
  // Continue the latest run series in out_dir: skip the jobs it finished, reuse its secret
  // seed, append to its results.jsonl. Refused when the pipeline changed.
  bool resume = false;
  bool use_cache = true;              // false: --no-cache
  bool replay_measurements = false;   // --replay-measurements (RunOptions)
  int max_in_flight = 0;              // > 0 overrides the pipeline's
  std::string kforge_version;         // recorded with the run
};

struct SessionResult {
  RunSummary summary;
  RunStatus status = RunStatus::Finished;
  // Writing the store or results.jsonl failed (a full disk, a deleted store): the run
  // stopped taking jobs there, and its report cannot be trusted.
  std::string write_failure;
  // The run-end check: the jobs this run committed to the store and counted in `summary`
  // disagree, or results.jsonl, read back whole, is not the series' finished jobs as the
  // store has them (run/agreement.hpp); says what disagrees, where. Empty when they agree.
  std::string disagreement;
  uint64_t saved_jobs = 0;    // job rows this run committed to the store
  uint64_t results_lines = 0; // lines this run wrote to results.jsonl
  int64_t run_id = 0;
};

class KFORGE_API RunSession {
 public:
  // Creates every stage and runs their preflight checks (ConfigError at file:line:col when
  // one cannot be created or cannot run in this environment, or when the task source has
  // no task at all), then locks the
  // output directory for this session's life (RunSetupError naming the holder's pid when
  // another run holds it), opens its store, marks runs left `running` by a killed kforge
  // as interrupted, and settles what --resume continues (RunSetupError): with --resume,
  // results.jsonl is first made to hold exactly the jobs the store finished.
  RunSession(const Plan& plan, SessionOptions options);
  ~RunSession();
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;

  // This run's cancellation: a signal handler or a test requests it; the run then stops
  // taking tasks, lets running stage calls end, and leaves unfinished jobs for --resume.
  CancelToken& cancel_token();
  // Jobs the series finished before this run (what --resume skips).
  uint64_t already_done() const;
  int64_t series() const;

  // Runs once. Every finished job goes to results.jsonl, the store and `observer` (the
  // progress display), as each finishes.
  SessionResult run(RunObserver* observer = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge
