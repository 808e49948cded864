// results.jsonl: one JSON object per finished job, in job order. A line is written whole or
// not at all, and only after the store committed its job (RunRecorder calls append()), so
// the file never holds a job the store does not.
#pragma once

#include "api.hpp"

#include <cstdint>
#include <string>

#include "engine/executor.hpp"

namespace kforge {

// The JSON line for one finished job (no trailing newline).
std::string result_line(const JobOutcome& outcome);

class KFORGE_API ResultsWriter {
 public:
  enum class Mode { Truncate, Append };
  // Opens the file; throws std::runtime_error when it cannot.
  explicit ResultsWriter(const std::string& path, Mode mode = Mode::Truncate);
  ~ResultsWriter();
  ResultsWriter(const ResultsWriter&) = delete;
  ResultsWriter& operator=(const ResultsWriter&) = delete;

  // Writes the job's line with one write() of the whole line. On any failure (a full disk,
  // a file size limit, an I/O error) the file is cut back to its last whole line and
  // false is returned, failure() saying why; after a failure nothing more is written.
  bool append(const JobOutcome& outcome);
  std::string failure() const { return failure_; }
  uint64_t lines_written() const { return lines_; }  // by this writer

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t good_length_ = 0;  // bytes up to the end of the last whole line
  uint64_t lines_ = 0;
  std::string failure_;
};

}  // namespace kforge
