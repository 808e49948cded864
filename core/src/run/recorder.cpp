#include "run/recorder.hpp"

#include <spdlog/spdlog.h>

namespace kforge {

void RunRecorder::run_started(uint64_t expected_jobs) {
  try {
    store_.set_expected_jobs(run_, expected_jobs);
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

void RunRecorder::verdict(const Job& job, const Verdict& verdict) {
  if (failed()) return;
  try {
    store_.record_attempt(run_, job, verdict);
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

void RunRecorder::job_finished(const Job&, const JobOutcome& outcome) {
  // The executor's sink calls this for one job at a time, as each finishes.
  if (failed()) return;
  try {
    store_.record_job(run_, outcome);
  } catch (const std::exception& e) {
    fail(e.what());
    return;
  }
  {
    std::lock_guard lock(mutex_);
    ++saved_;
  }
  if (results_ != nullptr && !results_->append(outcome)) fail(results_->failure());
}

std::string RunRecorder::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

uint64_t RunRecorder::saved_jobs() const {
  std::lock_guard lock(mutex_);
  return saved_;
}

bool RunRecorder::failed() const {
  std::lock_guard lock(mutex_);
  return !failure_.empty();
}

void RunRecorder::fail(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return;
  failure_ = why;
  // Going on would compute results nobody can see: stop intake, let in-flight work end.
  spdlog::error("{}; stopping the run", failure_);
  cancel_.request();
}

}  // namespace kforge
