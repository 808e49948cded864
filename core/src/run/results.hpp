// results.jsonl: one JSON object per finished job, in job order, flushed as written so a
// crash loses nothing that finished.
#pragma once

#include "api.hpp"

#include <cstdio>
#include <string>

#include "engine/executor.hpp"

namespace kforge {

// The JSON line for one finished job (no trailing newline).
std::string result_line(const JobOutcome& outcome);

class KFORGE_API ResultsWriter : public RunObserver {
 public:
  enum class Mode { Truncate, Append };
  // Opens the file; throws std::runtime_error when it cannot. Append (for --resume) first
  // drops a last line left half-written by a killed run, so every line stays whole JSON.
  explicit ResultsWriter(const std::string& path, Mode mode = Mode::Truncate);
  ~ResultsWriter() override;
  ResultsWriter(const ResultsWriter&) = delete;
  ResultsWriter& operator=(const ResultsWriter&) = delete;

  void job_finished(const Job& job, const JobOutcome& outcome) override;

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace kforge
