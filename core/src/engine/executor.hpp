// Runs a validated pipeline on a oneTBB flow graph.
//
//   source --(input_node)--> limiter --> stage 1 --> router --> stage 2 ... --> sink
//                                ^                     |  (bounded back edges)     |
//                                +------ decrement ----+---------------------------+
//
// Jobs (task x candidate) are made lazily by the source, so memory is O(max_in_flight),
// not O(tasks). A CPU stage is one multifunction_node (run + route); a stage whose kind
// waits (KF_STAGE_WAITS) is an async_node feeding a pool of its own threads, so waiting
// never holds a TBB worker, followed by a routing multifunction_node. The sink hands each
// job to the observers the moment it finishes.
#pragma once

#include "api.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>
#include <stdexcept>
#include <string>

#include "engine/cancel.hpp"
#include "engine/job.hpp"
#include "engine/outcome.hpp"
#include "engine/plan.hpp"

namespace kforge {

// Receives what happens during a run. verdict() is called from worker threads, possibly
// at the same time for different jobs; job_finished() is called from one thread at a
// time, as each job finishes (not in job order), with the job's outcome, built once for
// every observer.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // Before the first job: how many jobs the run expects (tasks x k), 0 when the source
  // cannot tell.
  virtual void run_started(uint64_t /*expected_jobs*/) {}
  virtual void verdict(const Job& /*job*/, const Verdict& /*verdict*/) {}
  virtual void job_finished(const Job& /*job*/, const JobOutcome& /*outcome*/) {}
};

struct RunSummary {
  uint64_t tasks = 0;
  uint64_t jobs = 0;       // finished jobs (written as results)
  uint64_t passed = 0;
  uint64_t failed = 0;
  uint64_t errors = 0;     // jobs whose last verdict was an error
  uint64_t skipped = 0;    // jobs the skip predicate said were already done
  uint64_t unfinished = 0; // jobs cut short by cancellation (not written)
  bool cancelled = false;
  std::string source_error;  // the task source failed; intake stopped there
  double seconds = 0;
};

// A verdict the cache can hand back, with the job attributes the stage had set.
struct CachedVerdict {
  Verdict verdict;
  std::vector<std::pair<std::string, std::string>> strings;
  std::vector<std::pair<std::string, double>> numbers;
};

// Verdicts of KF_STAGE_CACHEABLE stages by content key (see RunOptions::cache). Called from
// worker threads concurrently.
class VerdictCache {
 public:
  virtual ~VerdictCache() = default;
  virtual std::optional<CachedVerdict> find(const std::string& key) = 0;
  virtual void put(const std::string& key, const CachedVerdict& entry) = 0;
};

struct RunOptions {
  // Overrides the pipeline's max_in_flight when > 0.
  int max_in_flight = 0;
  // Returns true for (task id, sample) pairs that are already done (resume).
  std::function<bool(const Task&, int sample)> skip;
  // Consulted before each call of a KF_STAGE_CACHEABLE stage; nullptr: no cache. The key
  // is the SHA-256 of the stage kind, plugin version, stage parameters, every task field,
  // the candidate's code and language, and the stage's own cache_key material.
  VerdictCache* cache = nullptr;
  // Replay cached verdicts that include measurements (timings) too; by default a stage
  // that measured is called again, so every number a run reports was measured by it.
  bool replay_measurements = false;
  // The run's cancellation; nullptr: the run cannot be cancelled.
  const CancelToken* cancel = nullptr;
  // The run's secret seed, handed to stages (kf_host_api::job_run_seed).
  std::optional<uint64_t> run_seed;
};

class KFORGE_API Executor {
 public:
  // Creates the task source and every stage instance from the plan; throws ConfigError with
  // one diagnostic (at the stage's `uses:`) per instance that could not be created. This is
  // all `kforge validate` runs: creating never starts processes or touches the network.
  Executor(const Plan& plan);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // The run-start checks (kf_stage_kind::preflight): asks the task source and every stage
  // whether what they need from the run's environment is there (API keys, programs on
  // PATH); throws ConfigError with one diagnostic (at the kind's `uses:`) per one that is
  // not. `kforge run` calls it before it touches the output directory; validate never does.
  void preflight();

  // Asks the task source for its first task, which run() then starts with: false when the
  // source has none (a filter that matches nothing), so that `kforge run` can refuse the
  // run before it touches the output directory. A source that fails here is reported by
  // run(), as at any other task (true).
  bool has_tasks();

  // Runs to completion or until options.cancel is requested. Once per Executor. First asks
  // every stage that offers it to warm up (kf_stage_kind::warm_up: start its servers in the
  // background), so that generation and the stages' start-up overlap.
  RunSummary run(RunObserver& observer, const RunOptions& options = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge
