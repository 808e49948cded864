#include "run/store/recorder.hpp"

#include <spdlog/spdlog.h>

namespace kforge {

void RunRecorder::run_started(uint64_t expected_jobs) {
  try {
    store_.set_expected_jobs(run_, expected_jobs);
  } catch (const std::exception& e) {
    fail(e);
  }
}

void RunRecorder::verdict(const Job& job, const Verdict& verdict) {
  try {
    store_.record_attempt(run_, job, verdict);
  } catch (const std::exception& e) {
    fail(e);
  }
}

void RunRecorder::job_finished(const Job&, const JobOutcome& outcome) {
  try {
    store_.record_job(run_, outcome);
  } catch (const std::exception& e) {
    fail(e);
  }
}

std::string RunRecorder::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void RunRecorder::fail(const std::exception& e) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return;
  failure_ = e.what();
  // Going on would compute results nobody can see: stop intake, let in-flight work end.
  spdlog::error("{}; stopping the run", failure_);
  cancel_.request();
}

}  // namespace kforge
