// Candidates from files (before any LLM stage exists, and for re-evaluating saved code).
//
// The candidates of a task in a directory, in this order:
//   1. <task file name> (e.g. 019_softmax.py), else <task id>.py;
//   2. <stem>.1.py, <stem>.2.py, ... up to the first missing number;
//   3. <tag>__<task file name> (e.g. crash_segv__001_relu.py), sorted by tag.
// Sample n of the task is the n-th of that list.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kforge::kernelbench {

struct CandidateFile {
  std::string path;  // absolute
  std::string tag;   // the <tag> of a tagged file, else empty
};

// All candidate files of the task in the order above.
std::vector<CandidateFile> candidate_files(const std::string& dir, const std::string& task_path,
                                           const std::string& task_id);

// Sample `sample` of the task, or nullopt with `why` saying what was looked for.
std::optional<CandidateFile> candidate_for_sample(const std::string& dir, const std::string& task_path,
                                                  const std::string& task_id, int sample, std::string& why);

}  // namespace kforge::kernelbench
