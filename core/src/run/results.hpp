// results.jsonl: one JSON object per finished job, as it finishes. A line is written whole or
// not at all, and only after the store committed its job (RunRecorder calls append()), so
// the file never holds a job the store does not.
#pragma once

#include <cstdint>
#include <ctime>
#include <mutex>
#include <string>

#include "engine/executor.hpp"

namespace kforge {

// The JSON line for one finished job (no trailing newline).
std::string result_line(const JobOutcome& outcome);

class ResultsWriter {
 public:
  enum class Mode { Truncate, Append };
  // Opens the file; throws std::runtime_error when it cannot.
  explicit ResultsWriter(const std::string& path, Mode mode = Mode::Truncate);
  ~ResultsWriter();
  ResultsWriter(const ResultsWriter&) = delete;
  ResultsWriter& operator=(const ResultsWriter&) = delete;

  // Writes the job's line with one write() of the whole line. On any failure (a full disk,
  // a file size limit, an I/O error, the file changed by someone else: see untouched) the
  // file is cut back to its last whole line and false is returned, failure() saying why;
  // after a failure nothing more is written. Thread-safe with untouched().
  bool append(const JobOutcome& outcome);
  // "" while the file at the path is the one this writer opened, as its last write left it;
  // else what another process did to it (deleted, replaced, appended to, truncated,
  // edited in place) and what that means. A run's watcher asks between writes; every write
  // asks first.
  std::string untouched() const;
  std::string failure() const;
  uint64_t lines_written() const;  // by this writer

 private:
  std::string check_locked() const;
  void record_locked();

  std::string path_;
  int fd_ = -1;
  mutable std::mutex mutex_;
  uint64_t good_length_ = 0;  // bytes up to the end of the last whole line
  timespec modified_{};       // the file's modification time after this writer's last write
  uint64_t lines_ = 0;
  std::string failure_;
};

}  // namespace kforge
