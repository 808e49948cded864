// results.jsonl held to the store, job by job. The store (kforge.db) is the truth: every
// line must be whole JSON, name a job the store finished in the series, say what the store
// records of that job (its index, task index, fix round, final status, stage, error class
// and message, the candidate's model, language, device, tokens and cost, the environment,
// and every stage verdict with its metrics), and appear once; every job the store finished
// must have its line. Lines of earlier runs of a resumed series count as this series'.
//
// One pass over the file; the store is read once, keeping a digest per job (tens of
// thousands of jobs cost a few MB); a disagreeing line costs one more look-up of its job.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "store/store.hpp"

namespace kforge {

struct ResultsCheck {
  uint64_t lines = 0;           // lines read
  uint64_t disagreeing = 0;     // lines that are not the store's
  // Jobs the store finished that no line agreed with, in (task id, sample) order.
  std::vector<std::pair<std::string, int>> unmatched;
  // What disagrees, the first few (each naming the file and line, or the job and what the
  // store holds), for messages.
  std::vector<std::string> named;
  uint64_t unnamed = 0;  // disagreements not in `named`

  bool agrees() const { return disagreeing == 0 && unmatched.empty() && named.empty(); }
  // One message: the counts, then each named disagreement on its own line.
  std::string describe() const;
};

// The run-end check: reads results.jsonl at `path` (a missing file has no lines) and
// changes nothing. Throws StoreError when the store cannot be read.
ResultsCheck check_results(const std::string& path, Store& store, int64_t series);

// --resume: rewrites results.jsonl at `path` (atomically) keeping only the lines the check
// accepts, in their order, so the file holds each job the store finished at most once and
// as the store has it; a torn last line (a kill mid-write) is dropped too. The jobs left
// without a line are `unmatched`: the caller takes them out of the store and runs them again.
ResultsCheck reconcile_results(const std::string& path, Store& store, int64_t series);

}  // namespace kforge
