// Runs a validated pipeline on a oneTBB flow graph.
//
//   source --(input_node)--> limiter --> stage 1 --> router --> stage 2 ... --> sink
//                                ^                     |  (bounded back edges)     |
//                                +------ decrement ----+---------------------------+
//
// Jobs (task x candidate) are made lazily by the source, so memory is O(max_in_flight),
// not O(tasks). A CPU stage is one multifunction_node (run + route); a stage whose kind
// waits (KF_STAGE_WAITS) is an async_node feeding a pool of its own threads, so waiting
// never holds a TBB worker, followed by a routing multifunction_node. The sink writes
// results in job order through a small reorder buffer.
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

#include "engine/job.hpp"
#include "engine/plan.hpp"
#include "engine/registry.hpp"

namespace kforge {

// Receives what happens during a run. verdict() is called from worker threads, possibly
// at the same time for different jobs; job_finished() is called from one thread at a
// time, in job order.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // Before the first job: how many jobs the run expects (tasks x k), 0 when the source
  // cannot tell.
  virtual void run_started(uint64_t /*expected_jobs*/) {}
  virtual void verdict(const Job& /*job*/, const Verdict& /*verdict*/) {}
  virtual void job_finished(const Job& /*job*/) {}
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

// A stage or source could not be created from its parameters.
class KFORGE_API RunSetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A verdict the cache can hand back, with the job attributes the stage had set.
struct CachedVerdict {
  Verdict verdict;
  std::vector<std::pair<std::string, std::string>> strings;
  std::vector<std::pair<std::string, double>> numbers;
};

// Verdicts of KF_STAGE_CACHEABLE stages by content key (see Executor docs). Called from
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
  // and the candidate's code and language.
  VerdictCache* cache = nullptr;
};

class KFORGE_API Executor {
 public:
  // Creates every stage instance; throws RunSetupError naming the stage on failure.
  Executor(const Registry& registry, const PipelineSpec& pipeline);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs to completion or cancellation (see request_cancel() in host.hpp).
  RunSummary run(RunObserver& observer, const RunOptions& options = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge
