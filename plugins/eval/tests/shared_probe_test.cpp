#include "shared_probe.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace kforge::eval {
namespace {

using namespace std::chrono_literals;
using Probe = SharedProbe<std::string>;

double seconds_since(ProbeClock::time_point start) {
  return std::chrono::duration<double>(ProbeClock::now() - start).count();
}

// A probe that runs until `release` (or the process' exit), counting its runs.
Probe::Probe held_probe(std::atomic<int>& runs, std::atomic<bool>& release, bool settled) {
  return [&runs, &release, settled](const std::function<bool()>& stopping) {
    ++runs;
    while (!release && !stopping()) std::this_thread::sleep_for(5ms);
    return Probe::Found{"answer " + std::to_string(runs.load()), settled};
  };
}

TEST(SharedProbe, AnAskerGivesUpAtItsDeadlineWhileTheProbeRunsOnForTheNext) {
  Probe probes;
  std::atomic<int> runs{0};
  std::atomic<bool> release{false};
  const auto start = ProbeClock::now();
  EXPECT_EQ(probes.get("k", probe_deadline_after(0.2), held_probe(runs, release, true)), std::nullopt);
  const double waited = seconds_since(start);
  EXPECT_GE(waited, 0.19);
  EXPECT_LT(waited, 1.0);
  std::thread releaser([&] {
    std::this_thread::sleep_for(100ms);
    release = true;
  });
  // Joins the running probe rather than starting one.
  EXPECT_EQ(probes.get("k", probe_deadline_after(10), held_probe(runs, release, true)), "answer 1");
  releaser.join();
  EXPECT_EQ(probes.get("k", probe_deadline_after(0), held_probe(runs, release, true)), "answer 1");
  EXPECT_EQ(runs, 1);
}

TEST(SharedProbe, AnUnsettledAnswerGoesToItsWaitersAndIsAskedAgain) {
  Probe probes;
  std::atomic<int> runs{0};
  std::atomic<bool> release{true};
  EXPECT_EQ(probes.get("k", probe_deadline_after(10), held_probe(runs, release, false)), "answer 1");
  EXPECT_EQ(probes.get("k", probe_deadline_after(10), held_probe(runs, release, false)), "answer 2");
  EXPECT_EQ(probes.get("other", probe_deadline_after(10), held_probe(runs, release, true)), "answer 3");
  EXPECT_EQ(runs, 3);
}

TEST(SharedProbe, AProbesExceptionReachesItsWaitersAndIsNotKept) {
  Probe probes;
  int runs = 0;
  auto throwing = [&runs](const std::function<bool()>&) -> Probe::Found {
    ++runs;
    throw std::runtime_error("cannot start");
  };
  EXPECT_THROW(probes.get("k", probe_deadline_after(10), throwing), std::runtime_error);
  EXPECT_THROW(probes.get("k", probe_deadline_after(10), throwing), std::runtime_error);
  EXPECT_EQ(runs, 2);
}

TEST(SharedProbe, EndingTheProcessStopsAProbeThatStillRuns) {
  std::atomic<int> runs{0};
  std::atomic<bool> release{false};
  auto probes = std::make_unique<Probe>();
  EXPECT_EQ(probes->get("k", probe_deadline_after(0.05), held_probe(runs, release, true)), std::nullopt);
  const auto start = ProbeClock::now();
  probes.reset();
  EXPECT_LT(seconds_since(start), 1.0);
}

}  // namespace
}  // namespace kforge::eval
