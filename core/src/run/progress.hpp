// Run progress on stderr: on a terminal a one-line bar redrawn in place; anywhere else
// (CI logs) a plain line every N seconds, so logs stay readable and never hold a bar.
#pragma once

#include "api.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "engine/executor.hpp"

namespace kforge {

enum class ProgressMode { Off, Bar, Lines };

// The bar on a terminal, lines elsewhere.
KFORGE_API ProgressMode progress_mode_for(std::FILE* stream);

struct ProgressCounts {
  uint64_t expected = 0;      // jobs of the whole run, 0 when unknown
  uint64_t already_done = 0;  // finished by an earlier run (resume): part of expected, not of the rate
  uint64_t done = 0;          // finished in this run
  uint64_t passed = 0;
  uint64_t failed = 0;
  uint64_t errors = 0;
  double elapsed = 0;  // seconds since the run started

  // Seconds left at the current rate; nullopt when it cannot be told yet.
  std::optional<double> eta() const;
};

// "[########------------]  412/1000  pass 37.2%  fail 256  err 3  12.3/s  ETA 0:47"
std::string progress_bar(const ProgressCounts& counts, int bar_width = 24);
// "progress: 412/1000 jobs (41.2%), 153 passed (37.1%), 256 failed, 3 errors, 12.3 jobs/s, elapsed 0:33, ETA 0:47"
std::string progress_line(const ProgressCounts& counts);
// "1:02:03", "0:47"
std::string format_clock(double seconds);

class KFORGE_API ProgressObserver : public RunObserver {
 public:
  // `interval`: seconds between lines (Lines mode); the bar redraws a few times a second.
  ProgressObserver(ProgressMode mode, std::FILE* out, double interval, uint64_t already_done = 0);
  ~ProgressObserver() override;
  ProgressObserver(const ProgressObserver&) = delete;
  ProgressObserver& operator=(const ProgressObserver&) = delete;

  void run_started(uint64_t expected_jobs) override;
  void job_finished(const Job& job, const JobOutcome& outcome) override;
  // Draws the last state (and ends the bar's line); idempotent.
  void finish();

  ProgressCounts counts() const;

 private:
  void tick_loop();
  void draw(bool last);

  ProgressMode mode_;
  std::FILE* out_;
  std::chrono::duration<double> interval_;
  uint64_t already_done_;
  std::atomic<uint64_t> expected_{0}, done_{0}, passed_{0}, failed_{0}, errors_{0};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool finished_ = false;
  bool running_ = false;  // run_started() was called: there is something to draw
  std::thread ticker_;
};

}  // namespace kforge
