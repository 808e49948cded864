// Hands every run event to several observers in turn (results file, store, progress).
#pragma once

#include <initializer_list>
#include <vector>

#include "engine/executor.hpp"

namespace kforge {

class FanOutObserver : public RunObserver {
 public:
  FanOutObserver(std::initializer_list<RunObserver*> observers) : observers_(observers) {}
  void run_started(uint64_t expected_jobs) override {
    for (RunObserver* o : observers_) o->run_started(expected_jobs);
  }
  void verdict(const Job& job, const Verdict& verdict) override {
    for (RunObserver* o : observers_) o->verdict(job, verdict);
  }
  void job_finished(const Job& job, const JobOutcome& outcome) override {
    for (RunObserver* o : observers_) o->job_finished(job, outcome);
  }

 private:
  std::vector<RunObserver*> observers_;
};

}  // namespace kforge
