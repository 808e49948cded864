// results.jsonl: one JSON object per finished job, in job order, flushed as written so a
// crash loses nothing that finished.
#pragma once

#include <cstdio>
#include <string>

#include "executor.hpp"

namespace kforge {

// The JSON line for one finished job (no trailing newline).
std::string result_line(const Job& job);

class ResultsWriter : public RunObserver {
 public:
  // Creates (or truncates) the file; throws std::runtime_error when it cannot.
  explicit ResultsWriter(const std::string& path);
  ~ResultsWriter() override;
  ResultsWriter(const ResultsWriter&) = delete;
  ResultsWriter& operator=(const ResultsWriter&) = delete;

  void job_finished(const Job& job) override;

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace kforge
